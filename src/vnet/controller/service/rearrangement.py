"""Rearrangement: when no path fits a new connection, move existing ones make-before-break
if that lets it in (paper 001, Sec. 3), and say in the answer what was moved.

The planner chooses the moves over the planning copy of the ledger (nothing is reserved by
choosing); each move is then a modify of that connection with a new path, reserved and
realised like any modify (its old path counts until its traffic has switched), and leaves
its path the controller's choice. Then the new connection is admitted as usual; if another
request took the room meanwhile, it is rejected as usual.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy.orm import Session

from vnet.controller import planner
from vnet.controller.db import ledger
from vnet.controller.errors import Rejected
from vnet.controller.inventory import Inventory
from vnet.controller.service import planning, store
from vnet.controller.service.database import Timings
from vnet.model.controller_api import ConnectionRequest, ModifyRequest, Move

if TYPE_CHECKING:
    from vnet.controller.service.core import Service


async def make_room(
    service: Service,
    inv: Inventory,
    tenant: str,
    request: ConnectionRequest,
    rejected: Rejected,
    timings: Timings | None,
) -> list[Move]:
    """Move what the planner says must move; the moves made (Rejected: no move helps)."""

    def choose(session: Session) -> list[planner.PlannedMove]:
        held = ledger.held_by_direction(session)
        live = [(conn, owner) for conn, owner in store.live_connections(session)]
        return planning.timed(  # type: ignore[return-value]
            session,
            lambda: planner.rearrange(  # type: ignore[arg-type,return-value]
                inv, held, live, tenant, request, service.policy, rejected
            ),
        )

    chosen = await service.db.read(choose, timings)
    moved = []
    for move in chosen:
        moving = await service.db.write(
            lambda s, m=move: service.moves.start(  # type: ignore[misc]
                s, inv, m.tenant, m.connection, ModifyRequest(path=list(m.new_path)), pin=False
            ),
            timings,
        )
        await service.moves.realise(moving, move.tenant, timings)
        moved.append(
            Move(
                connection=move.connection,
                tenant=move.tenant,
                old_path=list(move.old_path),
                new_path=list(move.new_path),
            )
        )
    return moved
