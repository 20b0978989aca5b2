"""One `vnet bench controller` run: per database a lab with its controller, then the rounds.

A round at concurrency c: the creates, the modifies, the path modifies (moves), then the
removes, each with c requests in flight, and before the removes the creates that need a
rearrangement (one at a time, in the rounds at the lowest c: moves.py); after each the
links are checked for over-admission, after the removes for leaks. Rounds are repeated
(--repeat) at every c.
"""

from __future__ import annotations

import os
import random
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from vnet.bench.contract import BenchError
from vnet.bench.controller import checks, moves, record
from vnet.bench.controller.driver import Access, Answer, drive
from vnet.bench.controller.harness import controller_lab
from vnet.bench.controller.pace import Pace
from vnet.bench.controller.plan import OPERATIONS, Plan
from vnet.bench.controller.schedule import Request, Round, make_round
from vnet.bench.progress import BenchOptions, BenchProgress
from vnet.bench.results import BenchResult
from vnet.client.errors import ConnectError, ControllerError
from vnet.model.controller_api import EndHostView

Paces = dict[tuple[str, str, int], list[Pace]]


def start_result(plan: Plan, bench: BenchOptions) -> BenchResult:
    parameters = {
        **asdict(plan),
        "databases": list(plan.databases),
        "concurrency": list(plan.concurrency),
        "removes": plan.creates,
        "quick": bench.quick,
        "load_average_at_start": list(os.getloadavg()),
    }
    result = BenchResult.start(
        "controller",
        parameters=parameters,
        description="Paper 001 Figs. 2-4 on this machine: create, modify and remove requests "
        "against `vnet controller` over its HTTP API, at 1, 10 and 100 simultaneous requests, "
        "on a lab of emulated hosts with their agents; time per request split by the "
        "controller's Server-Timing header; SQLite and PostgreSQL as series.",
    )
    record.declare(result)
    return result


def _kept(answers: Sequence[Answer], round_: Round) -> set[str]:
    """The names whose create succeeded: only these are modified and removed."""
    made = {a.name for a in answers if a.split is not None}
    return {c.body.name for c in round_.creates if c.body.name in made}


def _only(round_: Round, names: set[str]) -> Round:
    return Round(
        round_.creates,
        [m for m in round_.modifies if m.name in names],
        [r for r in round_.removes if r.name in names],
    )


def _check(access: Access, op: str, names: set[str]) -> list[checks.Violation]:
    with access.client() as client:
        links = client.links()
        if op != "remove":
            return checks.over_admission(links)
        return checks.leaks(links, client.connections(), names)


def _path_moves(access: Access, round_: Round, count: int) -> list[Request]:
    """The round's first `count` kept connections that have another path, each moved there."""
    with access.client() as client:
        live = {v.name: v for v in client.connections()}
        links = client.links()
    views = [live[c.body.name] for c in round_.creates if c.body.name in live]
    return list(moves.path_moves(views, links, count))


@dataclass(frozen=True)
class Setting:
    """What one round is run with, beyond its requests."""

    database: str
    concurrency: int
    tag: str
    moves: int
    rearranges: int  # 0 unless this is a round at the plan's lowest concurrency
    endhosts: Sequence[EndHostView]


def _answers(
    result: BenchResult, access: Access, at: Setting, op: str, round_: Round
) -> tuple[list[Answer], int]:
    """The op's answers and the concurrency (x) they were measured at."""
    if op == "move":
        return drive(access, _path_moves(access, round_, at.moves), at.concurrency), at.concurrency
    if op == "rearrange":
        return moves.rearrangements(access, at.tag, at.rearranges, at.endhosts, result.note), 1
    return drive(access, round_.of(op), at.concurrency), at.concurrency


def _round(result: BenchResult, access: Access, at: Setting, round_: Round, paces: Paces) -> None:
    found: list[checks.Violation] = []
    database, c = at.database, at.concurrency
    for op in OPERATIONS:
        answers, x = _answers(result, access, at, op, round_)
        if op == "create":
            names = _kept(answers, round_)
            round_ = _only(round_, names)
        if answers:  # a topology may have no move to make
            judged = record.add_answers(result, database, op, x, answers)
            if judged is not None:
                paces[(database, op, x)].append(judged)
        for failed in [a for a in answers if a.split is None and a.error][:3]:
            result.note(f"{database} {op} at {x}: HTTP {failed.status}: {failed.error}")
        found += _check(access, op, names)
    record.add_violations(result, database, c, len(found))
    for violation in found:
        result.note(f"VIOLATION {database} at {c}: {violation}")


def _measure(
    result: BenchResult, plan: Plan, database: str, progress: BenchProgress, paces: Paces
) -> None:
    rng = random.Random(plan.seed)
    with controller_lab(plan.topology, database) as access:
        with access.client() as client:
            hosts: list[EndHostView] = client.endhosts()
        result.parameters.setdefault("endhosts", len(hosts))
        for repeat in range(plan.repeat):
            for c in plan.concurrency:
                progress.update(f"{database}: round {repeat + 1}/{plan.repeat} at {c}")
                tag = f"{database[0]}{repeat}c{c}"
                round_ = make_round(
                    hosts, tag, plan.creates, plan.modifies, plan.bandwidth_bps,
                    plan.modified_bps, rng,
                )  # fmt: skip
                lowest = c == min(plan.concurrency)
                at = Setting(database, c, tag, plan.moves, plan.rearranges if lowest else 0, hosts)
                _round(result, access, at, round_, paces)
                progress.advance()


def _pace_notes(result: BenchResult, paces: Paces) -> None:
    """Say, per (database, operation, concurrency), whether the latency held or grew."""
    for (database, op, c), judged in paces.items():
        behind = [p for p in judged if p.behind]
        worst = max(judged, key=lambda p: p.growth)
        if behind:
            result.note(
                f"FELL BEHIND: {database} {op} at {c} in {len(behind)}/{len(judged)} round(s); "
                f"worst {worst.describe()}; its mean latency is no steady figure"
            )
        elif worst.verdict == "burst":
            result.note(f"{database} {op} at {c}: {worst.describe()}")


def run_controller_bench(plan: Plan, bench: BenchOptions) -> BenchResult:
    """Every database in turn; one that cannot run is a note, the others still run."""
    from vnet.bench.controller.goals import goals

    result = start_result(plan, bench)
    paces: Paces = defaultdict(list)
    total = len(plan.databases) * plan.repeat * len(plan.concurrency)
    with BenchProgress("controller", total=total, quiet=bench.quiet) as progress:
        for database in plan.databases:
            try:
                _measure(result, plan, database, progress, paces)
            except (
                BenchError,
                ConnectError,
                ControllerError,
                OSError,
                RuntimeError,
                ValueError,
            ) as err:
                result.note(f"{database} failed: {type(err).__name__}: {err}")
                progress.log(f"{database} failed: {err}")
    if not any(m.samples for m in result.measurements):
        raise BenchError("no database could be measured: " + "; ".join(result.notes))
    _pace_notes(result, paces)
    result.parameters["load_average_at_end"] = list(os.getloadavg())
    for goal in goals(result):
        result.note(f"goal {goal.goal}: {goal.detail}, {goal.verdict}")
    start = result.parameters["load_average_at_start"][0]
    result.note(
        f"1-minute load average {start:.1f} at the start on {os.cpu_count()} CPUs, shared "
        "with other work: figures from a busy machine are upper bounds"
    )
    return result
