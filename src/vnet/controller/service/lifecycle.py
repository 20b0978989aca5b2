"""Deleting VRs, end hosts, networks and tenants through the API.

Each delete is checked first and refused with nothing changed: an unknown object (404; another
tenant's is as unknown as a missing one), an object still held (409 `in-use`, `holders` naming
what holds it: a connection running over a VR or joining an end host, a VR or end host on a
network, a network or live connection of a tenant), or a delete that would move another VR's
SRv6 locator (409 `would-renumber`: live connections' SIDs derive from the locators, which
are numbered by the order of tenants and of each tenant's VRs, `vnet.model.srv6`).

An allowed delete runs as one transaction across the agents it touches
(`Agents.change_inventory`): the VR gone from its host with the locators it owns, and the
routes the tenant's other VRs had to its locator; a network gone from every host with an
agent that carries it. The database deletes the rows inside that transaction, after every
agent committed and before they confirm, checking the holders again (a connection made
meanwhile): an agent that refuses leaves every host and the database as they were (502
naming the host), a database that refuses sends every agent back (409).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy.orm import Session

from vnet.controller import inventory as inventory_db
from vnet.controller.agents.realise import Agents
from vnet.controller.errors import Conflict, InUse, NotFound
from vnet.controller.principal import Principal
from vnet.controller.service import removal, store, views
from vnet.controller.service.agent_access import AgentAccesses
from vnet.controller.service.database import Database
from vnet.controller.service.inventory import (
    Edits,
    InventoryCache,
    change_agents,
    renumbered,
    require_provisioning,
    tenant_network,
)
from vnet.controller.southbound import DeleteNetwork, DeleteRouter, RemoveRoutes
from vnet.model import controller_api as api
from vnet.model.srv6 import locator, router_tenant, srv6_tenants
from vnet.model.topology import ControllerSection, Topology, VirtualRouter

InDatabase = Callable[[Session], None]


@dataclass
class Deletions:
    """Deletes of inventory objects (see the module's words)."""

    db: Database
    cache: InventoryCache
    agents: Agents
    accesses: AgentAccesses

    async def _topology(self, who: Principal, tenant: str) -> Topology:
        who.require_tenant(tenant)
        await self.db.read(lambda s: store.tenant_row(s, tenant))
        return (await self.cache.get()).topology

    async def delete_router(self, who: Principal, tenant: str, name: str) -> api.RouterView:
        topo = await self._topology(who, tenant)
        vr = tenant_router(topo, tenant, name)
        shown = next(v for v in views.routers(topo, tenant) if v.name == name)

        def holders(session: Session) -> list[str]:
            return removal.connections_using(session, router=name)

        await self._require_free(f"VR {name!r}", holders)
        require_no_renumbering(topo, _with(topo, routers=[r for r in topo.routers if r != vr]))
        if vr.host not in self.agents.hosts:
            raise Conflict(f"host {vr.host!r} of VR {name!r} has no agent", field="name")
        edits = self._router_edits(topo, vr)
        await self._realise(
            edits, holders, f"VR {name!r}", lambda s: removal.delete_router(s, name)
        )
        return shown

    def _router_edits(self, topo: Topology, vr: VirtualRouter) -> Edits:
        """The VR off its host; its locator off the routes of its tenant's other VRs."""
        edits: Edits = {vr.host: [DeleteRouter(vr.name)]}
        tenant = router_tenant(topo, vr)
        routed = topo.model_copy(update={"controller": ControllerSection.model_validate({})})
        if tenant is None or tenant not in srv6_tenants(routed):
            return edits
        gone = (str(locator(topo, vr.name)),)
        for other in topo.routers:
            if other.name == vr.name or router_tenant(topo, other) != tenant:
                continue
            if other.host in self.agents.hosts:
                edits.setdefault(other.host, []).append(RemoveRoutes(other.name, gone))
        return edits

    async def delete_endhost(self, who: Principal, tenant: str, name: str) -> api.EndHostView:
        """Held in the database only (no agent holds end hosts)."""
        topo = await self._topology(who, tenant)
        shown = next((e for e in views.endhosts(topo, tenant) if e.name == name), None)
        if shown is None:
            raise NotFound(
                f"tenant {tenant!r} has no end host {name!r}", field="name", code="unknown-endhost"
            )

        def holders(session: Session) -> list[str]:
            return removal.connections_using(session, endhost=name)

        await self._require_free(f"end host {name!r}", holders)
        in_db = lambda s: removal.delete_endhost(s, name)  # noqa: E731
        await self._realise({}, holders, f"end host {name!r}", in_db)
        return shown

    async def delete_network(self, who: Principal, tenant: str, name: str) -> api.NetworkView:
        topo = await self._topology(who, tenant)
        net = tenant_network(topo, tenant, name, "name")
        shown = next(v for v in views.networks(topo, tenant) if v.name == name)
        on_it = [f"VR {vr.name!r}" for vr in topo.routers if _attached(vr, name)]
        on_it += [f"end host {e.name!r}" for e in topo.endhosts if e.network == name]
        if on_it:
            raise InUse(f"network {name!r}", on_it, field="name")
        require_no_renumbering(topo, _with(topo, networks=[n for n in topo.networks if n != net]))
        carriers = list(net.hosts) or [h.name for h in topo.hosts]
        carriers = [h for h in carriers if h in self.agents.hosts]
        require_provisioning(self.accesses, carriers)
        edits: Edits = {host: [DeleteNetwork(name)] for host in carriers}
        in_db = lambda s: removal.delete_network(s, name)  # noqa: E731
        await self._realise(edits, lambda _: [], f"network {name!r}", in_db)
        return shown

    async def delete_tenant(self, who: Principal, name: str) -> api.TenantView:
        who.require_provider()
        topo = await self._topology(who, name)
        networks = [f"network {n.name!r}" for n in topo.networks if n.tenant == name]
        if networks:
            raise InUse(f"tenant {name!r}", networks, field="name")

        def holders(session: Session) -> list[str]:
            return removal.connections_using(session, tenant=name)

        await self._require_free(f"tenant {name!r}", holders)
        require_no_renumbering(
            topo, _with(topo, tenants=[t for t in topo.tenants if t.name != name])
        )
        in_db = lambda s: removal.delete_tenant(s, name)  # noqa: E731
        await self._realise({}, holders, f"tenant {name!r}", in_db)
        return api.TenantView(name=name)

    async def _require_free(self, what: str, holders: Callable[[Session], list[str]]) -> None:
        held = await self.db.read(holders)
        if held:
            raise InUse(what, held, field="name")

    async def _realise(
        self,
        edits: Edits,
        holders: Callable[[Session], list[str]],
        what: str,
        in_db: InDatabase,
    ) -> None:
        """The agents' transaction; the database deletes inside it, the holders checked again
        there (one made meanwhile sends every agent back)."""

        def remove(session: Session) -> None:
            inventory_db.lock_for_append(session)  # one inventory change at a time
            if held := holders(session):
                raise InUse(what, held, field="name")
            in_db(session)

        async def on_committed() -> None:
            await self.db.write(remove)

        await change_agents(self.agents, self.cache, edits, on_committed)


def _with(topo: Topology, **lists: list) -> Topology:
    return topo.model_copy(update=lists)


def _attached(vr: VirtualRouter, network: str) -> bool:
    return any(i.network == network for i in vr.interfaces)


def tenant_router(topo: Topology, tenant: str, name: str) -> VirtualRouter:
    """The tenant's VR `name`; another tenant's is as unknown as a missing one."""
    for vr in topo.routers:
        if vr.name == name and router_tenant(topo, vr) == tenant:
            return vr
    raise NotFound(f"tenant {tenant!r} has no VR {name!r}", field="name", code="unknown-router")


def require_no_renumbering(before: Topology, after: Topology) -> None:
    """A delete never moves another VR's SRv6 locator (live connections' SIDs, and the
    routes the tenant's VRs hold, derive from them)."""
    moved = renumbered(before, after)
    if moved:
        raise Conflict(
            f"this would move the SRv6 locators of {', '.join(moved)}: locators are numbered"
            " by the order of tenants and of each tenant's VRs, so only a tenant's last VR"
            " (and a tenant or network whose removal moves no other tenant's block) can go",
            field="name",
            code="would-renumber",
        )
