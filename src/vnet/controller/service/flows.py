"""Create and release: a connection's life as SQL transactions around one agent transaction.

Create: one DB transaction inserts the connection (state requested, a free number), plans
it, reserves per link direction under row locks and opens its journal entry (phase
reserved); then `Agents.transaction` puts the pieces on every host of the path (the journal
says COMMITTED before the confirms); then one DB transaction makes it established. An agent
that refuses leaves every host as it was (the transaction's promise); the service then
releases the reservation (once), retires the row and fails the journal entry, so nothing of
the request remains but its history.

Release: the pieces leave every host in one agent transaction; then the reservations are
released (once) and the connection is released.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from sqlalchemy.orm import Session

from vnet.controller import planner
from vnet.controller.admission.admit import Policy
from vnet.controller.agents.realise import AgentError, Agents, HostChange
from vnet.controller.db import journal, ledger
from vnet.controller.db.models import (
    Connection,
    ConnectionState,
    RequestPhase,
    ReservationRole,
)
from vnet.controller.db.numbers import NumbersExhausted, add_connection
from vnet.controller.errors import AgentRefused, Conflict, Gone, Rejected
from vnet.controller.held import held_connections
from vnet.controller.inventory import Inventory
from vnet.controller.service import planning, putback, steps, store
from vnet.controller.service.database import Database, Timings, add_time
from vnet.controller.service.liveness import Liveness
from vnet.model.controller_api import (
    IDEMPOTENCY_HEADER,
    ConnectionAnswer,
    ConnectionRequest,
    ConnectionView,
)


@dataclass(frozen=True)
class Admitted:
    """A connection reserved and journaled, ready for the agents."""

    connection_id: int
    request_id: str
    changes: tuple[HostChange, ...]


class TryMoves(Exception):
    """Nothing fits as things are: rearrangement may help (the caller asks for moves)."""

    def __init__(self, rejected: Rejected):
        super().__init__(rejected.reason)
        self.rejected = rejected


STAND_IN_ID, STAND_IN_NUMBER = 0, 1  # a new connection's identity while moves are searched


@dataclass(frozen=True)
class Ask:
    """A tenant's request for a new connection, over the inventory it is planned on."""

    inv: Inventory
    tenant: str
    request: ConnectionRequest
    key: str | None  # its idempotency key


@dataclass(frozen=True)
class Replay:
    """A retried request (same idempotency key): the first attempt's answer."""

    answer: ConnectionAnswer


