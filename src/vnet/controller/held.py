"""What the live connections hold, as planning sees them: each one's request, path, state and
bit/s per link direction, read from the database in two queries (moves, rearrangement,
drains and failover plan on it)."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from vnet.controller.db.models import Connection, ConnectionState, Link, Reservation, Tenant
from vnet.controller.inventory import Arc
from vnet.model.controller_api import ConnectionRequest


@dataclass(frozen=True)
class Held:
    """A live connection as planning sees it: what was asked, where it runs, what it holds."""

    connection_id: int
    number: int
    tenant: str
    request: ConnectionRequest  # as asked; `path` is the explicit path or None
    state: ConnectionState
    path: tuple[str, ...]  # the physical hosts it runs over now
    generation: int
    demands: dict[Arc, int]  # bit/s per link direction, every unreleased generation

    @property
    def movable(self) -> bool:
        """The controller may move it: it chose the path, one way, and it is not moving."""
        return (
            self.request.path is None
            and not self.request.bidirectional
            and self.state == ConnectionState.ESTABLISHED
        )


def held_connections(session: Session, ids: Collection[int] | None = None) -> list[Held]:
    """Every live connection with its unreleased reservations (for planning moves); with
    `ids`, those of them alone (a move needs its own, not a read of every connection)."""
    query = (
        select(Connection, Tenant.name)
        .join(Tenant, Tenant.id == Connection.tenant_id)
        .where(Connection.state != ConnectionState.RELEASED)
        .order_by(Connection.id)
    )
    held = (
        select(Reservation.connection_id, Link.name, Reservation.forward, Reservation.bps)
        .join(Link, Link.id == Reservation.link_id)
        .where(Reservation.released.is_(None))
    )
    if ids is not None:
        query = query.where(Connection.id.in_(ids))
        held = held.where(Reservation.connection_id.in_(ids))
    rows = list(session.execute(query))
    demands: dict[int, dict[Arc, int]] = {}
    for conn_id, link, forward, bps in session.execute(held):
        arcs = demands.setdefault(conn_id, {})
        arcs[link, forward] = arcs.get((link, forward), 0) + bps
    return [_held(conn, tenant, demands.get(conn.id, {})) for conn, tenant in rows]


def _held(conn: Connection, tenant: str, demands: dict[Arc, int]) -> Held:
    request = ConnectionRequest(
        name=conn.name,
        a=conn.a,
        b=conn.b,
        protocol=conn.protocol,  # type: ignore[arg-type]
        src_port=conn.src_port,
        dst_port=conn.dst_port,
        bandwidth=conn.bandwidth_bps,
        bidirectional=conn.bidirectional,
        path=conn.path,
        packet_size=conn.packet_size,
    )
    path = tuple(hop["host"] for hop in conn.hops)
    return Held(conn.id, conn.number, tenant, request, conn.state, path, conn.generation, demands)


def held_connection(session: Session, connection_id: int) -> Held | None:
    """One live connection as planning sees it (None: it is released or unknown)."""
    return next(iter(held_connections(session, [connection_id])), None)
