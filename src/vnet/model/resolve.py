"""Fill in what a topology leaves implicit: VR indexes and automatic routes."""

from __future__ import annotations

from collections.abc import Container
from ipaddress import IPv4Network, IPv6Network
from typing import Any

from vnet.model.srv6 import assign_connection_ids, locator_routes
from vnet.model.topology import EndHost, Route, Topology, VirtualRouter


def next_free_index(used: Container[int], start: int = 1) -> int:
    """The lowest unused VR index (the paper's vmConfigNextAvailableVmIndex), from `start`
    on (below it, every index is known to be used)."""
    index = max(start, 1)
    while index in used:
        index += 1
    return index


def assign_indexes(topo: Topology) -> Topology:
    used: dict[str, set[int]] = {}
    for vr in topo.routers:
        if vr.index is not None:
            used.setdefault(vr.host, set()).add(vr.index)
    routers = []
    for vr in topo.routers:
        if vr.index is None:
            host_used = used.setdefault(vr.host, set())
            vr = vr.model_copy(update={"index": next_free_index(host_used)})
            host_used.add(vr.index)  # type: ignore[arg-type]
        routers.append(vr)
    return topo.model_copy(update={"routers": routers})


def auto_routes(topo: Topology) -> Topology:
    """Static routes along shortest paths (hop count, ties by file order).

    Only for tenants declared with `routing: auto`, and not for their VRs that run
    OSPF; routes written in the file win over derived ones with the same destination.
    """
    auto = {t.name for t in topo.tenants if t.routing == "auto"}
    if not auto:
        return topo
    import networkx as nx  # 0.25 s to import: only when routes are derived

    tenant_of = {n.name: n.tenant for n in topo.networks}
    graphs = {fam: _family_graph(topo, fam, tenant_of, auto, nx) for fam in FAMILIES}
    # a VR that runs OSPF learns its routes: derived static ones would override them
    # (and outlive the failure OSPF routes around)
    routers = [
        vr if vr.runs_ospf else _with_routes(vr, topo, graphs, tenant_of, auto)
        for vr in topo.routers
    ]
    gateways = {r.name: r for r in routers}
    endhosts = [_with_default(eh, topo, gateways, tenant_of, auto) for eh in topo.endhosts]
    return topo.model_copy(update={"routers": routers, "endhosts": endhosts})


FAMILIES = ("ipv4", "ipv6")


def _family_graph(
    topo: Topology, fam: str, tenant_of: dict[str, str], auto: set[str], nx: Any
) -> Any:
    """Routers and networks joined where the router has an address of `fam` there.

    One graph per family, because a router without an IPv6 address on a network
    can neither send IPv6 into it nor be an IPv6 next hop there (a dual-stack
    network may hold IPv4-only routers): a path of one family must not cross it.
    """
    graph = nx.Graph()
    for vr in topo.routers:
        for itf in vr.interfaces:
            if tenant_of.get(itf.network) in auto and getattr(itf, fam) is not None:
                graph.add_edge(("vr", vr.name), ("net", itf.network), itf=itf)
    return graph


def _with_routes(
    vr: VirtualRouter,
    topo: Topology,
    graphs: dict[str, Any],
    tenant_of: dict[str, str],
    auto: set[str],
) -> VirtualRouter:
    if not vr.interfaces or tenant_of.get(vr.interfaces[0].network) not in auto:
        return vr
    attached = {itf.network for itf in vr.interfaces}
    explicit = {r.destination for r in vr.routes}
    routes = list(vr.routes)
    for fam in FAMILIES:
        for subnet, via in _family_routes(vr, topo, graphs[fam], fam, attached):
            if subnet not in explicit:
                routes.append(Route(to=subnet, via=via))
    return vr.model_copy(update={"routes": routes})


def _family_routes(
    vr: VirtualRouter, topo: Topology, graph: Any, fam: str, attached: set[str]
) -> list[tuple[Any, Any]]:
    """(subnet, next hop) of `fam` for every network reachable over `fam` paths."""
    me = ("vr", vr.name)
    if me not in graph:
        return []
    import networkx as nx

    paths = nx.single_source_shortest_path(graph, me)
    found = []
    for net in topo.networks:
        node = ("net", net.name)
        subnet = getattr(net, fam)
        if subnet is None or net.name in attached or node not in paths:
            continue
        # path: me, first network, next router, ...
        path = paths[node]
        first_net, next_vr = path[1][1], path[2][1]
        nexthop_itf = graph.edges[("vr", next_vr), ("net", first_net)]["itf"]
        found.append((subnet, getattr(nexthop_itf, fam).ip))
    return found


def _with_default(
    eh: EndHost,
    topo: Topology,
    routers: dict[str, VirtualRouter],
    tenant_of: dict[str, str],
    auto: set[str],
) -> EndHost:
    if tenant_of.get(eh.network) not in auto:
        return eh
    explicit = {r.destination for r in eh.routes}
    routes = list(eh.routes)
    for fam, default in (("ipv4", IPv4Network("0.0.0.0/0")), ("ipv6", IPv6Network("::/0"))):
        if getattr(eh, fam) is None or default in explicit:
            continue
        for vr in routers.values():
            gw = next((getattr(i, fam) for i in vr.interfaces if i.network == eh.network), None)
            if gw is not None:
                routes.append(Route(to="default", via=gw.ip))
                break
    return eh.model_copy(update={"routes": routes})


def resolve(topo: Topology) -> Topology:
    return locator_routes(assign_connection_ids(auto_routes(assign_indexes(topo))))