class Flows:
    """The connection transactions; `Service` checks rights and calls these."""

    def __init__(self, db: Database, agents: Agents, policy: Policy):
        self.db = db
        self.liveness = Liveness(db.engine)  # names this controller's requests
        self.agents = agents
        self.policy = policy

    # -- create ----------------------------------------------------------------------------
    def admit(
        self,
        session: Session,
        inv: Inventory,
        tenant: str,
        request: ConnectionRequest,
        key: str | None,
        may_move: bool = True,
    ) -> Admitted | Replay:
        """Insert, plan and reserve in the caller's transaction. When nothing fits and
        `may_move`, TryMoves is raised (the transaction rolls back; the caller looks for
        moves, makes them, then admits again without moving)."""
        owner = store.tenant_row(session, tenant)
        if key is not None:
            earlier = store.by_idempotency_key(session, owner.id, key)
            if earlier is not None:
                answer = replay(session, earlier, tenant, request, key)
                if answer is not None:
                    return Replay(answer)
        store.require_free_name(session, owner.id, tenant, request.name)
        store.require_own_flow(session, owner.id, request)
        conn = new_connection(owner.id, request, key)
        try:  # a race on the name: IntegrityError, the write retries
            add_connection(session, conn)
        except NumbersExhausted as err:  # a limit of what is live, as a full link is
            raise Rejected(str(err), code="numbers-exhausted") from None
        try:
            plan = planning.reserve_planned(
                session,
                inv,
                conn,
                planning.plan_new(inv, tenant, request, conn, self.policy),
                generation=conn.generation,
                role=ReservationRole.CURRENT,
            )
        except Rejected as rejected:
            if may_move:  # the search for moves runs outside this (locking) transaction
                raise TryMoves(rejected) from None
            raise
        planning.record_plan(conn, plan)
        planning.remember_current(inv, tenant, conn, plan)
        entry = store.open_journal(
            session, self.liveness.request_id(), "create", conn, [c.host for c in plan.changes]
        )
        return Admitted(conn.id, entry.request_id, tuple(plan.changes))

    async def admit_now(
        self, ask: Ask, timings: Timings | None, may_move: bool = True
    ) -> Admitted | Replay:
        """`admit` in a transaction of its own, redone after a lost race on a number."""

        def work(session: Session) -> Admitted | Replay:
            return self.admit(session, ask.inv, ask.tenant, ask.request, ask.key, may_move)

        return await self.db.write(work, timings, retry=True)

    def choose_moves(
        self, session: Session, inv: Inventory, tenant: str, request: ConnectionRequest
    ) -> tuple[planner.Moved, ...]:
        """The planner's rearrangement over what is held now (read only, no lock): the moves
        that let `request` in (none: it fits now), or Rejected if no move helps. The new
        connection is planned under a stand-in identity: only the moves are used, and it is
        admitted again afterwards."""
        live = held_connections(session)
        found = planning.timed_any(
            session,
            lambda: planner.rearrange(
                inv, live, tenant, request, STAND_IN_ID, STAND_IN_NUMBER, self.policy
            ),
        )
        return found.moves

    async def realise_new(
        self, admitted: Admitted, tenant: str, timings: Timings | None
    ) -> ConnectionView:
        try:
            await self.run_agents(admitted.request_id, admitted.changes, timings)
        except AgentError as e:
            error = str(e)
            await self.db.write(lambda s: fail_new(s, admitted, error), timings, retry=True)
            raise AgentRefused(e.host, e.reason, e.tag) from None
        except BaseException as e:  # cancelled, or a bug: nothing half done may stay
            error = repr(e)
            await self.db.write(lambda s: fail_new(s, admitted, error), timings, retry=True)
            raise
        # the hosts hold it now: what the database says must follow (redone after a lock
        # error, not answered 503 over a connection the hosts carry)
        return await self.db.write(lambda s: establish(s, admitted, tenant), timings, retry=True)

    async def run_agents(
        self,
        request_id: str,
        changes: tuple[HostChange, ...] | list[HostChange],
        timings: Timings | None,
        journal_commit: bool = True,
    ) -> None:
        """One agent transaction, the journal at COMMITTED before the confirms (unless an
        earlier step of the request put it there: `journal_commit` False)."""

        journaling = 0.0  # counted as db, so taken out of devices: the parts add up

        async def committed() -> None:
            nonlocal journaling
            if journal_commit:
                began = time.perf_counter()
                await self.db.write_together(request_id, mark_committed, timings)
                journaling += time.perf_counter() - began

        started = time.perf_counter()
        hosts = [c.host for c in changes]
        try:
            await self.agents.transaction(request_id, list(changes), on_committed=committed)
        except AgentError as err:
            # hosts it left changed are put back once the caller's undo is written
            putback.record(hosts, err)
            raise
        else:
            putback.record(hosts, None)
        finally:
            add_time(timings, "devices", time.perf_counter() - started - journaling)

    # -- release ---------------------------------------------------------------------------
    def start_release(self, session: Session, inv: Inventory, tenant: str, name: str) -> Admitted:
        conn = store.live_connection(session, tenant, name, lock=True)
        store.require_changeable(conn, ConnectionState.DEGRADED)
        pieces = planning.current_pieces(inv, tenant, conn, self.policy)
        changes = tuple(steps.remove(pieces.pieces))
        conn.state = ConnectionState.MODIFYING
        entry = store.open_journal(
            session, self.liveness.request_id(), "release", conn, [c.host for c in changes]
        )
        return Admitted(conn.id, entry.request_id, changes)

    async def realise_release(
        self, started: Admitted, tenant: str, timings: Timings | None
    ) -> ConnectionView:
        try:
            await self.run_agents(started.request_id, started.changes, timings)
        except AgentError as e:
            error = str(e)
            await self.db.write(lambda s: undo_release(s, started, error), timings, retry=True)
            raise AgentRefused(e.host, e.reason, e.tag) from None
        return await self.db.write(
            lambda s: finish_release(s, started, tenant), timings, retry=True
        )


