"""`vnet bench controller --southbound simulated`: the controller at sizes no lab emulates.

Per database and per size (--hosts) a generated leaf-spine substrate (substrate.py) and the
real `vnet controller run` with its real database, its hosts simulated in its own process
(sim_controller.py); then --connections creates with --concurrency in flight, in steps of
STEP, each step measured against how many connections were live before it: end-to-end
time, the controller's path computation (its Server-Timing `path`), requests per second,
the database's size, the controller's resident memory. After the creates the links are
checked for over-admission; then every connection is removed, in the same steps, and the
links checked for leaked reservations (both from the controller's ledger as its API shows
it). The flatness of the cost is the last step's median create over the first's: above
pace.GROWTH_LIMIT the report says FELL BEHIND.
"""

from __future__ import annotations

import os
import random
import statistics
from collections.abc import Sequence

from vnet.bench.contract import BenchError
from vnet.bench.controller import checks
from vnet.bench.controller.driver import REFUSED, Access, Answer, drive, span
from vnet.bench.controller.pace import GROWTH_LIMIT
from vnet.bench.controller.plan import Plan
from vnet.bench.controller.schedule import Remove, make_round
from vnet.bench.controller.sim_controller import (
    Running,
    database_bytes,
    ledger_drift,
    resident_bytes,
    simulated_controller,
)
from vnet.bench.controller.substrate import leaf_spine
from vnet.bench.controller.timing import SPLIT
from vnet.bench.progress import BenchOptions, BenchProgress
from vnet.bench.results import BenchResult
from vnet.client.errors import ConnectError, ControllerError

STEP = 1000  # connections per measured step (fewer when the run is short)
X_LABEL = "live connections"
TIME, PATH, RATE = "sim create time", "sim path time", "sim create throughput"
REMOVE_TIME, REMOVE_RATE = "sim remove time", "sim remove throughput"
DB_SIZE, DB_GROWTH, MEMORY = "sim database size", "sim database growth", "sim controller memory"
GROWTH, VIOLATIONS, FAILED = "sim create cost growth", "sim violations", "sim failed requests"
SPLIT_METRIC = "sim create split"


def declare(result: BenchResult) -> None:
    for metric, unit, what in (
        (TIME, "ms", "End-to-end time of one create, per step of creates."),
        (SPLIT_METRIC, "ms", "A create's time cut into the controller's parts and the rest."),
        (PATH, "ms", "The controller's path computation (Server-Timing path) per create."),
        (RATE, "requests/s", "Creates answered per second in one step."),
        (REMOVE_TIME, "ms", "End-to-end time of one remove, per step of removes."),
        (REMOVE_RATE, "requests/s", "Removes answered per second in one step."),
        (DB_SIZE, "MB", "The database's size on disk after the step."),
        (DB_GROWTH, "bytes/connection", "Database growth over the run per live connection."),
        (MEMORY, "MB", "The controller process's resident memory after the step."),
        (GROWTH, "x", "Median create of the last step over the first (goal <= 1.2)."),
        (VIOLATIONS, "count", "Over-admitted link directions and leaked reservations."),
        (FAILED, "count", "Requests answered with neither success nor a refusal."),
    ):
        result.declare(metric, unit, x_label=X_LABEL, description=what)


