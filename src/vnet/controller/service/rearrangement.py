"""Rearrangement: when no path fits a new connection, move existing ones make-before-break
if that lets it in (paper 001, Sec. 3), and say in the answer what was moved.

The create's transaction, finding no room, rolls back; the planner then chooses the moves
(`planner.rearrange`) in a read-only transaction over what is held (no lock is held while it
searches, and choosing reserves nothing). Each move
is then reserved as planned (generation g+1 as NEXT while g counts; under the row locks, so
a request that took the room meanwhile makes it Rejected) and realised like any modify; its
path stays the controller's choice. Then the new connection is admitted again, without
moving anything more: if another request took the room meanwhile, it is rejected as usual.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vnet.controller import planner
from vnet.controller.inventory import Inventory
from vnet.controller.service.database import Timings
from vnet.model.controller_api import Move

if TYPE_CHECKING:
    from vnet.controller.service.core import Service


async def make_moves(
    service: Service,
    inv: Inventory,
    moves: tuple[planner.Moved, ...],
    timings: Timings | None,
) -> list[Move]:
    """Each move made before it is broken, in the planner's order; the moves made."""
    made = []
    for move in moves:
        moving = await service.db.write(
            lambda s, m=move: service.moves.start_planned(s, inv, m),  # type: ignore[misc]
            timings,
        )
        await service.moves.realise(moving, move.held.tenant, timings)
        made.append(move.view())
    return made
