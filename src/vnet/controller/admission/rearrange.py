"""Rearrangement: when no path fits, move existing connections to make room.

Paper 001 moves connections make-before-break when that admits a new one. The
search is bounded: single moves first, then pairs, up to `max_moves`, at most
`max_tries` combinations and `budget` seconds. Candidates are the connections
holding capacity on an arc the new connection lacks, the largest first (moving
one large connection frees most). For each combination:

1. where would the new connection go if the candidates were gone (its target);
2. each candidate gets a new path avoiding the target's arcs, reserved while its
   old path still counts (make-before-break), then the old one is released;
3. the new connection is admitted on what is left.

Everything is tried on a copy of the ledger; `apply` replays the chosen plan on
the real one, step by step, each step checked (nothing over-admits in between).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass

from vnet.controller.admission.admit import Admitted, Move, Policy, Request, admit, route
from vnet.controller.admission.ledger import Ledger, Reservation
from vnet.controller.admission.paths import Rejection, Route


@dataclass(frozen=True)
class Limits:
    max_moves: int = 2
    max_tries: int = 200
    budget: float = 0.5  # seconds


def rearrange(
    ledger: Ledger,
    request: Request,
    policy: Policy,
    limits: Limits = Limits(),
    movable: Callable[[str], bool] = lambda _: True,
) -> Admitted | Rejection:
    """A plan admitting a new connection (maybe after moves), or why not; changes nothing.
    Only connections `movable(name)` says yes to are moved (a pinned path stays)."""
    trial = ledger.copy()
    first = admit(trial, request, policy)
    if not isinstance(first, Rejection) or first.reason != "no-capacity":
        return first
    if isinstance(route(Ledger(ledger.view), request, policy), Rejection):
        return _gave_up(first, 0, "it does not fit even with nothing reserved")
    candidates = [c for c in _candidates(ledger, request, policy) if movable(c)]
    deadline = time.monotonic() + limits.budget
    tries = 0
    for size in range(1, limits.max_moves + 1):
        for movers in itertools.combinations(candidates, size):
            if tries >= limits.max_tries or time.monotonic() > deadline:
                return _gave_up(first, tries, "search bound reached")
            tries += 1
            plan = _try(ledger, request, policy, movers)
            if plan is not None:
                return plan
    return _gave_up(first, tries, f"no move of up to {limits.max_moves} connections helps")


def _gave_up(first: Rejection, tries: int, why: str) -> Rejection:
    return Rejection(
        first.reason,
        f"{first.message}; rearrangement: {why} ({tries} combinations tried)",
        first.shortfalls,
        first.field,
    )


def _candidates(ledger: Ledger, request: Request, policy: Policy) -> list[str]:
    """Connections on arcs that cannot carry the request, largest first."""
    demand = request.demand
    fewest = policy.cost_of(demand)(1)  # the least it could cost on an arc
    tight = {a for a in ledger.view.arcs() if ledger.residual(a) < fewest}
    held = [r for r in ledger.reservations() if r.connection != request.connection]
    movable = [r for r in held if tight.intersection(r.arcs) and len(ledger.of(r.connection)) == 1]
    movable.sort(key=lambda r: (-r.cost, r.connection))
    return [r.connection for r in movable]


def _try(
    ledger: Ledger, request: Request, policy: Policy, movers: tuple[str, ...]
) -> Admitted | None:
    without = ledger.copy()
    for name in movers:
        without.release_all(name)
    target = route(without, request, policy, explain=False)
    if isinstance(target, Rejection):
        return None
    trial = ledger.copy()
    moves = []
    for name in movers:
        move = _move(trial, name, policy, target)
        if move is None:
            return None
        moves.append(move)
    done = admit(trial, request, policy)
    return Admitted(done.reservation, tuple(moves)) if isinstance(done, Admitted) else None


def _move(trial: Ledger, name: str, policy: Policy, target: Route) -> Move | None:
    old = trial.current(name)
    assert old is not None, "candidates hold a reservation"
    found = route(
        trial, Request(name, old.demand), policy, excluded=set(target.arcs), explain=False
    )
    if isinstance(found, Rejection) or found.arcs == old.arcs:
        return None
    new = Reservation(name, old.generation + 1, old.demand, found.path, found.arcs, found.cost)
    trial.reserve(new)  # make before ...
    trial.release(old.connection, old.generation)  # ... break
    return Move(name, old, new)


def apply(ledger: Ledger, plan: Admitted) -> None:
    """Replay a plan on the ledger: each move made before it is broken, then the new connection.

    Each step is checked by the ledger; a step that no longer fits (the ledger
    changed since the plan) raises `OverAdmission` after undoing the steps done.
    """
    done: list[tuple[str, Reservation]] = []
    try:
        for move in plan.moves:
            ledger.reserve(move.new)
            done.append(("reserved", move.new))
            ledger.release(move.old.connection, move.old.generation)
            done.append(("released", move.old))
        ledger.reserve(plan.reservation)
    except Exception:
        for what, r in reversed(done):  # new generations first, so the old ones fit again
            if what == "reserved":
                ledger.release(r.connection, r.generation)
        for what, r in done:
            if what == "released":
                ledger.reserve(r)
        raise
