"""The inventory as the API shows it, filtered by who asks.

Visibility: the provider sees everything; a tenant administrator sees the physical hosts and
links (with their totals, which name no tenant) and only its own tenant's networks, VRs, end
hosts and connections, never another tenant's. Every list here is built from the topology the
controller loaded (`Inventory.topology`), so the views and the planner read one source.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from vnet.controller.inventory import LinkInfo, link_name
from vnet.controller.principal import Principal
from vnet.controller.service.opstate import Key
from vnet.model.controller_api import (
    ElementStatus,
    EndHostView,
    HostView,
    LinkDirection,
    LinkView,
    NetworkView,
    RouterView,
)
from vnet.model.qos import network_links
from vnet.model.srv6 import network_tenants, router_tenant
from vnet.model.topology import PhysicalHost, Topology

Arc = tuple[str, bool]  # (link name, forward a -> b)


def visible_tenant(who: Principal, tenant: str | None) -> str | None:
    """The tenant a list is filtered to: a tenant administrator's own, whatever it asked
    (asking for another tenant is Forbidden), or the provider's choice (None: all)."""
    if tenant is not None:
        who.require_tenant(tenant)
        return tenant
    return None if who.is_provider else who.tenant


def networks(topo: Topology, tenant: str | None) -> list[NetworkView]:
    crossing = network_links(topo)
    out = []
    for net in topo.networks:
        if tenant is not None and net.tenant != tenant:
            continue
        guarantees = {}
        if net.bandwidth is not None:
            for j in sorted(crossing.get(net.name, ())):
                link = topo.links[j]
                guarantees[link_name(link)] = net.bandwidth
        out.append(
            NetworkView(tenant=net.tenant, name=net.name, vni=net.vni, guarantees=guarantees)
        )
    return out


def routers(topo: Topology, tenant: str | None) -> list[RouterView]:
    out = []
    for vr in topo.routers:
        owner = router_tenant(topo, vr)
        if tenant is not None and owner != tenant:
            continue
        nets = [i.network for i in vr.interfaces]
        out.append(RouterView(tenant=owner, name=vr.name, host=vr.host, networks=nets))
    return out


def endhosts(topo: Topology, tenant: str | None) -> list[EndHostView]:
    owners = network_tenants(topo)
    out = []
    for eh in topo.endhosts:
        owner = owners.get(eh.network)
        if tenant is not None and owner != tenant:
            continue
        addresses = [str(a.ip) for a in (eh.ipv4, eh.ipv6) if a is not None]
        out.append(
            EndHostView(
                tenant=owner, name=eh.name, host=eh.host, network=eh.network, addresses=addresses
            )
        )
    return out


def hosts(
    shown: Sequence[PhysicalHost],
    endpoints: Mapping[str, str],
    reachable: Mapping[str, bool],
    states: Mapping[Key, ElementStatus] | None = None,
    unmanaged: Mapping[str, set[str]] | None = None,
) -> list[HostView]:
    known = states or {}
    unmanaged = unmanaged or {}
    return [
        HostView(
            name=h.name,
            agent=endpoints.get(h.name, ""),
            reachable=reachable.get(h.name),
            status=known.get(("host", h.name), ElementStatus()),
            unmanaged=sorted(unmanaged.get(h.name, ())),
        )
        for h in shown
    ]


def links(
    infos: Mapping[str, LinkInfo],
    held: Mapping[Arc, int],
    utilisation: Mapping[Arc, int],
    states: Mapping[Key, ElementStatus] | None = None,
) -> list[LinkView]:
    """Every link with, per direction, what connections hold, what admission may still hand
    out (`capacity_bps` is what connections may have in all, the rate less the management
    share) and the rate measured from the agents' counters."""
    out = []
    for name, info in sorted(infos.items()):
        directions = []
        for forward, (src, dst) in ((True, (info.a, info.b)), (False, (info.b, info.a))):
            reserved = held.get((name, forward), 0)
            directions.append(
                LinkDirection(
                    direction=f"{src} -> {dst}",
                    reserved_bps=reserved,
                    free_bps=max(info.capacity - reserved, 0),
                    utilisation_bps=utilisation.get((name, forward)),
                )
            )
        status = (states or {}).get(("link", name), ElementStatus())
        out.append(
            LinkView(
                name=name,
                a=info.a,
                b=info.b,
                capacity_bps=info.capacity,
                directions=directions,
                status=status,
            )
        )
    return out
