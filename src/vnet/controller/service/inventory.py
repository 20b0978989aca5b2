"""Networks and VRs created through the API (issue 12, part 4).

Each request is checked against the inventory first (precise errors, nothing changed), then
realised on the agents in one transaction across the hosts it touches
(`Agents.change_inventory`); the database learns the new object inside that transaction,
after every agent committed and before any confirms (`on_committed`): if an agent refuses,
the database never held it; if the database refuses (another request took the name
meanwhile), every agent goes back. The new object is appended to the inventory
(`controller.inventory.append`, the same row-building as the file's objects), so the SRv6
numbering of the objects already there does not move.

A VR without a host goes where `controller.placement` says. A network is carried by the
hosts it names, or else by every host with an agent (so a VR may be placed on any of them,
as a lab does for its agents), each with the VTEPs of the others.

The inventory is read from the database once and kept (`InventoryCache`) until it changes.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable, Sequence

from sqlalchemy.orm import Session

from vnet.controller import inventory as inventory_db
from vnet.controller.agents.realise import AgentError, Agents
from vnet.controller.db import ledger
from vnet.controller.errors import AgentRefused, BadRequest, Conflict, NotFound
from vnet.controller.inventory import Inventory, InventoryError
from vnet.controller.placement import choose_host
from vnet.controller.principal import Principal
from vnet.controller.service import store, views
from vnet.controller.service.agent_access import AgentAccesses
from vnet.controller.service.database import Database
from vnet.controller.southbound import AddRoutes, CreateNetwork, CreateRouter, InventoryEdit
from vnet.model import controller_api as api
from vnet.model.check import check, subnet_overlaps
from vnet.model.mtu import network_mtu
from vnet.model.srv6 import locator, locator_routes, router_numbers
from vnet.model.topology import (
    ControllerSection,
    EndHost,
    Interface,
    Topology,
    VirtualNetwork,
    VirtualRouter,
)
from vnet.model.underlay import underlay_addressing

log = logging.getLogger(__name__)
Edits = dict[str, list[InventoryEdit]]  # host -> its edits


class InventoryCache:
    """The inventory as the database holds it (`controller.inventory.read`), read when
    first asked and kept until `forget` (a tenant, network, VR or end host was added)."""

    def __init__(self, db: Database):
        self.db = db
        self._held: Inventory | None = None
        self._lock = asyncio.Lock()

    async def get(self) -> Inventory:
        async with self._lock:
            if self._held is None:
                self._held = await self.db.read(inventory_db.read)
            return self._held

    async def forget(self) -> None:
        """The inventory changed: read it again when next asked."""
        async with self._lock:
            self._held = None


class InventoryChanges:
    """Networks, VRs and end hosts created through the API, and VRs put back at start."""

    def __init__(
        self, db: Database, cache: InventoryCache, agents: Agents, accesses: AgentAccesses
    ):
        self.db = db
        self.cache = cache
        self.agents = agents
        self.accesses = accesses

    async def create_router(
        self, who: Principal, tenant: str, request: api.RouterRequest
    ) -> api.RouterView:
        who.require_tenant(tenant)
        await self.db.read(lambda s: store.tenant_row(s, tenant))
        topo = (await self.cache.get()).topology
        require_free_node_name(topo, request.name)
        for k, itf in enumerate(request.interfaces):
            tenant_network(topo, tenant, itf.network, f"interfaces[{k}].network")
        if request.host is not None and request.host not in self.agents.hosts:
            raise NotFound(
                f"unknown host {request.host!r} (no agent)", field="host", code="unknown-host"
            )
        interfaces = [
            Interface(network=i.network, ipv4=i.ipv4, ipv6=i.ipv6) for i in request.interfaces
        ]
        # the model's checks do not depend on the host (but for index clashes, none: the agent
        # picks the index), so bad addresses are refused before placement is asked
        some_host = request.host or (topo.hosts[0].name if topo.hosts else "")
        vr = VirtualRouter(name=request.name, host=some_host, index=None, interfaces=interfaces)
        require_valid(_with(topo, routers=[*topo.routers, vr]), "interfaces", topo)
        host = request.host or await self._place(topo)
        vr = vr.model_copy(update={"host": host})
        edits = _router_edits(_with(topo, routers=[*topo.routers, vr]), vr)
        await self._realise(edits, lambda t: _with(t, routers=[*t.routers, vr]))
        return api.RouterView(
            tenant=tenant, name=vr.name, host=host, networks=[i.network for i in vr.interfaces]
        )

    async def create_network(
        self, who: Principal, tenant: str, request: api.NetworkRequest
    ) -> api.NetworkView:
        who.require_tenant(tenant)
        await self.db.read(lambda s: store.tenant_row(s, tenant))
        topo = (await self.cache.get()).topology
        if any(n.name == request.name for n in topo.networks):
            raise Conflict(f"a network named {request.name!r} exists", field="name")
        for net in topo.networks:
            if net.vni == request.vni:
                raise Conflict(f"VNI {request.vni} is used by network {net.name!r}", field="vni")
        for k, host in enumerate(request.hosts):
            if host not in self.agents.hosts:
                raise NotFound(
                    f"unknown host {host!r} (no agent)", field=f"hosts[{k}]", code="unknown-host"
                )
        net = VirtualNetwork(tenant=tenant, **request.model_dump(exclude_none=True))
        wanted = _with(topo, networks=[*topo.networks, net])
        _require_free_subnets(wanted, net)
        _require_declared(topo, tenant)
        require_valid(wanted, "name", topo)
        carriers = list(request.hosts) or [
            h.name for h in topo.hosts if h.name in self.agents.hosts
        ]
        require_provisioning(self.accesses, carriers)
        edits = _network_edits(wanted, net, carriers)
        await self._realise(edits, lambda t: _with(t, networks=[*t.networks, net]))
        # as listed: with the guarantee rows the inventory wrote for the links it crosses
        shown = views.networks((await self.cache.get()).topology, tenant)
        return next(n for n in shown if n.name == net.name)

    async def create_endhost(
        self, who: Principal, tenant: str, request: api.EndHostRequest
    ) -> api.EndHostView:
        """Held in the database only: the machine is the tenant's, attached by the operator to
        the network's bridge on its host; no agent holds end hosts."""
        who.require_tenant(tenant)
        await self.db.read(lambda s: store.tenant_row(s, tenant))
        topo = (await self.cache.get()).topology
        require_free_node_name(topo, request.name)
        tenant_network(topo, tenant, request.network, "network")
        if request.host not in {h.name for h in topo.hosts}:
            raise NotFound(f"unknown host {request.host!r}", field="host", code="unknown-host")
        endhost = EndHost(**request.model_dump(exclude_none=True))
        require_valid(_with(topo, endhosts=[*topo.endhosts, endhost]), "name", topo)
        await self._realise({}, lambda t: _with(t, endhosts=[*t.endhosts, endhost]))
        shown = views.endhosts((await self.cache.get()).topology, tenant)
        return next(e for e in shown if e.name == endhost.name)

    async def adopt_router(self, vr: VirtualRouter) -> None:
        """A VR its host's agent holds already, checked by the caller (adoption.py), into the
        inventory: the routes to and from its SRv6 locator on the agents, and the database's
        row, in one transaction."""
        topo = (await self.cache.get()).topology
        edits = _router_edits(_with(topo, routers=[*topo.routers, vr]), vr, existing=True)
        await self._realise(edits, lambda t: _with(t, routers=[*t.routers, vr]))

    async def _place(self, topo: Topology) -> str:
        inv = await self.cache.get()
        held = await self.db.read(ledger.held_by_direction)
        candidates = [h.name for h in topo.hosts if h.name in self.agents.hosts]
        if not candidates:
            raise Conflict("no host has an agent to place the VR on", field="host")
        routers_on: dict[str, int] = {}
        for vr in topo.routers:
            routers_on[vr.host] = routers_on.get(vr.host, 0) + 1
        return choose_host(candidates, inv.links, held, routers_on)

    async def _realise(self, edits: Edits, extended: Callable[[Topology], Topology]) -> None:
        """The agents' transaction; the database appends `extended(held topology)` inside it."""

        def append(session: Session) -> None:
            inventory_db.lock_for_append(session)  # concurrent requests append one at a time
            held = inventory_db.read(session).topology
            wanted = extended(held)
            try:  # another request may have taken the name meanwhile
                require_valid(wanted, "name", held)
            except BadRequest as err:
                raise Conflict(err.reason, field=err.field) from None
            inventory_db.append(session, wanted)

        async def on_committed() -> None:
            # retry: a concurrent request's row (same name, on PostgreSQL another controller's)
            # makes this one's insert fail; the redo reads it and refuses with a Conflict
            await self.db.write(append, retry=True)

        await change_agents(self.agents, self.cache, edits, on_committed)

    async def restore_routers(self) -> dict[str, list[str]]:
        """Put back every VR the database holds that its host's agent does not (the database is
        the truth: a controller that died between the agents' commit and confirm of a VR's
        creation left it in the database, and the agent rolled back at its timeout). Host ->
        the VRs put back; a host that cannot be reached or refuses is logged and left alone."""
        topo = (await self.cache.get()).topology
        restored: dict[str, list[str]] = {}
        for host in sorted(self.agents.hosts):
            wanted = [vr for vr in topo.routers if vr.host == host]
            if not wanted:
                continue
            try:
                held = set(await self.agents.routers(host))
                missing = [vr for vr in wanted if vr.name not in held]
                if missing:
                    await self.agents.change_inventory(
                        f"inv-{uuid.uuid4().hex[:12]}", {host: _creates(missing)}
                    )
                    restored[host] = [vr.name for vr in missing]
                    log.warning(
                        "host %s lacked VR(s) %s: put back", host, ", ".join(restored[host])
                    )
            except AgentError as err:  # the others still start
                log.warning("restoring VRs on host %s: %s", host, err)
        return restored