def new_connection(tenant_id: int, request: ConnectionRequest, key: str | None) -> Connection:
    return Connection(
        tenant_id=tenant_id,
        name=request.name,
        idempotency_key=key,
        a=request.a,
        b=request.b,
        protocol=request.protocol,
        src_port=request.src_port,
        dst_port=request.dst_port,
        bandwidth_bps=request.bandwidth,
        bidirectional=request.bidirectional,
        packet_size=request.packet_size,
        path=request.path,
        state=ConnectionState.REQUESTED,
        generation=1,
    )


def replay(
    session: Session, conn: Connection, tenant: str, request: ConnectionRequest, key: str
) -> ConnectionAnswer | None:
    """A retried create answers what the key's connection is now: established (the first
    attempt's answer again), 409 `request-in-flight` while a request is changing it, 410
    `connection-released` once released. A first attempt that failed made nothing: its key
    is let go and the retry is admitted afresh (None)."""
    if not store.same_request(conn, request):
        raise Conflict(
            f"idempotency key {key!r} was used for a different request (connection {conn.name!r})",
            field=IDEMPOTENCY_HEADER,
            code="idempotency-key-reused",
        )
    made = f"connection {conn.name!r}, made with idempotency key {key!r},"
    if conn.state == ConnectionState.ESTABLISHED:
        return ConnectionAnswer(connection=store.view(conn, tenant))
    if conn.state in store.GONE and not store.was_established(session, conn):
        conn.idempotency_key = None  # its history stays; the key names the new attempt
        session.flush()  # before the new row takes the key (unique per tenant)
        return None
    if conn.state in store.GONE:
        raise Gone(
            f"{made} was released; a new connection needs a new key",
            field=IDEMPOTENCY_HEADER,
            code="connection-released",
        )
    raise Conflict(
        f"{made} is {conn.state.value}: a request is changing it; ask again when it is done",
        field=IDEMPOTENCY_HEADER,
        code="request-in-flight",
    )


def mark_committed(session: Session, request_ids: list[str]) -> None:
    """The journal at COMMITTED (a modify's step "<id>.<n>" is journaled under <id>)."""
    journal.advance_all(session, {r.split(".")[0] for r in request_ids}, RequestPhase.COMMITTED)


def establish(session: Session, admitted: Admitted, tenant: str) -> ConnectionView:
    conn = session.get_one(Connection, admitted.connection_id)
    conn.state = ConnectionState.ESTABLISHED
    store.add_event(session, conn, "created", f"path {' -> '.join(h['host'] for h in conn.hops)}")
    store.finish_journal(session, admitted.request_id)
    return store.view(conn, tenant)


def retire(session: Session, conn: Connection, kind: str, detail: str) -> None:
    """A connection that holds nothing any more: reservations released (once), the row kept
    as history (released rows hold neither a name nor a number)."""
    ledger.release(session, conn)
    conn.state = ConnectionState.RELEASED
    store.add_event(session, conn, kind, detail)


def fail_new(session: Session, admitted: Admitted, error: str) -> None:
    conn = session.get_one(Connection, admitted.connection_id)
    retire(session, conn, "failed", error)
    store.finish_journal(session, admitted.request_id, error=error)


def undo_release(session: Session, started: Admitted, error: str) -> None:
    conn = session.get_one(Connection, started.connection_id)
    conn.state = ConnectionState.ESTABLISHED
    store.add_event(session, conn, "failed", f"release refused: {error}")
    store.finish_journal(session, started.request_id, error=error)


def finish_release(session: Session, started: Admitted, tenant: str) -> ConnectionView:
    conn = session.get_one(Connection, started.connection_id)
    retire(session, conn, "released", "")
    store.finish_journal(session, started.request_id)
    return store.view(conn, tenant)
