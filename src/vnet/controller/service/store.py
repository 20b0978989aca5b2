"""What the service reads and writes in SQL about connections: functions of a session, run
inside `Database` transactions. The ledger's locking rules live in `db.ledger`; this module
only finds rows, turns them into API views and records history.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from sqlalchemy import func, insert, select, text
from sqlalchemy.orm import Session

from vnet.controller.db import journal
from vnet.controller.db.models import (
    LIVE,
    Connection,
    ConnectionEvent,
    ConnectionState,
    RequestJournal,
    RequestPhase,
    Tenant,
)
from vnet.controller.errors import Conflict, NotFound
from vnet.model import controller_api as api

Arc = tuple[str, bool]
GONE = (ConnectionState.RELEASED,)  # states in which a connection holds nothing


def tenant_row(session: Session, name: str) -> Tenant:
    row = session.scalar(select(Tenant).where(Tenant.name == name))
    if row is None:
        raise NotFound(f"unknown tenant {name!r}", field="tenant", code="unknown-tenant")
    return row


def tenant_names(session: Session) -> list[str]:
    return list(session.scalars(select(Tenant.name).order_by(Tenant.id)))


def live_connection(session: Session, tenant: str, name: str, *, lock: bool = False) -> Connection:
    """The tenant's connection called `name` that is not released; NotFound names which."""
    owner = tenant_row(session, tenant)
    query = select(Connection).where(
        Connection.tenant_id == owner.id,
        Connection.name == name,
        Connection.state.not_in(GONE),
    )
    if lock:
        query = query.with_for_update()
    row = session.scalar(query)
    if row is None:
        released = session.scalar(
            select(func.count()).where(Connection.tenant_id == owner.id, Connection.name == name)
        )
        why = "is released" if released else "does not exist"
        raise NotFound(
            f"tenant {tenant!r}: connection {name!r} {why}",
            field="name",
            code="unknown-connection",
        )
    return row


def latest_connection(session: Session, tenant: str, name: str) -> Connection:
    """The live connection called `name`, or else its most recent released one."""
    owner = tenant_row(session, tenant)
    query = (
        select(Connection)
        .where(Connection.tenant_id == owner.id, Connection.name == name)
        .order_by(Connection.state.in_(GONE), Connection.id.desc())
    )
    row = session.scalars(query).first()
    if row is None:
        raise NotFound(
            f"tenant {tenant!r}: connection {name!r} does not exist",
            field="name",
            code="unknown-connection",
        )
    return row


def require_free_name(session: Session, tenant_id: int, tenant: str, name: str) -> None:
    query = select(Connection.id).where(
        Connection.tenant_id == tenant_id,
        Connection.name == name,
        Connection.state.not_in(GONE),
        text(LIVE),  # in the partial index's own words, so SQLite searches it
    )
    if session.scalar(query) is not None:
        raise Conflict(f"tenant {tenant!r} already has a connection named {name!r}", field="name")


def require_own_flow(session: Session, tenant_id: int, request: api.ConnectionRequest) -> None:
    """A connection may not claim packets a live one already steers (the agents refuse two
    ingress rules for the same 5-tuple): a 409 naming that connection before any agent is
    asked. Flows overlap when they run between the same end hosts in the same direction and
    their protocol and ports are equal or left open on one side."""
    query = select(Connection).where(
        Connection.tenant_id == tenant_id,
        Connection.state.not_in(GONE),
        Connection.a.in_((request.a, request.b)),
        Connection.b.in_((request.a, request.b)),
        text(LIVE),  # in the live-flow index's own words, so SQLite searches it
    )
    mine = steered_flows(request.a, request.b, request.bidirectional, request.protocol,
                  request.src_port, request.dst_port)  # fmt: skip
    for conn in session.scalars(query):
        theirs = steered_flows(
            conn.a, conn.b, conn.bidirectional, conn.protocol, conn.src_port, conn.dst_port
        )
        if any(flows_overlap(m, t) for m in mine for t in theirs):
            ports = "".join(
                f" {word} {port}"
                for word, port in (("sport", conn.src_port), ("dport", conn.dst_port))
                if port
            )
            raise Conflict(
                f"connection {conn.name!r} already steers traffic from {conn.a} to {conn.b}"
                f" of {conn.protocol or 'any protocol'}{ports}",
                field="protocol",
                code="flow-in-use",
            )


_Flow = tuple[str, str, str | None, int | None, int | None]


def steered_flows(
    a: str, b: str, both: bool, protocol: str | None, sport: int | None, dport: int | None
) -> list[_Flow]:
    """The directed flows a connection steers (the reverse swaps the ports)."""
    forward = (a, b, protocol, sport, dport)
    return [forward, (b, a, protocol, dport, sport)] if both else [forward]


def flows_overlap(x: _Flow, y: _Flow) -> bool:
    if x[:2] != y[:2]:
        return False
    return all(p is None or q is None or p == q for p, q in zip(x[2:], y[2:], strict=True))


def require_changeable(conn: Connection, *also: ConnectionState) -> None:
    """A connection in the middle of another change is not changed again (409); `also`:
    other states the change accepts (a release takes a degraded connection too)."""
    if conn.state != ConnectionState.ESTABLISHED and conn.state not in also:
        raise Conflict(
            f"connection {conn.name!r} is {conn.state.value}: another request is changing it",
            field="name",
        )


def by_idempotency_key(session: Session, tenant_id: int, key: str) -> Connection | None:
    query = select(Connection).where(
        Connection.tenant_id == tenant_id, Connection.idempotency_key == key
    )
    return session.scalar(query)