async def change_agents(
    agents: Agents,
    cache: InventoryCache,
    edits: Edits,
    on_committed: Callable[[], Awaitable[None]],
) -> None:
    """`edits` in one transaction across the agents, `on_committed` (the database's part)
    inside it; a refusal as the service's error. The cached inventory is read again after."""
    try:
        await agents.change_inventory(f"inv-{uuid.uuid4().hex[:12]}", edits, on_committed)
    except AgentError as err:
        raise AgentRefused(err.host, err.reason, err.tag) from None
    except InventoryError as err:
        raise Conflict(str(err)) from None
    finally:
        await cache.forget()


def _router_edits(topo: Topology, new: VirtualRouter, existing: bool = False) -> Edits:
    """The new VR with its routes to its tenant's other VRs' SRv6 locators, and the routes
    those VRs gain to the new one's (`locator_routes`, as a lab with a controller gives its
    VRs from the start): without them a connection's segments lead nowhere. `existing`: the
    VR is on its host already (adopted): it gains its routes like the others."""
    with_controller = {"controller": ControllerSection.model_validate({})}
    routed = locator_routes(topo.model_copy(update=with_controller))
    before = {vr.name: vr for vr in topo.routers}
    per_host: Edits = {}
    for vr in routed.routers:
        if vr.name == new.name and not existing:
            per_host.setdefault(vr.host, []).append(CreateRouter(vr))
            continue
        gained = [r for r in vr.routes if r not in before[vr.name].routes]
        if gained:
            per_host.setdefault(vr.host, []).append(AddRoutes(vr.name, tuple(gained)))
    return per_host


