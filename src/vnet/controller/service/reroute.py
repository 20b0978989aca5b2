"""Moving every connection off a set of links and hosts (a drain), make-before-break.

`Reroute.drain(inv, avoid)` finds the live connections whose path crosses a link or a host
of `avoid` (a link of an avoided host counts as avoided), and for each one plans a path over
the inventory without them (`Inventory.avoiding`) with the usual admission, then moves it
with the machinery of a modify (`Moves.start_booked` reserves generation g+1 as NEXT under
the links' row locks while g still counts, `Moves.take_steps` takes the agent steps,
`switch_all` switches the ledger). The moves are reserved together, in one database
transaction and one ledger book (`start_all`), and realised side by side (`finish_all`):
their agent steps meet in the agents' group commit, one transaction per host and step for
all of them, and one transaction switches the ledger of all. It answers what
moved and what could not, with why.

What cannot move: a connection whose path was asked for explicitly (the tenant pinned it),
one that starts or ends on an avoided host (its end host is there), one another request is
changing, and one for which no path without the avoided elements has room.

All or nothing (`all_or_nothing=True`, what removing an element uses): every move is first
planned in a read-only transaction, one after the other on the books the earlier ones leave;
if any connection cannot move, nothing is changed and the answer lists the unmovable ones.
Otherwise the moves are reserved, each planned again under the row locks over what is held
then (another request may have taken room meanwhile): if one cannot be, none is. A move that
fails once they run (an agent refused) is answered as unmovable; the others complete, and
stay on their new paths (admitted paths that avoid the element).
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from vnet.controller import planner
from vnet.controller.db import ledger
from vnet.controller.db.models import Connection, ConnectionState
from vnet.controller.errors import ServiceError
from vnet.controller.held import Held, held_connections
from vnet.controller.inventory import Arc, Inventory, usable_bps
from vnet.controller.service.database import Timings
from vnet.controller.service.flows import Flows
from vnet.controller.service.moves import Moves, Moving, Skip, switch_all
from vnet.controller.service.putback import PutBack
from vnet.model.controller_api import ConnectionView, Drained, Move, Unmovable

REROUTED = "rerouted"  # the history's kind for a connection moved off an element


@dataclass(frozen=True)
class Avoid:
    """Links and hosts no path may cross."""

    links: frozenset[str] = frozenset()
    hosts: frozenset[str] = frozenset()

    @classmethod
    def of(cls, links: Collection[str] = (), hosts: Collection[str] = ()) -> Avoid:
        return cls(frozenset(links), frozenset(hosts))

    def all_links(self, inv: Inventory) -> set[str]:
        """The avoided links, and every link of an avoided host."""
        of_hosts = {n for n, x in inv.links.items() if {x.a, x.b} & self.hosts}
        return set(self.links) | of_hosts

    def crosses(self, held: Held, links: set[str]) -> bool:
        return bool(set(held.path) & self.hosts) or any(link in links for link, _ in held.demands)

    def on_path(self, inv: Inventory, path: Sequence[str]) -> bool:
        """Whether a path of hosts crosses an avoided host or link (either way)."""
        links = self.all_links(inv)
        ends = {frozenset((x.a, x.b)) for n, x in inv.links.items() if n in links}
        return bool(set(path) & self.hosts) or any(
            frozenset(hop) in ends for hop in itertools.pairwise(path)
        )

    def __str__(self) -> str:
        named = [f"link {x}" for x in sorted(self.links)] + [
            f"host {h}" for h in sorted(self.hosts)
        ]
        return ", ".join(named)


@dataclass(frozen=True)
class DrainPlan:
    """The moves a drain would make (in order) and the connections that cannot move."""

    moves: tuple[planner.Moved, ...]
    unmovable: tuple[Unmovable, ...]


class Reroute:
    """Drains: every connection moved off links and hosts, make-before-break."""

    def __init__(self, flows: Flows, moves: Moves, putback: PutBack):
        self.flows = flows
        self.moves = moves
        self.putback = putback  # a failed move puts back what it left changed

    async def plan(self, inv: Inventory, avoid: Avoid) -> DrainPlan:
        """What a drain would do now (read only: nothing is reserved)."""
        return await self.flows.db.read(lambda s: self._plan(s, inv, avoid))

    async def drain(
        self,
        inv: Inventory,
        avoid: Avoid,
        *,
        all_or_nothing: bool = True,
        timings: Timings | None = None,
    ) -> Drained:
        """Move every connection crossing `avoid` onto a path without it; see the module."""
        planned = await self.plan(inv, avoid)
        if all_or_nothing and planned.unmovable:
            return Drained(unmovable=list(planned.unmovable))
        helds = [m.held for m in planned.moves]
        started = await self.start_all(inv, avoid, helds, all_or_nothing=all_or_nothing)
        unmovable = [*planned.unmovable, *(x for x in started if isinstance(x, Unmovable))]
        if all_or_nothing and unmovable:  # none was reserved
            return Drained(unmovable=unmovable)
        pairs = [(h, x) for h, x in zip(helds, started, strict=True) if isinstance(x, Moving)]
        outcomes = await self.finish_all(pairs, timings=timings)
        moved = [x for x in outcomes if isinstance(x, Move)]
        return Drained(
            moved=moved, unmovable=[*unmovable, *(x for x in outcomes if isinstance(x, Unmovable))]
        )

    async def start_all(
        self, inv: Inventory, avoid: Avoid, helds: Sequence[Held], *, all_or_nothing: bool = False
    ) -> list[Moving | Unmovable]:
        """Each of `helds` planned around `avoid` and reserved (generation g+1 as NEXT while g
        counts), in one database transaction and one ledger book: the links locked and read
        once, each move planned on the books the ones before it leave, the rows written
        together. One that cannot move is answered as Unmovable, with why, and leaves nothing
        (with `all_or_nothing`, none is reserved if one cannot be)."""
        around = inv.avoiding(avoid.links, avoid.hosts)

        def start(session: Session) -> list[Moving | Unmovable]:
            # Every link first (a release's last transaction takes links, then its
            # connection), then the moving connections' rows without waiting for any
            # (a modify takes its connection, then links): one another request holds is
            # being changed by it, and is left to the next failover call.
            book = ledger.Book.locking(session, usable_bps)
            ids = sorted(h.connection_id for h in helds)
            free = select(Connection).where(Connection.id.in_(ids)).order_by(Connection.id)
            rows = {c.id: c for c in session.scalars(free.with_for_update(skip_locked=True))}
            now = {h.connection_id: h for h in held_connections(session, ids)}
            out: list[Moving | Unmovable] = []
            for held in helds:
                conn = rows.get(held.connection_id)
                if conn is None:
                    out.append(unmovable_of(held, "another request is changing it"))
                    continue
                try:
                    current = now.get(held.connection_id)
                    out.append(self._start(session, book, inv, avoid, around, current, conn))
                except ServiceError as err:
                    out.append(unmovable_of(held, err.reason))
            if all_or_nothing and any(isinstance(x, Unmovable) for x in out):
                raise _NoneReserved(out)  # the transaction rolls back
            book.write()
            return out

        try:
            return await self.flows.db.write(start)
        except _NoneReserved as none:
            return none.answers

    async def finish_all(
        self,
        started: Sequence[tuple[Held, Moving]],
        skip: Skip = frozenset,
        timings: Timings | None = None,
        *,
        old_paths_work: bool = True,
    ) -> list[Move | Unmovable]:
        """The agent steps of each started move side by side, then one database
        transaction switches the ledger of all that took them (a move that failed is
        answered as Unmovable with why, and nothing of it remains). `old_paths_work`: False
        when the moves leave failed paths: each makes its new path in one agent step, and a
        failed removal of its old pieces leaves their hosts to be reconciled
        (Moves.take_steps)."""

        stale: set[str] = set()  # hosts still holding pieces of failed paths

        async def steps(held: Held, moving: Moving) -> Moving | Unmovable:
            try:
                async with self.putback.answering():
                    stale.update(await self.moves.take_steps(moving, timings, skip, old_paths_work))
                return moving
            except ServiceError as err:
                return unmovable_of(held, err.reason)

        stepped = await asyncio.gather(*(steps(h, m) for h, m in started))
        if stale:
            self.putback.repair(sorted(stale))
        done = [(h, m) for (h, _), m in zip(started, stepped, strict=True) if isinstance(m, Moving)]

        switched = [(m, h.tenant) for h, m in done]
        views = iter(
            await self.flows.db.write(lambda s: switch_all(s, switched), timings) if done else []
        )
        return [
            _moved(held, next(views)) if isinstance(x, Moving) else x
            for (held, _), x in zip(started, stepped, strict=True)
        ]

    def _start(
        self,
        session: Session,
        book: ledger.Book,
        inv: Inventory,
        avoid: Avoid,
        around: Inventory,
        now: Held | None,
        conn: Connection,
    ) -> Moving:
        """A move planned around `avoid` and booked, in `session`; `now`: the connection as
        the database holds it (None: released meanwhile), `conn` its row, locked."""
        if now is None:
            raise _Stuck("it was released meanwhile")
        why = reason_unmovable(now, avoid)
        if why is not None:
            raise _Stuck(why)
        plan = plan_around(around, book.usage(), now, self.flows)
        moving = self.moves.start_booked(session, inv, book, planner.Moved(now, plan), conn)
        return dataclasses.replace(moving, kind=REROUTED)

    def _plan(self, session: Session, inv: Inventory, avoid: Avoid) -> DrainPlan:
        links = avoid.all_links(inv)
        around = inv.avoiding(avoid.links, avoid.hosts)
        usage = dict(ledger.held_by_direction(session))
        moves, unmovable = [], []
        for held in held_connections(session):
            if not avoid.crosses(held, links):
                continue
            why = reason_unmovable(held, avoid)
            if why is None:
                try:
                    plan = plan_around(around, usage, held, self.flows)
                except ServiceError as err:
                    why = err.reason
            if why is not None:
                unmovable.append(unmovable_of(held, why))
                continue
            usage = planner.books_after(usage, held.demands, plan.demands)
            moves.append(planner.Moved(held, plan))
        return DrainPlan(tuple(moves), tuple(unmovable))


class _Stuck(ServiceError):
    status = 409
    code = "unmovable"


class _NoneReserved(Exception):
    """Raised out of an all-or-nothing `start_all` to roll its transaction back."""

    def __init__(self, answers: list[Moving | Unmovable]):
        super().__init__("a move could not be reserved")
        self.answers = answers


def plan_around(
    around: Inventory, usage: Mapping[Arc, int], held: Held, flows: Flows
) -> planner.Plan:
    """A path for `held` over `around` (its own current demands not counted on the link
    directions both paths share), or the planner's ServiceError."""
    request = held.request.model_copy(update={"path": None})
    return planner.plan_connection(
        around, usage, held.tenant, request, held.connection_id, held.number, flows.policy,
        exclude_self=held.demands,
    )  # fmt: skip


def reason_unmovable(held: Held, avoid: Avoid) -> str | None:
    """Why a connection cannot be moved off `avoid` whatever the capacity (None: it can)."""
    if held.request.path is not None:
        return f"its path {' -> '.join(held.request.path)} was asked for explicitly"
    ends = [h for h in (held.path[:1] + held.path[-1:]) if h in avoid.hosts]
    if ends:
        return f"it starts or ends on host {ends[0]}, where its end host is"
    if held.state not in (ConnectionState.ESTABLISHED, ConnectionState.DEGRADED):
        return f"it is {held.state.value}: another request is changing it"
    return None


def _moved(held: Held, view: ConnectionView) -> Move:
    return Move(
        connection=held.request.name,
        tenant=held.tenant,
        old_path=list(held.path),
        new_path=view.path,
    )


def unmovable_of(held: Held, reason: str) -> Unmovable:
    return Unmovable(
        connection=held.request.name, tenant=held.tenant, path=list(held.path), reason=reason
    )
