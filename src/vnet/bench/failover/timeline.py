"""What the controller's own answers say about one failure: pure arithmetic, no lab.

The inputs are what GET /links and GET .../history answer: each link's operational state
with the moment the controller recorded it (`status.since`), each connection's history
with the moment each line was written (`at`, after the agents' steps of a move: the
connection runs on its new path from then). The bench and the controller share one clock
(the same machine), so a failure's wall-clock moment compares with both.

    learned = learned_at(links, {"h1-h3"}, failed_at)      # the controller knows
    outcome = outcomes(histories, failed_at)                # per connection: moved, degraded
    over_admitted_bps(links), reserved_bps(links)           # the ledger against capacity
"""

from __future__ import annotations

import itertools
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from vnet.model.controller_api import ConnectionEvent, LinkView

REROUTED, DEGRADED = "rerouted", "degraded"
# what a connection's history says when it changes path: after the failed element returns,
# any of these is a flap (the policy is never to move back on its own). `restored` is not:
# a degraded connection runs again where it always was, as documented.
PATH_CHANGES = frozenset({"rerouted", "moved", "modified"})


def utc(moment: datetime) -> datetime:
    """SQLite keeps no zone: the controller writes UTC, so a naive moment is UTC."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def ms_between(start: datetime, end: datetime) -> float:
    return (utc(end) - utc(start)).total_seconds() * 1000


@dataclass(frozen=True)
class Outcome:
    """One connection after a failure: when it was rerouted and when degraded (None:
    not, as far as its history says)."""

    moved_at: datetime | None = None
    degraded_at: datetime | None = None
    why: str = ""  # the first degraded line's reason

    @property
    def degraded(self) -> bool:
        """Degraded and not moved since."""
        if self.degraded_at is None:
            return False
        return self.moved_at is None or utc(self.moved_at) < utc(self.degraded_at)

    @property
    def handled_at(self) -> datetime | None:
        """When the controller first did something about it: moved it or said it cannot."""
        found = [t for t in (self.moved_at, self.degraded_at) if t is not None]
        return min(found, key=utc) if found else None


class NotLearned(ValueError):
    """The controller has not recorded the failure."""


def learned_at(links: Sequence[LinkView], failed: Collection[str], after: datetime) -> datetime:
    """The first moment the controller recorded one of `failed` as down, not before
    `after` (the failure). ValueError when it has not (yet)."""
    found = [
        utc(view.status.since)
        for view in links
        if view.name in failed
        and view.status.state == "down"
        and view.status.since is not None
        and utc(view.status.since) >= utc(after)
    ]
    if not found:
        raise NotLearned(f"the controller has not recorded {', '.join(sorted(failed))} down")
    return min(found)


def outcome(history: Sequence[ConnectionEvent], after: datetime) -> Outcome:
    """The first `rerouted` and the first `degraded` line written at or after `after`."""

    def first(kind: str) -> ConnectionEvent | None:
        found = [e for e in history if e.kind == kind and utc(e.at) >= utc(after)]
        return min(found, key=lambda e: utc(e.at)) if found else None

    moved, degraded = first(REROUTED), first(DEGRADED)
    return Outcome(
        moved_at=utc(moved.at) if moved else None,
        degraded_at=utc(degraded.at) if degraded else None,
        why=degraded.detail if degraded else "",
    )


def outcomes(
    histories: Mapping[str, Sequence[ConnectionEvent]], after: datetime
) -> dict[str, Outcome]:
    return {name: outcome(history, after) for name, history in histories.items()}


@dataclass(frozen=True)
class Figures:
    """One run's times: per moved connection, from the controller learning of the failure
    to its reroute (ms); from the failure to the last one moved or degraded (ms); how many
    ended degraded, and how many were degraded on the way (moved later) and why; which the
    controller did nothing about."""

    moves: list[float]
    handled_last: float | None
    degraded: int
    degraded_then_moved: int
    reasons: list[str]
    unhandled: list[str]


def figures(found: Mapping[str, Outcome], failed_at: datetime, learned: datetime) -> Figures:
    moves = [ms_between(learned, o.moved_at) for o in found.values() if o.moved_at is not None]
    handled = [o.handled_at for o in found.values() if o.handled_at is not None]
    outs = list(found.values())
    return Figures(
        moves=moves,
        handled_last=max(ms_between(failed_at, t) for t in handled) if handled else None,
        degraded=sum(o.degraded for o in found.values()),
        degraded_then_moved=sum(o.degraded_at is not None and not o.degraded for o in outs),
        reasons=sorted({o.why for o in found.values() if o.why}),
        unhandled=sorted(name for name, o in found.items() if o.handled_at is None),
    )


def flapped(histories: Mapping[str, Sequence[ConnectionEvent]], after: datetime) -> list[str]:
    """The connections whose path changed at or after `after` (the element's return)."""
    return sorted(
        name
        for name, history in histories.items()
        if any(e.kind in PATH_CHANGES and utc(e.at) >= utc(after) for e in history)
    )


def over_admitted_bps(links: Sequence[LinkView]) -> int:
    """The most any link direction holds beyond what connections may have on it."""
    return max(
        (max(0, d.reserved_bps - view.capacity_bps) for view in links for d in view.directions),
        default=0,
    )


def reserved_bps(links: Sequence[LinkView], names: Collection[str] | None = None) -> int:
    """What the ledger holds on `names` (None: every link), both directions summed."""
    return sum(
        d.reserved_bps
        for view in links
        if names is None or view.name in names
        for d in view.directions
    )


def crosses(path: Sequence[str], link_ends: Collection[tuple[str, str]]) -> bool:
    """Whether a path of hosts uses one of the links given by their ends (either way)."""
    hops = {frozenset(pair) for pair in itertools.pairwise(path)}
    return any(frozenset(ends) in hops for ends in link_ends)