def _network_edits(topo: Topology, net: VirtualNetwork, carriers: list[str]) -> Edits:
    """Each carrier's edit: the network with its MTU and the other carriers' VTEPs."""
    loopback = underlay_addressing(topo).loopback
    carried = net.model_copy(update={"mtu": network_mtu(topo, net), "hosts": []})
    return {
        host: [CreateNetwork(carried, tuple(str(loopback[h]) for h in carriers if h != host))]
        for host in carriers
    }


# -- checks --------------------------------------------------------------------------------


def _with(topo: Topology, **lists: list) -> Topology:
    return topo.model_copy(update=lists)


def require_free_node_name(topo: Topology, name: str) -> None:
    for kind, nodes in (("VR", topo.routers), ("end host", topo.endhosts)):
        if any(n.name == name for n in nodes):
            raise Conflict(f"the name {name!r} is used by a {kind}", field="name")


def tenant_network(topo: Topology, tenant: str, name: str, field: str) -> VirtualNetwork:
    """The tenant's network `name`; another tenant's is as unknown as a missing one."""
    for net in topo.networks:
        if net.name == name and net.tenant == tenant:
            return net
    raise NotFound(
        f"tenant {tenant!r} has no network {name!r}", field=field, code="unknown-network"
    )


def require_provisioning(accesses: AgentAccesses, carriers: list[str]) -> None:
    """Refused before any agent is asked: a host whose networks come from its lab's topology
    file (its agent would refuse the edit)."""
    fixed = accesses.networks_fixed()
    if lab_hosts := [h for h in carriers if h in fixed]:
        raise Conflict(
            f"the virtual networks of {', '.join(lab_hosts)} are provisioned by its lab; "
            "change the network in the lab's topology file instead",
            field="hosts",
            code="provisioned-by-lab",
        )