def steps(total: int) -> list[tuple[int, int]]:
    """[start, end) of each measured step: STEP each, or a tenth of a shorter run."""
    size = min(STEP, max(1, total // 10))
    return [(k, min(k + size, total)) for k in range(0, total, size)]


def _ok(answers: Sequence[Answer]) -> list[Answer]:
    return [a for a in answers if a.split is not None]


def _record_step(
    result: BenchResult, series: str, live: int, answers: Sequence[Answer], remove: bool
) -> float | None:
    """One step's answers into the metrics; its median end-to-end ms (None: none answered)."""
    ok = _ok(answers)
    refused = sum(1 for a in answers if a.status == REFUSED)
    op = "remove" if remove else "create"
    result.record(FAILED, f"{series} {op}", len(answers) - len(ok) - refused, x=live)
    for failed in [a for a in answers if a.split is None and a.status != REFUSED][:2]:
        result.note(f"{series} at {live}: HTTP {failed.status}: {failed.error}")
    if not ok:
        return None
    times = [a.split.end_to_end for a in ok if a.split]
    result.add(REMOVE_TIME if remove else TIME, series, times, x=live)
    result.record(REMOVE_RATE if remove else RATE, series, len(ok) / max(span(ok), 1e-9), x=live)
    if not remove:
        splits = [a.split for a in ok if a.split]
        result.add(PATH, series, [s.path for s in splits], x=live)
        for part in SPLIT:
            result.add(SPLIT_METRIC, f"{series} {part}", [s.part(part) for s in splits], x=live)
    return statistics.median(times)


def _said(
    series: str, what: str, a: int, b: int, answers: Sequence[Answer], median: float | None
) -> str:
    ok = _ok(answers)
    rate = len(ok) / max(span(ok), 1e-9) if ok else 0.0
    p50 = "-" if median is None else f"{median:.1f} ms"
    return f"{series}: {what} {a}-{b}: p50 {p50}, {rate:.1f}/s, {len(answers) - len(ok)} not ok"


def _state(result: BenchResult, series: str, run: Running, live: int) -> int:
    size = database_bytes(run.database)
    result.record(DB_SIZE, series, size / 1e6, x=live)
    result.record(MEMORY, series, resident_bytes(run.pid) / 1e6, x=live)
    return size


def _check(result: BenchResult, series: str, run: Running, names: set[str] | None) -> None:
    """Over-admission (after the creates) or leaks (after the removes) as the API shows the
    links, and the ledger itself: each link direction's running total against its rows."""
    with run.access.client() as client:
        links = client.links()
        if names is None:
            found = checks.over_admission(links)
        else:
            found = checks.leaks(links, client.connections(), names)
    found += [
        checks.Violation(
            "ledger drift",
            f"link {link} ({'forward' if fwd else 'reverse'})",
            f"total {total} bit/s, rows {rows} bit/s",
        )
        for (link, fwd), (total, rows) in sorted(ledger_drift(run.database).items())
    ]
    result.record(VIOLATIONS, series, len(found), x="after removes" if names else "after creates")
    for violation in found[:10]:
        result.note(f"VIOLATION {series}: {violation}")


def _growth(result: BenchResult, series: str, medians: list[float | None], op: str) -> None:
    first, last = medians[0], medians[-1]
    if first is None or last is None or len(medians) < 2:
        return
    growth = last / first
    if op == "create":
        result.record(GROWTH, series, growth)
    said = f"{series} {op}: first step p50 {first:.1f} ms, last step {last:.1f} ms (x{growth:.2f})"
    if growth > GROWTH_LIMIT:
        result.note(f"FELL BEHIND: {said}: each request cost more as connections accumulated")
    else:
        result.note(said)


def measure_size(
    result: BenchResult, plan: Plan, database: str, hosts: int, progress: BenchProgress
) -> None:
    series = f"{database} {hosts} hosts"
    topo = leaf_spine(hosts)
    concurrency = min(plan.concurrency)
    with simulated_controller(topo, database, plan.rpc_latency_ms / 1000) as run:
        with run.access.client() as client:
            endhosts = client.endhosts()
        round_ = make_round(
            endhosts, f"s{hosts}", plan.connections, 0, plan.bandwidth_bps, plan.bandwidth_bps,
            random.Random(plan.seed),
        )  # fmt: skip
        start = _state(result, series, run, 0)
        medians, made = [], set()
        for a, b in steps(plan.connections):
            progress.update(f"{series}: creates {a}-{b} of {plan.connections}")
            answers = drive(run.access, round_.creates[a:b], concurrency)
            made |= {x.name for x in _ok(answers)}
            medians.append(_record_step(result, series, a, answers, remove=False))
            end = _state(result, series, run, b)
            progress.log(_said(series, "creates", a, b, answers, medians[-1]))
        result.record(DB_GROWTH, series, (end - start) / max(len(made), 1), x=len(made))
        _growth(result, series, medians, "create")
        _check(result, series, run, None)
        removes = [r for r in round_.removes if r.name in made]
        _remove_all(result, series, run.access, removes, concurrency, progress)
        _check(result, series, run, made)


def _remove_all(
    result: BenchResult,
    series: str,
    access: Access,
    removes: Sequence[Remove],
    concurrency: int,
    progress: BenchProgress,
) -> None:
    """Every connection made removed, in steps; x is what was live before each step."""
    medians = []
    for a, b in steps(len(removes)):
        progress.update(f"{series}: removes {a}-{b} of {len(removes)}")
        answers = drive(access, removes[a:b], concurrency)
        medians.append(_record_step(result, series, len(removes) - a, answers, remove=True))
        progress.log(_said(series, "removes", a, b, answers, medians[-1]))
    _growth(result, series, medians[::-1], "remove")


def start_result(plan: Plan, bench: BenchOptions) -> BenchResult:
    result = BenchResult.start(
        "controller",
        parameters={
            "southbound": "simulated",
            "databases": list(plan.databases),
            "hosts": list(plan.hosts),
            "connections": plan.connections,
            "concurrency": min(plan.concurrency),
            "rpc_latency_ms": plan.rpc_latency_ms,
            "bandwidth_bps": plan.bandwidth_bps,
            "seed": plan.seed,
            "step": steps(plan.connections)[0][1],
            "quick": bench.quick,
            "load_average_at_start": list(os.getloadavg()),
        },
        description="`vnet controller` and its database against simulated hosts (each an "
        "agent's datastore in the controller's memory, answering every RPC after a fixed "
        "latency) on a generated leaf-spine substrate: the cost of a create, the path "
        "computation, the database and the controller's memory as connections accumulate.",
    )
    declare(result)
    return result


def run_simulated(plan: Plan, bench: BenchOptions) -> BenchResult:
    """Every database at every size; one that cannot run is a note, the others still run."""
    result = start_result(plan, bench)
    total = len(plan.databases) * len(plan.hosts)
    with BenchProgress("controller", total=total, quiet=bench.quiet) as progress:
        for database in plan.databases:
            for hosts in plan.hosts:
                try:
                    measure_size(result, plan, database, hosts, progress)
                except (BenchError, ConnectError, ControllerError, OSError, RuntimeError) as err:
                    result.note(f"{database} {hosts} hosts failed: {type(err).__name__}: {err}")
                    progress.log(f"{database} {hosts} hosts failed: {err}")
                progress.advance()
    if not any(m.samples for m in result.measurements):
        raise BenchError("nothing could be measured: " + "; ".join(result.notes))
    result.parameters["load_average_at_end"] = list(os.getloadavg())
    load = result.parameters["load_average_at_start"]
    result.note(
        f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} at the start on "
        f"{os.cpu_count()} CPUs, shared with other work: figures from a busy machine are "
        "upper bounds; the simulated hosts' checks run in the controller's process"
    )
    return result
