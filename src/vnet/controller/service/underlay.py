"""Hosts and links added to and removed from the inventory through the API (the provider's).

Adding appends the host or link to the held topology (`controller.inventory.append`, the
same checks and rows as the inventory file's objects): a link joins two hosts in service,
with a rate, named "<a>-<b>". A host's agent is the one the controller's configuration
names for it (`agents:`), or the one given with the host (`agent`: its address, port, user,
host key and the names of its secret files in the configuration's agent_secrets_dir;
agent_access.py checks it before anything is written): kept in the host's row, reached at
once (reconciled, then watched like the others) and again after a restart. A host added
without an agent has none until it is added again with one (or the configuration names
one), so no VR can be placed there meanwhile; an agent once given does not change through
the API (409 `agent-exists`). The background work that follows the hosts and links (failure
detection, the utilisation poller, the reconcile watcher) learns each change at once.

Removing drains first (`Reroute.drain`, all or nothing): every connection whose path
crosses the link (or the host, or one of its links) is moved make-before-break onto a path
without it; if any cannot move, the removal is refused (409 `in-use`) naming each with
why, and nothing changed. Then the row is marked removed, under the link rows' locks and
only if nothing is held on it any more (a request admitted on it meanwhile makes the
removal a 409 to retry). A removed row stays: reservations' history refers to it and the
hosts' order numbers their underlay addresses. Planning no longer sees it (the inventory's
`links` leave it out, a removed host keeps no link) and the ledger reserves nothing on it.
A removed host's VRs and end hosts stay in the inventory, cut off. A move that fails after
the drain started (an agent refused, the room was taken) refuses the removal; the
connections moved before it stay on their new paths, which avoid the element.

Both are idempotent: adding what is there (same fields) answers it again (200, not 201),
adding a removed one with the same fields puts it back in service, removing a removed one
answers the removal again (nothing moved).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from vnet.controller import inventory as inventory_db
from vnet.controller.db.models import Host, Link, Reservation
from vnet.controller.errors import Conflict, InUse, NotFound
from vnet.controller.inventory import InventoryError, link_name
from vnet.controller.principal import Principal
from vnet.controller.service.agent_access import AgentAccesses, AgentWiring, keep
from vnet.controller.service.database import Database
from vnet.controller.service.inventory import InventoryCache
from vnet.controller.service.reroute import Avoid, Reroute
from vnet.model import controller_api as api
from vnet.model.topology import PhysicalHost, Topology, UnderlayLink


class UnderlayChanges:
    """Hosts and links added and removed; `wiring` learns of agents given with hosts and of
    each change of the hosts and links."""

    def __init__(
        self,
        db: Database,
        cache: InventoryCache,
        reroute: Reroute,
        accesses: AgentAccesses,
        wiring: AgentWiring,
    ):
        self.db = db
        self.cache = cache
        self.reroute = reroute
        self.accesses = accesses
        self.wiring = wiring

    # -- add ---------------------------------------------------------------------------------
    async def add_host(self, who: Principal, request: api.HostRequest) -> tuple[api.HostView, bool]:
        """The host, and whether this request added it or its agent (False: both were there)."""
        who.require_provider()
        given = request.agent
        agent = self.accesses.checked(request.name, given) if given is not None else None

        def add(session: Session) -> bool:
            row = session.scalar(select(Host).where(Host.name == request.name))
            added = row is None or row.removed is not None
            if row is None:
                _append(
                    session,
                    lambda t: _with(t, hosts=[*t.hosts, PhysicalHost(name=request.name)]),
                    "name",
                )
                row = session.scalar(select(Host).where(Host.name == request.name))
                assert row is not None, "appended just now"
            row.removed = None
            return (agent is not None and keep(row, agent)) or added

        added = await self._write(add)
        if agent is not None:
            self.accesses.added[request.name] = agent
        has_agent = self.accesses.get(request.name) is not None
        reachable = await self.wiring.join(request.name, agent) if has_agent else None
        endpoint = self.accesses.endpoints().get(request.name, "")
        return api.HostView(name=request.name, agent=endpoint, reachable=reachable), added

    async def add_link(self, who: Principal, request: api.LinkRequest) -> tuple[api.LinkView, bool]:
        """The link, and whether this request added it (False: it was there, the same)."""
        who.require_provider()
        link = UnderlayLink(**request.model_dump(exclude_none=True))
        name = link_name(link)

        def add(session: Session) -> bool:
            for k, end in enumerate((link.a, link.b)):
                host = session.scalar(select(Host).where(Host.name == end))
                if host is None or host.removed is not None:
                    why = "is removed" if host is not None else "is unknown"
                    field = "ab"[k]
                    raise NotFound(f"{field}: host {end!r} {why}", field=field, code="unknown-host")
            row = session.scalar(select(Link).where(Link.name == name))
            if row is not None:
                return _same_link(row, link)
            return _append(session, lambda t: _with(t, links=[*t.links, link]), "b")

        added = await self._write(add)
        info = (await self.cache.get()).links[name]
        view = api.LinkView(name=name, a=info.a, b=info.b, capacity_bps=info.capacity)
        return view, added

    # -- remove ------------------------------------------------------------------------------
    async def remove_host(self, who: Principal, name: str) -> api.Removed:
        who.require_provider()
        return await self._remove("host", name, Avoid.of(hosts=[name]))

    async def remove_link(self, who: Principal, name: str) -> api.Removed:
        who.require_provider()
        return await self._remove("link", name, Avoid.of(links=[name]))

    async def _remove(self, kind: str, name: str, avoid: Avoid) -> api.Removed:
        table = Host if kind == "host" else Link
        row = await self.db.read(lambda s: _row(s, table, name, kind))
        if row.removed is not None:  # removed before: the same answer, nothing to move
            return api.Removed(kind=kind, name=name)  # type: ignore[arg-type]
        inv = await self.cache.get()
        drained = await self.reroute.drain(inv, avoid)
        if drained.unmovable:
            moved = f" ({len(drained.moved)} moved, the others not)" if drained.moved else ""
            raise InUse(
                f"{kind} {name}",
                [f"connection '{u.tenant}/{u.connection}'" for u in drained.unmovable],
                drained.unmovable,
                f"{kind} {name} carries connections that cannot be moved off it{moved}: "
                + "; ".join(f"{u.tenant}/{u.connection}: {u.reason}" for u in drained.unmovable),
                field="name",
            )
        await self._write(lambda s: _mark_removed(s, table, name, kind, avoid.all_links(inv)))
        if kind == "host":
            await self.wiring.left(name)
        return api.Removed(kind=kind, name=name, moved=drained.moved)  # type: ignore[arg-type]

    async def _write(self, work: Callable[[Session], bool]) -> bool:
        try:
            return await self.db.write(work)
        finally:
            await self.cache.forget()
            await self.wiring.changed()


def _with(topo: Topology, **lists: list[Any]) -> Topology:
    return topo.model_copy(update=lists)


def _append(session: Session, extended: Callable[[Topology], Topology], field: str) -> bool:
    """The held topology with one more object, appended (the model's checks first)."""
    inventory_db.lock_for_append(session)  # concurrent appends go one at a time
    held = inventory_db.read(session).topology
    try:
        inventory_db.append(session, extended(held))
    except InventoryError as err:  # the inventory with it would not hold: a name in use...
        raise Conflict(str(err), field=field, code="inventory-conflict") from None
    return True


def _same_link(row: Link, link: UnderlayLink) -> bool:
    """Adding a link that exists: the same (put back in service if it was removed), or 409."""
    held = UnderlayLink.model_validate(row.spec)
    if held != link:
        shown = held.model_dump(mode="json", exclude_defaults=True)
        raise Conflict(
            f"link {row.name} exists as {shown}; a link's fields do not change",
            field="rate",
            code="link-exists",
        )
    if row.removed is None:
        return False
    row.removed = None
    return True


def _row(session: Session, table: type[Host] | type[Link], name: str, kind: str) -> Any:
    row = session.scalar(select(table).where(table.name == name))
    if row is None:
        raise NotFound(f"unknown {kind} {name!r}", field="name", code=f"unknown-{kind}")
    return row


def _mark_removed(
    session: Session, table: type[Host] | type[Link], name: str, kind: str, links: set[str]
) -> bool:
    """The row removed, if nothing is held on its links any more (their row locks taken, as
    admission takes them: a reservation made meanwhile is seen)."""
    locked = select(Link.id).where(Link.name.in_(links)).order_by(Link.id).with_for_update()
    ids = list(session.scalars(locked))
    held = session.scalar(
        select(func.count()).where(Reservation.link_id.in_(ids), Reservation.released.is_(None))
    )
    if held:
        raise Conflict(
            f"a connection was admitted on {kind} {name} while it was drained; remove it again",
            field="name",
            code="in-use",
        )
    row = _row(session, table, name, kind)
    row.removed = datetime.now(UTC)
    return True
