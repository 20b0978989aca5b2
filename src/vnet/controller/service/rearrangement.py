"""Rearrangement: when no path fits a new connection, move existing ones make-before-break
if that lets it in (paper 001, Sec. 3), and say in the answer what was moved.

The create's transaction, finding no room, rolls back; the planner then chooses the moves
(`planner.rearrange`) in a read-only transaction over what is held (no lock is held while it
searches, and choosing reserves nothing). Each move
is then reserved as planned (generation g+1 as NEXT while g counts; under the row locks, so
a request that took the room meanwhile makes it Rejected) and realised like any modify; its
path stays the controller's choice. Then the new connection is admitted again, without
moving anything more: if another request took the room meanwhile, it is rejected as usual.

Requests that need moves at the same time choose the same movers. A move that lost such a
race (its mover is being moved, was moved or released, or the room it was to take is gone)
is not an error of the request's: the moves stop there, and the request chooses again over
what is held now (movers in the middle of a move are not chosen), a bounded number of times,
before its admission says yes or no-capacity.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from vnet.controller import planner
from vnet.controller.errors import Conflict, NotFound, Rejected
from vnet.controller.inventory import Inventory
from vnet.controller.service.database import Timings
from vnet.model.controller_api import Move

if TYPE_CHECKING:
    from vnet.controller.service.core import Service

CHOICES = 3  # times a request chooses its moves anew after losing a race for a mover


@dataclass(frozen=True)
class Made:
    moves: list[Move]  # made, in order
    complete: bool  # False: a move lost a race, the ones after it were not tried


async def make_moves(
    service: Service,
    inv: Inventory,
    moves: tuple[planner.Moved, ...],
    timings: Timings | None,
) -> Made:
    """Each move made before it is broken, in the planner's order, until one loses a race."""
    made: list[Move] = []
    for move in moves:
        try:
            moving = await service.db.write(
                lambda s, m=move: service.moves.start_planned(s, inv, m),  # type: ignore[misc]
                timings,
            )
        except (Conflict, NotFound, Rejected):  # another request got there first
            return Made(made, complete=False)
        await service.moves.realise(moving, move.held.tenant, timings)
        made.append(move.view())
    return Made(made, complete=True)
