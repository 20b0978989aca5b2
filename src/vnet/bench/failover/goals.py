"""The reroute variants' goals and headline, from a result's samples (no lab)."""

from __future__ import annotations

from vnet.bench.contract import Goal
from vnet.bench.failover.reroute import (
    DEGRADED,
    FLAPPED,
    HANDLED_LAST,
    HOST,
    LEAKED,
    LINK,
    MOVE_LAST,
    OVER,
    STALE,
)
from vnet.bench.results import BenchResult

MOVE_GOAL_MS = 500.0  # learned of a link's failure -> every connection on its new path
HOST_GOAL_MS = 2000.0  # a host down -> every connection through it moved or degraded


def _worst(result: BenchResult, metric: str, series: str) -> dict[int, float]:
    """The largest sample per number of connections (x)."""
    return {
        int(m.x): max(m.samples)
        for m in result.measurements_of(metric)
        if m.series == series and m.samples and m.x is not None
    }


def _within(result: BenchResult, metric: str, series: str, bound: float, what: str) -> list[Goal]:
    """One verdict per number of connections: `what` (naming `bound`) in the worst run."""
    worst = sorted(_worst(result, metric, series).items())
    return [
        Goal(f"{what}, at {n} connection(s) (worst run)", ms <= bound, f"{ms:.0f} ms")
        for n, ms in worst
    ]


def _zero(result: BenchResult, metric: str, what: str, unit: str) -> Goal | None:
    worst = [max(m.samples) for m in result.measurements_of(metric) if m.samples]
    if not worst:
        return None
    return Goal(f"zero {what} (every run)", max(worst) == 0, f"at most {max(worst):.0f} {unit}")


def reroute_goals(result: BenchResult) -> list[Goal]:
    out = _within(
        result, MOVE_LAST, LINK, MOVE_GOAL_MS,
        f"every connection on the failed link on its new path within {MOVE_GOAL_MS:.0f} ms "
        "of the controller learning of the failure",
    )  # fmt: skip
    out += _within(
        result, HANDLED_LAST, HOST, HOST_GOAL_MS,
        f"every connection through a host powered off moved or degraded within "
        f"{HOST_GOAL_MS:.0f} ms of `lab host down`",
    )  # fmt: skip
    for metric, what, unit in (
        (OVER, "over-admission", "bit/s"),
        (STALE, "reservation left on the failed element after the moves", "bit/s"),
        (LEAKED, "leaked reservation", "bit/s"),
        (FLAPPED, "connections moving back when the element returns", "connection(s)"),
    ):
        goal = _zero(result, metric, what, unit)
        if goal is not None:
            out.append(goal)
    return out


def reroute_headline(result: BenchResult) -> list[str]:
    """Per variant and number of connections: the median of the last move, and how many
    connections ended degraded at most."""
    parts = []
    for series, metric in ((LINK, MOVE_LAST), (HOST, HANDLED_LAST)):
        for m in result.measurements_of(metric):
            if m.series != series or not m.samples:
                continue
            degraded = result.get(DEGRADED, series, m.x)
            most = max(degraded.samples) if degraded is not None and degraded.samples else 0
            parts.append(f"{series}@{m.x} last {m.summary().p50:.0f} ms ({most:.0f} degraded)")
    return parts
