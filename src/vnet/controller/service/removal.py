"""What the service reads and writes in SQL to delete inventory objects (lifecycle.py): the
live connections that hold a VR, an end host or a tenant, and the rows that go with each
object. Functions of a session, run inside `Database` transactions.
"""

from __future__ import annotations

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from vnet.controller.db.models import (
    ApiToken,
    Connection,
    ConnectionEvent,
    EndHost,
    RequestJournal,
    Reservation,
    VirtualNetwork,
    VirtualRouter,
)
from vnet.controller.inventory_origin import note_deleted
from vnet.controller.service import store


def connections_using(
    session: Session,
    *,
    tenant: str | None = None,
    router: str | None = None,
    endhost: str | None = None,
) -> list[str]:
    """The live connections (as "connection 'tenant/name'") of `tenant`, or running over VR
    `router`, or joining end host `endhost` (each given condition must hold)."""
    out = []
    for conn, owner in store.live_connections(session):
        if tenant is not None and owner != tenant:
            continue
        if router is not None and router not in {h["router"] for h in conn.hops}:
            continue
        if endhost is not None and endhost not in (conn.a, conn.b):
            continue
        out.append(f"connection '{owner}/{conn.name}'")
    return out


def delete_router(session: Session, name: str) -> None:
    session.execute(delete(VirtualRouter).where(VirtualRouter.name == name))
    note_deleted(session, "routers", name)


def delete_endhost(session: Session, name: str) -> None:
    session.execute(delete(EndHost).where(EndHost.name == name))
    note_deleted(session, "endhosts", name)


def delete_network(session: Session, name: str) -> None:
    row = session.scalar(select(VirtualNetwork).where(VirtualNetwork.name == name))
    if row is not None:
        session.delete(row)  # its per-link guarantees with it (cascade)
    note_deleted(session, "networks", name)


def delete_tenant(session: Session, name: str) -> None:
    """The tenant's row, its tokens, and its released connections' history (a tenant with
    live connections is refused before this runs)."""
    row = store.tenant_row(session, name)
    released = select(Connection.id).where(Connection.tenant_id == row.id)
    session.execute(delete(ApiToken).where(ApiToken.tenant_id == row.id))
    session.execute(
        delete(RequestJournal).where(
            (RequestJournal.tenant_id == row.id) | RequestJournal.connection_id.in_(released)
        )
    )
    session.execute(delete(ConnectionEvent).where(ConnectionEvent.connection_id.in_(released)))
    session.execute(delete(Reservation).where(Reservation.connection_id.in_(released)))
    session.execute(delete(Connection).where(Connection.tenant_id == row.id))
    session.delete(row)
    note_deleted(session, "tenants", name)
