"""Modify make-before-break: a new bandwidth and/or path without a gap in the traffic.

One DB transaction plans the new generation g+1 and reserves it as NEXT while g still
counts (both paths carry traffic during the switch); then the agents take the three steps of
`steps.make_before_break` (new transit/egress, switch the ingress, remove what only the old
path used), each one agent transaction; then one DB transaction switches the ledger (g
released once, g+1 current). An agent that refuses puts every host back on generation g (an
agent transaction of its own when a step had already been confirmed) and deletes the rows
of g+1 (it never carried traffic; a retry reserves g+1 again).

Rearrangement: when no path fits a new connection, existing ones are moved make-before-break
if that lets it in (paper 001, Sec. 3), and the answer says what was moved. The create's
transaction, finding no room, rolls back; the planner then chooses the moves
(`planner.rearrange`) in a read-only transaction over what is held (no lock is held while it
searches, and choosing reserves nothing). Each move is then reserved as planned (generation
g+1 as NEXT while g counts; under the row locks, so a request that took the room meanwhile
makes it Rejected) and realised like any modify; its path stays the controller's choice.
Then the new connection is admitted again, without moving anything more: if another request
took the room meanwhile, it is rejected as usual.

Requests that need moves at the same time choose the same movers. A move that lost such a
race (its mover is being moved, was moved or released, or the room it was to take is gone)
is not an error of the request's: the moves stop there, and the request chooses again over
what is held now (movers in the middle of a move are not chosen), a bounded number of times,
before its admission says yes or no-capacity.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from vnet.controller import planner
from vnet.controller.agents.realise import AgentError, HostChange
from vnet.controller.db import ledger
from vnet.controller.db.models import Connection, ConnectionState, ReservationRole
from vnet.controller.errors import AgentRefused, BadRequest, Conflict, NotFound, Rejected
from vnet.controller.held import held_connection
from vnet.controller.inventory import Inventory, usable_bps
from vnet.controller.service import planning, steps, store
from vnet.controller.service.database import Timings
from vnet.controller.service.flows import Admitted, Ask, Flows, Replay
from vnet.model.controller_api import ConnectionView, ModifyRequest, Move

log = logging.getLogger(__name__)
# seconds from a move's switch to its break: a packet sent on the old path just before the
# switch, queued on the way (an underlay class holds a few ms at its rate), reaches the old
# path's last hosts before their pieces go (each ingress agent drains its own queues)
IN_FLIGHT = 0.1
CHOICES = 3  # times a request chooses its moves anew after losing a race for a mover
Skip = Callable[[], Collection[str]]  # the hosts a move's next step does not ask, as known now


@dataclass(frozen=True)
class Moving:
    connection_id: int
    request_id: str
    generation: int  # the new one
    old: planning.HostPieces
    new: planning.HostPieces
    plan: planning.Plan
    bandwidth: int
    explicit_path: list[str] | None
    kind: str  # "modified" (bandwidth) or "moved" (path only)


@dataclass(frozen=True)
class Made:
    moves: list[Move]  # made, in order
    complete: bool  # False: a move lost a race, the ones after it were not tried


class Moves:
    """Modify and rearrangement, over the connection transactions of `flows`."""

    def __init__(self, flows: Flows):
        self.flows = flows

    # -- rearrangement ---------------------------------------------------------------------
    async def admit_moving(
        self, ask: Ask, timings: Timings | None
    ) -> tuple[list[Move], Admitted | Replay]:
        """Moves, then admission without moving; chosen again while a move lost a race."""
        moved: list[Move] = []
        for choice in range(1, CHOICES + 1):
            moves = await self.flows.db.read(
                lambda s: self.flows.choose_moves(s, ask.inv, ask.tenant, ask.request), timings
            )
            made = await self.make(ask.inv, moves, timings)
            moved += made.moves
            try:
                return moved, await self.flows.admit_now(ask, timings, may_move=False)
            except Rejected:
                if made.complete or choice == CHOICES:
                    raise
        raise AssertionError("unreachable")

    async def make(
        self, inv: Inventory, moves: tuple[planner.Moved, ...], timings: Timings | None
    ) -> Made:
        """Each move made before it is broken, in the planner's order, until one loses a
        race."""
        made: list[Move] = []
        for move in moves:
            try:
                moving = await self.flows.db.write(
                    lambda s, m=move: self.start_planned(s, inv, m),  # type: ignore[misc]
                    timings,
                )
            except (Conflict, NotFound, Rejected):  # another request got there first
                return Made(made, complete=False)
            await self.realise(moving, move.held.tenant, timings)
            made.append(move.view())
        return Made(made, complete=True)

    # -- modify ----------------------------------------------------------------------------

    def start(
        self, session: Session, inv: Inventory, tenant: str, name: str, request: ModifyRequest
    ) -> Moving:
        """A tenant's modify: plan generation g+1 (the planner keeps a controller-chosen
        path when the new bandwidth fits there) and reserve it; a path given becomes the
        connection's explicit path."""
        if request.bandwidth is None and request.path is None:
            raise BadRequest(
                "a modify changes the bandwidth, the path or both; it gave neither",
                field="bandwidth",
            )
        conn = store.live_connection(session, tenant, name, lock=True)
        store.require_changeable(conn)
        current = held_connection(session, conn.id)
        assert current is not None  # live, and locked by this transaction

        def make(held: Mapping[tuple[str, bool], int]) -> planning.Plan:
            return planner.plan_move(inv, held, current, request, self.flows.policy)

        plan = planning.reserve_planned(
            session,
            inv,
            conn,
            make,
            generation=conn.generation + 1,
            role=ReservationRole.NEXT,
            replacing=conn.generation,
        )
        explicit = request.path if request.path is not None else conn.path
        kind = "modified" if request.bandwidth is not None else "moved"
        bandwidth = request.bandwidth or conn.bandwidth_bps
        return self._moving(session, inv, tenant, conn, plan, bandwidth, explicit, kind)

    def start_planned(self, session: Session, inv: Inventory, moved: planner.Moved) -> Moving:
        """A rearrangement's move, as the planner chose it: reserved as planned (a refusal
        under the row locks means another request took the room: Rejected); the path stays
        the controller's choice."""
        mover = moved.held
        conn = store.live_connection(session, mover.tenant, mover.request.name, lock=True)
        store.require_changeable(conn)  # a rearrangement moves established connections only
        if conn.id != mover.connection_id:
            raise Conflict(f"connection {conn.name!r} changed while a move was planned")
        links = sorted({name for name, _ in moved.plan.demands})
        book = ledger.Book.locking(session, usable_bps, links)
        moving = self.start_booked(session, inv, book, moved, conn)
        book.write()
        return moving

    def start_booked(
        self,
        session: Session,
        inv: Inventory,
        book: ledger.Book,
        moved: planner.Moved,
        conn: Connection,
    ) -> Moving:
        """`start_planned` for a transaction that reserves many moves in one ledger book
        (`conn`: the mover's row, locked by the caller); a degraded connection moves too.
        A refusal (Rejected, Conflict) books and changes nothing."""
        store.require_changeable(conn, ConnectionState.DEGRADED)
        if conn.generation != moved.held.generation:
            raise Conflict(f"connection {conn.name!r} changed while a move was planned")
        try:
            book.reserve(
                conn,
                moved.plan.demands,
                generation=conn.generation + 1,
                role=ReservationRole.NEXT,
                replacing=moved.held.demands,  # an established connection's: generation g
            )
        except ledger.Refused as refused:
            raise planning.rejection(refused) from None
        return self._moving(
            session,
            inv,
            moved.held.tenant,
            conn,
            moved.plan,
            conn.bandwidth_bps,
            conn.path,
            "moved",
        )

    def _moving(
        self,
        session: Session,
        inv: Inventory,
        tenant: str,
        conn: Connection,
        plan: planning.Plan,
        bandwidth: int,
        explicit: list[str] | None,
        kind: str,
    ) -> Moving:
        old = planning.current_pieces(inv, tenant, conn, self.flows.policy)
        new = planning.HostPieces.of(plan.changes)
        conn.state = ConnectionState.MODIFYING
        entry = store.open_journal(
            session, self.flows.liveness.request_id(), "modify", conn, [*old.pieces, *new.pieces]
        )
        generation = conn.generation + 1
        return Moving(
            conn.id, entry.request_id, generation, old, new, plan, bandwidth, explicit, kind
        )

    async def realise(
        self,
        moving: Moving,
        tenant: str,
        timings: Timings | None,
        skip: Skip = frozenset,
    ) -> ConnectionView:
        """The agent steps, then the ledger's switch (`switch`)."""
        await self.take_steps(moving, timings, skip)
        return await self.flows.db.write(lambda s: switch(s, moving, tenant), timings, retry=True)

    async def take_steps(
        self,
        moving: Moving,
        timings: Timings | None,
        skip: Skip = frozenset,
        old_path_works: bool = True,
    ) -> list[str]:
        """The agent steps of a move; if one fails, what the earlier ones did is put back,
        the move's reservation undone (AgentRefused). `skip()`: the hosts that are down as
        known when a step starts (their agent is not asked; reconciliation removes what
        they held when they are back): a host found down during the move is not asked by
        its later steps. Between the switch and the break it waits IN_FLIGHT for packets sent
        on the old path just before the switch to reach its last hosts. `old_path_works`
        False (the old path failed: nothing on it gets anywhere): no wait, the new path
        made and switched in one step (`steps.off_failed_path`), and a break that fails
        undoes nothing (`_clear_failed_path`). The hosts that still hold pieces of the old
        path, for the caller to have reconciled."""
        locators = {**moving.old.locators, **moving.new.locators}
        old, new = moving.old.pieces, moving.new.pieces
        planned = steps.phases if old_path_works else steps.off_failed_path
        ran = 0  # steps confirmed
        try:
            for phase, step in planned(old, new, locators):
                if phase == steps.BREAK and ran and old_path_works:
                    await asyncio.sleep(IN_FLIGHT)
                down = skip()
                kept = [c for c in step if c.host not in down]
                if kept and phase == steps.BREAK and ran and not old_path_works:
                    return await self._clear_failed_path(moving, kept, ran, timings)
                if kept:
                    await self.flows.run_agents(
                        f"{moving.request_id}.{ran}", kept, timings, journal_commit=ran == 0
                    )
                    ran += 1
        except AgentError as e:
            if ran > 0:  # steps before this one were confirmed: put generation g back
                await self._restore(moving, timings, skip())
            error = str(e)
            await self.flows.db.write(lambda s: undo(s, moving, error), timings, retry=True)
            raise AgentRefused(e.host, e.reason, e.tag) from None
        return []

    async def _clear_failed_path(
        self, moving: Moving, changes: list[HostChange], ran: int, timings: Timings | None
    ) -> list[str]:
        """The last hosts of a failed path lose the connection's pieces. It runs on its new
        path already, so a host that does not take this (often the one that failed, not yet
        known down: its agent stopping) is left for reconciliation, not a reason to put the
        connection back on a path that carries nothing; those hosts."""
        try:
            await self.flows.run_agents(
                f"{moving.request_id}.{ran}", changes, timings, journal_commit=False
            )
            return []
        except AgentError as e:
            hosts = sorted({c.host for c in changes})
            log.warning(
                "request %s: the failed path's pieces stay on %s until reconciled: %s",
                moving.request_id,
                ", ".join(hosts),
                e,
            )
            return hosts

    async def _restore(
        self, moving: Moving, timings: Timings | None, skip: Collection[str]
    ) -> None:
        back = [
            c for c in restore_changes(moving.old, set(moving.new.pieces)) if c.host not in skip
        ]
        try:
            await self.flows.run_agents(
                f"{moving.request_id}.undo", back, timings, journal_commit=False
            )
        except AgentError as e:  # reconciliation puts the hosts right when the agent is back
            log.warning("request %s: could not put generation back: %s", moving.request_id, e)