def was_established(session: Session, conn: Connection) -> bool:
    """Whether the connection ever held its pieces (its history says `created`)."""
    query = select(ConnectionEvent.id).where(
        ConnectionEvent.connection_id == conn.id, ConnectionEvent.kind == "created"
    )
    return session.scalar(query.limit(1)) is not None


def same_request(conn: Connection, request: api.ConnectionRequest) -> bool:
    """Whether a retried request asks for what the connection was created for (its
    bandwidth and path only while it has not been modified since)."""
    fixed = (
        conn.name == request.name
        and conn.a == request.a
        and conn.b == request.b
        and conn.protocol == request.protocol
        and conn.src_port == request.src_port
        and conn.dst_port == request.dst_port
        and conn.bidirectional == request.bidirectional
        and conn.packet_size == request.packet_size
    )
    if conn.generation > 1:
        return fixed
    return fixed and conn.bandwidth_bps == request.bandwidth and conn.path == request.path


def add_event(session: Session, conn: Connection, kind: str, detail: str = "") -> None:
    session.add(ConnectionEvent(**_event_row(conn, kind, detail)))


def add_events(session: Session, lines: Sequence[tuple[Connection, str, str]]) -> None:
    """`add_event` of (connection, kind, detail) for many connections, in one statement:
    objects added to the session are inserted one statement each (it needs each one's id
    back), 100 of them for a reroute of 100."""
    if lines:
        session.execute(insert(ConnectionEvent), [_event_row(*line) for line in lines])


def _event_row(conn: Connection, kind: str, detail: str) -> dict[str, object]:
    return {"connection_id": conn.id, "kind": kind, "detail": detail[:1024]}  # the column's size


def events(session: Session, conn: Connection) -> list[api.ConnectionEvent]:
    query = (
        select(ConnectionEvent)
        .where(ConnectionEvent.connection_id == conn.id)
        .order_by(ConnectionEvent.at, ConnectionEvent.id)
    )
    return [
        api.ConnectionEvent(at=e.at, kind=e.kind, detail=e.detail) for e in session.scalars(query)
    ]


def view(conn: Connection, tenant: str) -> api.ConnectionView:
    return api.ConnectionView(
        tenant=tenant,
        name=conn.name,
        status=conn.state.value,
        a=conn.a,
        b=conn.b,
        protocol=conn.protocol,  # type: ignore[arg-type]
        src_port=conn.src_port,
        dst_port=conn.dst_port,
        bandwidth=conn.bandwidth_bps,
        bidirectional=conn.bidirectional,
        path=[h["host"] for h in conn.hops],
        hops=[api.Hop(**h) for h in conn.hops],
        segments=list(conn.segments),
        generation=conn.generation,
        created=conn.created,
    )


def connection_views(
    session: Session, tenant: str | None, include_released: bool
) -> list[api.ConnectionView]:
    query = select(Connection, Tenant.name).join(Tenant, Tenant.id == Connection.tenant_id)
    if tenant is not None:
        query = query.where(Tenant.name == tenant)
    if not include_released:
        query = query.where(Connection.state.not_in(GONE))
    query = query.order_by(Tenant.name, Connection.name, Connection.id)
    return [view(conn, owner) for conn, owner in session.execute(query)]


def live_connections(session: Session) -> list[tuple[Connection, str]]:
    query = (
        select(Connection, Tenant.name)
        .join(Tenant, Tenant.id == Connection.tenant_id)
        .where(Connection.state.not_in(GONE))
        .order_by(Connection.id)
    )
    return [(conn, owner) for conn, owner in session.execute(query)]


def open_journal(
    session: Session, request_id: str, operation: str, conn: Connection, hosts: Sequence[str]
) -> RequestJournal:
    entry = journal.open_request(
        session,
        operation,
        request_id=request_id,
        tenant_id=conn.tenant_id,
        connection_id=conn.id,
        hosts=sorted(set(hosts)),
        phase=RequestPhase.RESERVED,  # written with the rest of the transaction
    )
    return entry


def finish_journal(session: Session, request_id: str, error: str | None = None) -> None:
    """A request's last step: confirmed and done, or failed with the reason."""
    if error is not None:
        journal.advance(session, request_id, RequestPhase.FAILED, error=error[:1024])
        return
    finish_journals(session, [request_id])


def finish_journals(session: Session, request_ids: Collection[str]) -> None:
    """Requests whose agents confirmed: done, in one statement."""
    # confirmed and done in one step: nothing happens between the two that recovery could
    # find half done (the agents have confirmed when this runs)
    journal.advance_all(session, request_ids, RequestPhase.DONE)


def changes_after(
    session: Session, after: int | None, tenant: str | None
) -> tuple[int, list[api.ConnectionChange]]:
    """The history lines written since event id `after` (None: none, only the newest id), of
    one tenant's connections or all; (the newest id, the lines in order)."""
    newest = session.scalar(select(func.max(ConnectionEvent.id))) or 0
    if after is None or newest <= after:
        return newest, []
    query = (
        select(ConnectionEvent, Connection.name, Tenant.name)
        .join(Connection, Connection.id == ConnectionEvent.connection_id)
        .join(Tenant, Tenant.id == Connection.tenant_id)
        .where(ConnectionEvent.id > after, ConnectionEvent.id <= newest)
        .order_by(ConnectionEvent.id)
    )
    if tenant is not None:
        query = query.where(Tenant.name == tenant)
    lines = [
        api.ConnectionChange(tenant=owner, name=name, at=e.at, kind=e.kind, detail=e.detail)
        for e, name, owner in session.execute(query)
    ]
    return newest, lines
