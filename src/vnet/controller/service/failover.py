"""Rerouting guaranteed connections when links and hosts fail, and when they come back.

The interface failure detection calls (whatever learns of the failure: the agents'
notifications, a liveness check, an operator), each idempotent and safe to call again.
The service registers `Failover` as a state hook of its failure detection (health.py):
`on_link_state` calls these, and `seed` loads what was down at start. A host whose agent
stops answering (`on_host_state`) is only not asked by moves: what runs through it stays,
since its data plane may forward on; a host that really fails takes its links down, and
their other ends report that.

    report = await service.failover.link_down("h1-h3")   # link h1-h3 failed
    report = await service.failover.link_up("h1-h3")     # it is back
    report = await service.failover.host_down("h2")      # host h2 (its agent, its links) failed
    report = await service.failover.host_up("h2")        # it is back
    report = await service.failover.retry()              # capacity may have freed: try again
    service.failover.down                                # (links, hosts) down now

Each answers a `Failover` report: the connections moved and those degraded, with why.

On a failure every live connection whose path crosses the element is planned again over the
inventory without every element down (`Reroute.start_all`: the usual admission under the
links' row locks, never over-admitting the survivors) and moved onto the new path. The old
path carries nothing any more, so there is nothing to keep while the new one is made: the
new path's hosts get their pieces in one agent step, then the old path's last hosts lose
theirs (steps.off_failed_path), without waiting for packets in flight; a host that is down
is not asked, and one that does not take the removal leaves the move in place (its stale
pieces go when reconciliation meets it again). A
connection that cannot move (its path was asked for explicitly, it ends on the failed host,
no surviving path has room) becomes `degraded`, with the reason in its history: it keeps
its pieces and its reservations where they were, so nothing else takes that room and it
runs again, unchanged, when the element returns. Degraded connections are tried again
(moved if a path now fits) on every call here; the service calls `retry` after each release
(capacity freed).

The moves of one change are made together: `Reroute.start_all` plans and reserves all of
them in one database transaction (one ledger book: the links locked and read once, each
move planned on the books the earlier ones leave), then their agent steps run side by side
and meet in the agents' group commit (agents/group.py), which gives each host one
transaction per step for all of them. Moving 100 connections then costs about the three
agent transactions of one move, not 100 times them; a move an agent refuses fails alone
(the group is split) and its connection is degraded. A request in flight when the failure
came is not among the moves (its connection is the request's); the service calls `retry`
when it lands on an element that is down (Service._landed).

When an element comes back, each degraded connection whose path crosses nothing down any
more is established again where it was ("restored"). Connections that were moved stay on
their new path (no flapping): the policy is never to move back on its own; a tenant or
operator who wants the old path asks for it with a modify.

What is down is held in this process (the detection feeds it again after a restart); new
connections are planned around it (`Failover.planning`). Every change is a history event
of the connection (kinds rerouted, degraded, restored), which the API's /events stream
carries as `event: connection`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Collection, Coroutine, Mapping
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from vnet.controller.db.models import Connection, ConnectionState, Link, Reservation
from vnet.controller.errors import NotFound
from vnet.controller.held import Held, held_connections
from vnet.controller.inventory import Inventory
from vnet.controller.service import store
from vnet.controller.service.database import Database
from vnet.controller.service.moves import Moving
from vnet.controller.service.opstate import Key
from vnet.controller.service.reroute import Avoid, Reroute
from vnet.model.controller_api import ElementStatus, Move, Unmovable
from vnet.model.controller_api import FailoverReport as Report

log = logging.getLogger(__name__)


class Failover:
    """What is down, and the connections moved off it or degraded (see the module)."""

    def __init__(
        self,
        db: Database,
        reroute: Reroute,
        inventory: Callable[[], Coroutine[Any, Any, Inventory]],
        reconcile: Callable[[list[str]], Coroutine[Any, Any, object]],
    ):
        self.db = db
        self.reroute = reroute
        self.inventory = inventory  # the service's, as held
        self.reconcile = reconcile  # a host back is reconciled with the database
        self.links: set[str] = set()
        self.hosts: set[str] = set()
        # hosts whose agent does not answer (failure detection): moves do not ask them, but
        # what runs through them stays (their data plane may forward on)
        self.unreachable: set[str] = set()
        # what failure detection knows now, before its hooks tell this (a host powered off
        # is found unreachable while the moves its links' failure started are planned)
        self.unreachable_now: Callable[[], Collection[str]] = frozenset
        self._lock = asyncio.Lock()  # one change of what is down at a time

    @property
    def down(self) -> Avoid:
        return Avoid.of(self.links, self.hosts)

    async def planning(self) -> Inventory:
        """The inventory new connections are planned on: without what is down."""
        return (await self.inventory()).avoiding(self.links, self.hosts)

    # -- the entry points ------------------------------------------------------------------
    async def link_down(self, name: str) -> Report:
        await self._known(name, "link")
        return await self._changed(lambda: self.links.add(name))

    async def link_up(self, name: str) -> Report:
        return await self._changed(lambda: self.links.discard(name))

    async def host_down(self, name: str) -> Report:
        await self._known(name, "host")
        return await self._changed(lambda: self.hosts.add(name))

    async def host_up(self, name: str) -> Report:
        was_down = name in self.hosts
        report = await self._changed(lambda: self.hosts.discard(name))
        if was_down:  # stale pieces of connections moved off it while it was away go
            await self.reconcile([name])
        return report

    async def retry(self) -> Report:
        return await self._changed(lambda: None)

    # -- failure detection's hooks (opstate.StateHook): its changes drive the entry points ---
    async def on_link_state(self, link: str, up: bool) -> None:
        self._said(f"link {link}", await (self.link_up if up else self.link_down)(link))

    async def on_host_state(self, host: str, up: bool) -> None:
        """A host whose agent stopped answering is not a failed host: an agent that crashed
        or hangs leaves a data plane that forwards on, and moving every connection off it
        would cut what works. What fails with a host (its power, its links) shows as its
        links going down, which their other ends report (`on_link_state`)."""
        if up and host not in self.unreachable:
            return
        (self.unreachable.discard if up else self.unreachable.add)(host)
        # moves that failed asking its agent (its links' news came first) go again without
        self._said(f"host {host}", await self.retry())

    def seed(self, states: Mapping[Key, ElementStatus]) -> None:
        """What failure detection last recorded as down (it tells the hooks only changes,
        so after a restart what was down before comes from here)."""
        for (kind, name), status in states.items():
            if kind == "link" and status.state == "down":
                self.links.add(name)
            elif kind == "host" and status.state == "unreachable":
                self.unreachable.add(name)

    @staticmethod
    def _said(what: str, report: Report) -> None:
        if report.moved or report.degraded or report.restored:
            log.info(
                "%s: %d connection(s) moved, %d degraded, %d restored",
                what,
                len(report.moved),
                len(report.degraded),
                len(report.restored),
            )

    # -- the work --------------------------------------------------------------------------
    async def _known(self, name: str, kind: str) -> None:
        inv = await self.inventory()
        names = {h.name for h in inv.topology.hosts} if kind == "host" else set(inv.links)
        if name not in names:
            raise NotFound(f"unknown {kind} {name!r}", field="name", code=f"unknown-{kind}")

    def _not_asked(self) -> set[str]:
        """The hosts a move's next step does not ask: down, or known not to answer (by
        detection now, even before its hooks tell this)."""
        return self.hosts | self.unreachable | set(self.unreachable_now())

    async def _changed(self, change: Callable[[], None]) -> Report:
        async with self._lock:
            change()
            inv, avoid = await self.inventory(), self.down
            links = avoid.all_links(inv)
            restored, crossing = await self.db.write(lambda s: settle(s, avoid, links))
            report = Report(restored=restored)
            started = await self.reroute.start_all(inv, avoid, crossing)
            stuck = [
                (h, x) for h, x in zip(crossing, started, strict=True) if isinstance(x, Unmovable)
            ]
            if stuck:
                await self.db.write(lambda s: degrade_all(s, stuck))
            pairs = [
                (h, x) for h, x in zip(crossing, started, strict=True) if isinstance(x, Moving)
            ]
            # the moves leave paths that failed: nothing on them is to wait for
            outcomes = await self.reroute.finish_all(pairs, self._not_asked, old_paths_work=False)
            failed = [
                (h, x)
                for (h, _), x in zip(pairs, outcomes, strict=True)
                if isinstance(x, Unmovable)
            ]
            if failed:
                await self.db.write(lambda s: degrade_all(s, failed))
            report.moved += [x for x in outcomes if isinstance(x, Move)]
            report.degraded += [x for _, x in stuck] + [x for _, x in failed]
            return report


def crossing_now(helds: list[Held], avoid: Avoid, links: set[str]) -> list[Held]:
    """Of `helds`, the established or degraded whose path crosses what is down."""
    states = (ConnectionState.ESTABLISHED, ConnectionState.DEGRADED)
    return [h for h in helds if h.state in states and avoid.crosses(h, links)]


def degrade(session: Session, held: Held, why: str) -> None:
    """Degraded with the reason (once per reason: a retry that fails the same way is quiet);
    its pieces and reservations stay where they are."""
    conn = session.get_one(Connection, held.connection_id)
    if conn.state not in (ConnectionState.ESTABLISHED, ConnectionState.DEGRADED):
        return  # another request took it meanwhile
    if conn.state == ConnectionState.DEGRADED and _last_detail(session, conn) == why:
        return
    conn.state = ConnectionState.DEGRADED
    store.add_event(session, conn, "degraded", why)


def degrade_all(session: Session, stuck: list[tuple[Held, Unmovable]]) -> None:
    for held, why in stuck:
        degrade(session, held, why.reason)


def settle(session: Session, avoid: Avoid, links: set[str]) -> tuple[list[str], list[Held]]:
    """What a change of what is down does first, on one read of the connections it may
    concern (`concerned`): the names of those `restore`d, and those crossing what is down
    now (to move)."""
    helds = held_connections(session, concerned(session, links))
    return restore(session, helds, avoid, links), crossing_now(helds, avoid, links)


def concerned(session: Session, links: set[str]) -> list[int]:
    """The ids of the connections a change of what is down may concern: the degraded (to
    restore) and those holding on one of `links` (every link down and every link of a
    host down). Every other one crosses none of them (a connection crosses the
    underlay between two hosts, the planner refuses one within a host, and holds on each
    link of its path), so a failure, or the retry after each release while something is
    down, reads what it concerns, not every live connection."""
    on_links = (
        select(Reservation.connection_id)
        .join(Link, Link.id == Reservation.link_id)
        .where(Reservation.released.is_(None), Link.name.in_(links))
    )
    degraded = select(Connection.id).where(Connection.state == ConnectionState.DEGRADED)
    # two lookups by index (a link's held rows, the state), not a pass over the connections
    return sorted(set(session.scalars(on_links)) | set(session.scalars(degraded)))


def restore(session: Session, helds: list[Held], avoid: Avoid, links: set[str]) -> list[str]:
    """Of `helds`, the degraded whose path crosses nothing down any more: established again
    where they are (their pieces and reservations never left). Their names."""
    out = []
    for held in helds:
        if held.state == ConnectionState.DEGRADED and not avoid.crosses(held, links):
            conn = session.get_one(Connection, held.connection_id)
            conn.state = ConnectionState.ESTABLISHED
            store.add_event(session, conn, "restored", f"path {' -> '.join(held.path)} is up")
            out.append(f"{held.tenant}/{held.request.name}")
    return out


def _last_detail(session: Session, conn: Connection) -> str | None:
    events = store.events(session, conn)
    return events[-1].detail if events else None