def restore_changes(old: planning.HostPieces, touched: set[str]) -> list[HostChange]:
    """Every host back to the old generation's pieces (hosts only the new path had: none)."""
    back = steps.install(old.pieces, old.locators)
    name = next(iter(old.pieces.values())).name if old.pieces else None
    extra = [HostChange(host=h, delete=(name,)) for h in sorted(touched - set(old.pieces)) if name]
    return [*back, *extra]


def undo(session: Session, moving: Moving, error: str) -> None:
    conn = session.get_one(Connection, moving.connection_id)
    ledger.discard(session, conn, moving.generation)  # a retry reserves it again
    conn.state = ConnectionState.ESTABLISHED
    store.add_event(session, conn, "failed", f"modify refused: {error}")
    store.finish_journal(session, moving.request_id, error=error)


def switch(session: Session, moving: Moving, tenant: str) -> ConnectionView:
    (view,) = switch_all(session, [(moving, tenant)])
    return view


def switch_all(session: Session, done: Sequence[tuple[Moving, str]]) -> list[ConnectionView]:
    """The ledger's switch of moves whose agent steps were taken, each to its new
    generation (the rows of all switched in a few statements); their views."""
    ids = [m.connection_id for m, _ in done]
    rows = {c.id: c for c in session.scalars(select(Connection).where(Connection.id.in_(ids)))}
    conns = [rows[i] for i in ids]
    old_paths = [[h["host"] for h in conn.hops] for conn in conns]
    ledger.switch_many(session, [(c, m.generation) for c, (m, _) in zip(conns, done, strict=True)])
    views, lines = [], []
    for conn, (moving, tenant), old_path in zip(conns, done, old_paths, strict=True):
        conn.bandwidth_bps = moving.bandwidth
        conn.path = moving.explicit_path
        planning.record_plan(conn, moving.plan)
        conn.state = ConnectionState.ESTABLISHED
        new_path = [h["host"] for h in conn.hops]
        detail = f"bandwidth {conn.bandwidth_bps} bit/s, path {' -> '.join(old_path)}"
        lines.append((conn, moving.kind, f"{detail} => {' -> '.join(new_path)}"))
        views.append(store.view(conn, tenant))
    store.add_events(session, lines)
    store.finish_journals(session, [m.request_id for m, _ in done])
    return views
