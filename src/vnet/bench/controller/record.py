"""The controller benchmark's metrics, and one run's answers put into them.

Per operation (create, modify, remove), database (the series) and simultaneous requests
(the x axis):

- `<op> time`: end-to-end milliseconds per request, every request of every round (so the
  table's p50 and p99 are per request);
- `<op> split`: the same time cut into the controller's parts (api, db, path, devices)
  and the client's rest (other), series `<database> <part>`;
- `<op> throughput`: requests answered per second, one sample per round (first sent to
  last answered);
- `<op> database share`: the database's part of the controller's time, one per round;
- `<op> latency growth`: the last third's median over the first third's, per round (only
  for runs long enough to have a steady state; see pace.py).

And per database: `violations` (over-admission and leaks, per round; must be 0) and
`failed requests` (answers other than success or a refusal for lack of capacity).
"""

from __future__ import annotations

from collections.abc import Sequence

from vnet.bench.controller.driver import REFUSED, Answer, span
from vnet.bench.controller.pace import GROWTH_LIMIT, Pace, pace
from vnet.bench.controller.plan import OPERATIONS
from vnet.bench.controller.timing import SPLIT
from vnet.bench.results import BenchResult

X_LABEL = "simultaneous requests"
VIOLATIONS, FAILED, REFUSALS = "violations", "failed requests", "refused requests"


def time_metric(op: str) -> str:
    return f"{op} time"


def split_metric(op: str) -> str:
    return f"{op} split"


def throughput_metric(op: str) -> str:
    return f"{op} throughput"


def share_metric(op: str) -> str:
    return f"{op} database share"


def growth_metric(op: str) -> str:
    return f"{op} latency growth"


def declare(result: BenchResult) -> None:
    for op in OPERATIONS:
        result.declare(
            time_metric(op),
            "ms",
            x_label=X_LABEL,
            description=f"End-to-end time of one {op} request (the client's clock), every "
            "request of every round.",
        )
        result.declare(
            split_metric(op),
            "ms",
            x_label=X_LABEL,
            plot="bar",
            description="The controller's Server-Timing parts (api, db, path, devices) and "
            "the client's rest (other: HTTP, waiting in line), per request.",
        )
        result.declare(
            throughput_metric(op),
            "requests/s",
            x_label=X_LABEL,
            description="Answered requests over the time from the first sent to the last "
            "answered, one sample per round.",
        )
        result.declare(
            share_metric(op),
            "%",
            x_label=X_LABEL,
            description="Database time over the controller's time (api + db + path + "
            "devices) in one round; paper 001 found 80-92 %.",
        )
        result.declare(
            growth_metric(op),
            "x",
            x_label=X_LABEL,
            description="Median latency of a round's last third over its first third (by "
            f"the time sent); above {GROWTH_LIMIT:g} the controller fell behind. Rounds whose "
            "requests all left at once (bursts) have no such figure.",
        )
    result.declare(VIOLATIONS, "count", x_label=X_LABEL, plot="bar")
    result.declare(FAILED, "count", x_label=X_LABEL, plot="bar")
    result.declare(REFUSALS, "count", x_label=X_LABEL, plot="bar")


def add_answers(
    result: BenchResult, database: str, op: str, concurrency: int, answers: Sequence[Answer]
) -> Pace | None:
    """One run's answers into the metrics; its pace (None when fewer than 3 were answered)."""
    ok = [a for a in answers if a.split is not None]
    x = concurrency
    refused = sum(1 for a in answers if a.status == REFUSED)
    result.record(REFUSALS, f"{database} {op}", refused, x=x)
    result.record(FAILED, f"{database} {op}", len(answers) - len(ok) - refused, x=x)
    if not ok:
        return None
    splits = [a.split for a in ok if a.split is not None]
    result.add(time_metric(op), database, [s.end_to_end for s in splits], x=x)
    for part in SPLIT:
        result.add(split_metric(op), f"{database} {part}", [s.part(part) for s in splits], x=x)
    result.record(throughput_metric(op), database, len(ok) / max(span(ok), 1e-9), x=x)
    server = sum(s.server for s in splits)
    if server > 0:
        result.record(share_metric(op), database, 100 * sum(s.db for s in splits) / server, x=x)
    if len(ok) < 3:
        return None
    judged = pace([(a.sent, a.split.end_to_end) for a in ok if a.split], concurrency)
    if judged.verdict != "burst":
        result.record(growth_metric(op), database, judged.growth, x=x)
    return judged


def add_violations(result: BenchResult, database: str, concurrency: int, count: int) -> None:
    result.record(VIOLATIONS, database, count, x=concurrency)