def _require_declared(topo: Topology, tenant: str) -> None:
    """An inventory that declares tenants takes networks of those only (the model refuses
    any other as a typo, and a tenant declared later would renumber the SRv6 locators): a
    tenant made through the API there is refused here, as a conflict with the inventory."""
    declared = [t.name for t in topo.tenants]
    if declared and tenant not in declared:
        raise Conflict(
            f"tenant {tenant!r} is not declared in the inventory file, which declares "
            f"{', '.join(declared)}: declare it there to give it networks",
            field="tenant",
            code="undeclared-tenant",
        )


def require_valid(topo: Topology, field: str, before: Topology | None = None) -> None:
    """The model's own checks of the inventory with the new object (addresses inside the
    network's prefix, naming rules, ...); and, given the inventory `before`, that no VR's
    SRv6 locator moves (live connections' SIDs derive from them)."""
    problems = check(topo)
    if problems:
        raise BadRequest("; ".join(str(p) for p in problems), field=field)
    if before is not None:
        moved = renumbered(before, topo)
        if moved:
            raise Conflict(
                f"this would renumber the SRv6 locators of {', '.join(moved)} (an undeclared"
                " tenant's first network is numbered by its name among the undeclared ones);"
                " declare the tenant in the inventory file instead",
                field="tenant",
            )


def renumbered(before: Topology, after: Topology) -> list[str]:
    """The VRs of `before` still in `after` whose SRv6 locator differs there."""
    old, new = router_numbers(before), router_numbers(after)
    return [
        vr.name
        for vr in before.routers
        if vr.name in new and locator(before, vr.name, old) != locator(after, vr.name, new)
    ]


def _creates(routers: Sequence[VirtualRouter]) -> list[InventoryEdit]:
    return [CreateRouter(vr) for vr in routers]


def _require_free_subnets(wanted: Topology, net: VirtualNetwork) -> None:
    """A subnet another network of the tenant holds is a conflict with what exists (409, as
    a name or a VNI in use), not a malformed request: the same body fits in another tenant."""
    clash = subnet_overlaps(wanted.networks).get(len(wanted.networks) - 1, [])
    if clash:
        family, theirs = clash[0]
        raise Conflict(
            f"{family} {getattr(net, family)} overlaps {getattr(theirs, family)} of network "
            f"{theirs.name!r} in tenant {net.tenant!r}",
            field=family,
            code="subnet-in-use",
        )
