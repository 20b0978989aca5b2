"""VRs an agent holds that the controller does not manage (made on the agent directly with
`vnet vr create`): listed per host, and adopted into a tenant's inventory on request.

`unmanaged(host)` reads the agent's running VRs now and keeps those the inventory lacks.
`adopt(tenant, host, name)` takes one of them into the inventory when it is consistent with
it, else refuses with the reason and changes nothing: a name a VR or end host of the inventory
has (409), an interface in a network that is not the tenant's (404 `unknown-network`), an
address another object holds or outside its network, and whatever else the model's checks
find in the inventory with it (409 `inconsistent`). Adopting is then what creating the VR
would be without the create (`InventoryChanges.adopt_router`): the routes to and from its
SRv6 locator on the agents and its row in the database, in one transaction.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from vnet.controller.agents.realise import AgentError
from vnet.controller.errors import AgentRefused, BadRequest, Conflict, NotFound
from vnet.controller.principal import Principal
from vnet.controller.service import store
from vnet.controller.service.database import Database
from vnet.controller.service.inventory import (
    InventoryCache,
    InventoryChanges,
    require_free_node_name,
    require_valid,
    tenant_network,
)
from vnet.model import controller_api as api
from vnet.model.topology import Topology, VirtualRouter


@dataclass
class Adoption:
    db: Database
    cache: InventoryCache
    changes: InventoryChanges
    adopted: Callable[[str, str], None]  # (host, VR): no longer unmanaged

    async def _held(self, host: str) -> tuple[Topology, list[VirtualRouter]]:
        """The inventory, and the VRs `host`'s agent holds that it lacks."""
        topo = (await self.cache.get()).topology
        if host not in self.changes.agents.hosts:
            raise NotFound(f"unknown host {host!r} (no agent)", field="host", code="unknown-host")
        try:
            held = await self.changes.agents.router_configs(host)
        except AgentError as err:
            raise AgentRefused(err.host, err.reason, err.tag) from None
        ours = {vr.name for vr in topo.routers}
        return topo, [vr for vr in held if vr.name not in ours]

    async def unmanaged(self, who: Principal, host: str) -> list[api.UnmanagedRouter]:
        who.require_provider()
        _, found = await self._held(host)
        return [_view(host, vr) for vr in found]

    async def adopt(self, who: Principal, tenant: str, request: api.AdoptRequest) -> api.RouterView:
        who.require_provider()  # a VR nobody manages is no tenant's to claim
        await self.db.read(lambda s: store.tenant_row(s, tenant))
        topo, found = await self._held(request.host)
        vr = next((v for v in found if v.name == request.name), None)
        if vr is None:
            require_free_node_name(topo, request.name)  # the inventory's own VR: a clash
            raise NotFound(
                f"host {request.host!r} holds no unmanaged VR {request.name!r}",
                field="name",
                code="unknown-router",
            )
        require_free_node_name(topo, vr.name)
        if not vr.interfaces:
            raise Conflict(
                f"VR {vr.name!r} has no interface, so no network of tenant {tenant!r}",
                field="name",
                code="inconsistent",
            )
        for k, itf in enumerate(vr.interfaces):
            tenant_network(topo, tenant, itf.network, f"interfaces[{k}].network")
        wanted = topo.model_copy(update={"routers": [*topo.routers, vr]})
        try:
            require_valid(wanted, "name", topo)
        except BadRequest as err:  # the agent's VR is valid alone: it clashes with the rest
            raise Conflict(err.reason, field="name", code="inconsistent") from None
        await self.changes.adopt_router(vr)
        self.adopted(request.host, vr.name)
        return api.RouterView(
            tenant=tenant, name=vr.name, host=vr.host, networks=[i.network for i in vr.interfaces]
        )


def _view(host: str, vr: VirtualRouter) -> api.UnmanagedRouter:
    addresses = [str(a) for i in vr.interfaces for a in (i.ipv4, i.ipv6) if a is not None]
    networks = [i.network for i in vr.interfaces]
    return api.UnmanagedRouter(host=host, name=vr.name, networks=networks, addresses=addresses)
