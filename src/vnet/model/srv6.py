"""Connections as SRv6 tunnels: locators, SIDs, segment lists (checks: srv6_check.py).

Addressing (all derived, nothing to write by hand):

- every tenant with connections has a locator block, `tenants[k].locators` or
  fc00:<k>::/32 for the k-th tenant (file order);
- its n-th router (file order) owns the locator <block>:<n>::/48, and every other
  router of the tenant has a route to it (shortest path with `routing: auto`,
  to its direct neighbours with static routing: the paths are strict, so each
  segment is one hop away);
- connection c owns, at each router of its path, the SIDs <locator>::<c>:<f>:
  f = 0 is End (transit), 4 End.DX4 and 6 End.DX6 (decapsulate to the end host).

A tunnel (one direction of a connection) is: a policy rule in the ingress router
(source, destination, protocol, ports, incoming interface) that sends the flow to
the connection's own routing table, where one route encapsulates it with the
segment list [End of path[1], ..., End of path[-2], DX of path[-1]]. Changing the
path replaces that one route. The segments cost 40 + 8 + 16 per segment bytes,
so the end hosts' networks get an MTU that leaves room for them.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from ipaddress import IPv4Address, IPv6Address, IPv6Network
from typing import Any

from vnet.model.connection import Connection, Protocol
from vnet.model.topology import EndHost, Route, Topology, VirtualNetwork, VirtualRouter

DEFAULT_LOCATOR_BASE = IPv6Network("fc00::/16")
LOCATOR_LEN = 48
FUNC_END, FUNC_DX4, FUNC_DX6 = 0, 4, 6
# per-connection routing table and rule priority in the ingress router
TABLE_BASE = 0x10000
RULE_PRIORITY_BASE = 1000
SRV6_OVERHEAD = 40 + 8  # outer IPv6 header + segment routing header without segments
SEGMENT_BYTES = 16
MIN_MTU = {4: 576, 6: 1280}
PROTOCOL_NUMBERS = {"tcp": (6, 6), "udp": (17, 17), "sctp": (132, 132), "icmp": (1, 58)}


def overhead(segments: int) -> int:
    """Bytes an SRv6 encapsulation with `segments` segments adds to each packet."""
    return SRV6_OVERHEAD + SEGMENT_BYTES * segments


# -- addressing ------------------------------------------------------------------


def network_tenants(topo: Topology) -> dict[str, str]:
    return {n.name: n.tenant for n in topo.networks}


def router_tenant(
    topo: Topology, vr: VirtualRouter, tenants: Mapping[str, str] | None = None
) -> str | None:
    """The tenant of the VR's first interface's network. `tenants`: network_tenants(topo),
    for a caller asking about many VRs (building it is a pass over every network)."""
    if tenants is None:
        tenants = network_tenants(topo)
    return next((tenants[i.network] for i in vr.interfaces if i.network in tenants), None)


def tenant_numbers(topo: Topology) -> dict[str, int]:
    """Declared tenants in file order, then undeclared ones by name: 1, 2, ..."""
    names = [t.name for t in topo.tenants]
    names += sorted({n.tenant for n in topo.networks} - set(names))
    return {name: k for k, name in enumerate(names, start=1)}


def locator_block(topo: Topology, tenant: str) -> IPv6Network:
    declared = next((t for t in topo.tenants if t.name == tenant), None)
    if declared is not None and declared.locators is not None:
        return declared.locators
    k = tenant_numbers(topo).get(tenant, 0)
    return IPv6Network((int(DEFAULT_LOCATOR_BASE.network_address) + (k << 96), 32))


def router_numbers(topo: Topology) -> dict[str, int]:
    """Router -> its 1-based number among its tenant's routers (file order)."""
    counters: dict[str | None, int] = {}
    out: dict[str, int] = {}
    tenants = network_tenants(topo)
    for vr in topo.routers:
        tenant = router_tenant(topo, vr, tenants)
        counters[tenant] = counters.get(tenant, 0) + 1
        out[vr.name] = counters[tenant]
    return out


def locator(
    topo: Topology,
    router: str,
    numbers: dict[str, int] | None = None,
    tenants: Mapping[str, str] | None = None,
) -> IPv6Network:
    """`numbers`, `tenants`: router_numbers(topo) and network_tenants(topo), for a caller
    asking about many routers (each is a pass over the whole topology)."""
    vr = topo.router(router)
    block = locator_block(topo, router_tenant(topo, vr, tenants) or "")
    n = (numbers or router_numbers(topo))[router]
    return IPv6Network((int(block.network_address) + (n << (128 - LOCATOR_LEN)), LOCATOR_LEN))


FUNCTION_BITS = 16  # a SID: its router's locator, the connection's id, then a function


def sid(loc: IPv6Network, connection_id: int, function: int) -> IPv6Address:
    return IPv6Address(int(loc.network_address) + (connection_id << FUNCTION_BITS) + function)


def renumbered(one: IPv6Address, was: int, now: int) -> IPv6Address:
    """A SID of connection `was` as connection `now`'s: same router, same function."""
    return IPv6Address(int(one) + ((now - was) << FUNCTION_BITS))


def connection_sids(one: IPv6Address) -> IPv6Network:
    """The /112 that holds every SID of one connection at one router, from any of them."""
    return IPv6Network((int(one) >> FUNCTION_BITS << FUNCTION_BITS, 128 - FUNCTION_BITS))


# -- adjacency and gateways ------------------------------------------------------


def shared_network(a: VirtualRouter, b: VirtualRouter) -> tuple[int, int] | None:
    """Positions of a's and b's interfaces in the first network they share over IPv6."""
    theirs = {itf.network: k for k, itf in enumerate(b.interfaces) if itf.ipv6 is not None}
    for k, itf in enumerate(a.interfaces):
        if itf.ipv6 is not None and itf.network in theirs:
            return k, theirs[itf.network]
    return None


def interface_in(vr: VirtualRouter, network: str) -> int | None:
    return next((k for k, i in enumerate(vr.interfaces) if i.network == network), None)


def gateway(topo: Topology, host: EndHost, dst: IPv4Address | IPv6Address) -> str | None:
    """The router `host` sends packets for `dst` to (as resolve() will route it)."""
    version = dst.version
    routes = [r for r in host.routes if r.destination.version == version and dst in r.destination]
    via = None
    if routes:
        via = max(routes, key=lambda r: r.destination.prefixlen).via
    else:
        auto = any(
            t.name == topo.network(host.network).tenant and t.routing == "auto"
            for t in topo.tenants
        )
        if not auto:
            return None
        fam = "ipv4" if version == 4 else "ipv6"
        for vr in topo.routers:
            k = interface_in(vr, host.network)
            if k is not None and getattr(vr.interfaces[k], fam) is not None:
                return vr.name
        return None
    for vr in topo.routers:
        k = interface_in(vr, host.network)
        if k is not None:
            addr = getattr(vr.interfaces[k], "ipv4" if version == 4 else "ipv6")
            if addr is not None and addr.ip == via:
                return vr.name
    return None


# -- tunnels ---------------------------------------------------------------------


@dataclass(frozen=True)
class Tunnel:
    """One direction of a connection: everything the substrate needs to build it."""

    connection: str
    id: int
    reverse: bool
    tenant: str
    path: tuple[str, ...]
    src: str  # end host
    dst: str
    lan_ifname: str  # ingress router's interface towards src (the rule's iif)
    out_ifname: str  # ingress router's interface towards path[1] (the shaper)
    egress_ifname: str  # egress router's interface towards dst
    families: tuple[int, ...]
    # family -> the end hosts' addresses (those they have)
    src_addr: dict[int, IPv4Address | IPv6Address] = field(hash=False, compare=False)
    dst_addr: dict[int, IPv4Address | IPv6Address] = field(hash=False, compare=False)
    protocol: Protocol | None
    src_port: int | None
    dst_port: int | None
    bandwidth: int
    transit: tuple[tuple[str, IPv6Address], ...]  # (router, End SID) for path[1:-1]
    egress_sids: dict[int, IPv6Address] = field(hash=False, compare=False)  # family -> DX SID

    @property
    def ingress(self) -> str:
        return self.path[0]

    @property
    def egress(self) -> str:
        return self.path[-1]

    @property
    def table(self) -> int:
        return TABLE_BASE + self.id

    @property
    def priority(self) -> int:
        return RULE_PRIORITY_BASE + self.id

    def segments(self, family: int) -> tuple[IPv6Address, ...]:
        return (*(s for _, s in self.transit), self.egress_sids[family])

    @property
    def overhead(self) -> int:
        return overhead(len(self.path) - 1)


def families(conn: Connection, a: EndHost, b: EndHost) -> tuple[int, ...]:
    fams = []
    for version, fam in ((4, "ipv4"), (6, "ipv6")):
        if conn.family in (None, "both", fam) and getattr(a, fam) and getattr(b, fam):
            fams.append(version)
    return tuple(fams)


def tunnels(
    topo: Topology,
    numbers: dict[str, int] | None = None,
    tenants: Mapping[str, str] | None = None,
) -> list[Tunnel]:
    """Every tunnel of a checked and resolved topology (ids assigned). `numbers`,
    `tenants`: as for `locator`."""
    numbers = router_numbers(topo) if numbers is None else numbers
    tenants = network_tenants(topo) if tenants is None else tenants
    hosts = {e.name: e for e in topo.endhosts}
    out = []
    for conn in topo.connections:
        assert conn.id is not None, "resolve() assigns every connection an id"
        a, b = hosts[conn.a], hosts[conn.b]
        directions = [(a, b, tuple(conn.path), conn.src_port, conn.dst_port, False)]
        if conn.bidirectional:
            directions.append(
                (b, a, tuple(reversed(conn.path)), conn.dst_port, conn.src_port, True)
            )
        for src, dst, path, sport, dport, reverse in directions:
            routers = [topo.router(r) for r in path]
            locs = [locator(topo, r, numbers, tenants) for r in path]
            first = shared_network(routers[0], routers[1])
            assert first is not None
            lan = interface_in(routers[0], src.network)
            egress = interface_in(routers[-1], dst.network)
            assert lan is not None and egress is not None
            fams = families(conn, src, dst)
            out.append(
                Tunnel(
                    connection=conn.name,
                    id=conn.id,
                    reverse=reverse,
                    tenant=topo.network(src.network).tenant,
                    path=path,
                    src=src.name,
                    dst=dst.name,
                    lan_ifname=routers[0].ifname(lan),
                    out_ifname=routers[0].ifname(first[0]),
                    egress_ifname=routers[-1].ifname(egress),
                    families=fams,
                    src_addr=_addresses(src),
                    dst_addr=_addresses(dst),
                    protocol=conn.protocol,
                    src_port=sport,
                    dst_port=dport,
                    bandwidth=conn.bandwidth,
                    transit=tuple(
                        (r, sid(loc, conn.id, FUNC_END))
                        for r, loc in zip(path[1:-1], locs[1:-1], strict=True)
                    ),
                    egress_sids={
                        4: sid(locs[-1], conn.id, FUNC_DX4),
                        6: sid(locs[-1], conn.id, FUNC_DX6),
                    },
                )
            )
    return out


def _addresses(eh: EndHost) -> dict[int, IPv4Address | IPv6Address]:
    """Family -> the end host's address in it (the families it has)."""
    found: dict[int, IPv4Address | IPv6Address] = {}
    if eh.ipv4 is not None:
        found[4] = eh.ipv4.ip
    if eh.ipv6 is not None:
        found[6] = eh.ipv6.ip
    return found


# -- resolve: ids and locator routes --------------------------------------------


def assign_connection_ids(topo: Topology) -> Topology:
    if not topo.connections:
        return topo
    used = {c.id for c in topo.connections if c.id is not None}
    conns = []
    for conn in topo.connections:
        if conn.id is None:
            n = 1
            while n in used:
                n += 1
            used.add(n)
            conn = conn.model_copy(update={"id": n})
        conns.append(conn)
    return topo.model_copy(update={"connections": conns})


def srv6_tenants(topo: Topology, tenants: Mapping[str, str] | None = None) -> set[str]:
    """Tenants that have at least one connection (and so locators and routes to them).

    With a controller every tenant with an IPv6 network may get connections at any time, so
    its VRs need locators and routes to each other's locators from the start. `tenants`:
    network_tenants(topo), for a caller that knows it."""
    if topo.controller is not None:
        return {n.tenant for n in topo.networks if n.ipv6 is not None}
    tenants = network_tenants(topo) if tenants is None else tenants
    hosts = {e.name: e for e in topo.endhosts}
    return {
        tenants[hosts[c.a].network]
        for c in topo.connections
        if c.a in hosts and hosts[c.a].network in tenants
    }


def locator_routes(topo: Topology) -> Topology:
    """Give every router of a tenant with connections a route to every locator it needs.

    `routing: auto`: to every other router's locator along a shortest path over
    the IPv6 networks; static: to each direct neighbour's locator.
    """
    wanted = srv6_tenants(topo)
    if not wanted:
        return topo
    auto = {t.name for t in topo.tenants if t.routing == "auto"}
    numbers = router_numbers(topo)
    owners = network_tenants(topo)
    tenant_of = {vr.name: router_tenant(topo, vr, owners) for vr in topo.routers}
    graph = _ipv6_graph(topo, wanted, tenant_of)
    routers = []
    for vr in topo.routers:
        tenant = tenant_of[vr.name]
        if tenant not in wanted or ("vr", vr.name) not in graph:
            routers.append(vr)
            continue
        peers = [o for o in topo.routers if o.name != vr.name and tenant_of[o.name] == tenant]
        if tenant in auto:
            found = _shortest_path_hops(graph, vr, peers)
        else:
            found = _neighbour_hops(vr, peers)
        explicit = {r.destination for r in vr.routes}
        routes = list(vr.routes)
        for other, via in found:
            dst = locator(topo, other.name, numbers, owners)
            if dst not in explicit:
                routes.append(Route(to=dst, via=via))
        routers.append(vr.model_copy(update={"routes": routes}))
    return topo.model_copy(update={"routers": routers})


def _ipv6_graph(topo: Topology, wanted: set[str], tenant_of: dict[str, str | None]) -> Any:
    """Routers of the wanted tenants and the networks they reach over IPv6."""
    import networkx as nx  # only topologies with connections need it

    graph = nx.Graph()
    for vr in topo.routers:
        if tenant_of[vr.name] not in wanted:
            continue
        for itf in vr.interfaces:
            if itf.ipv6 is not None:
                graph.add_edge(("vr", vr.name), ("net", itf.network), itf=itf)
    return graph


def _shortest_path_hops(
    graph: Any, vr: VirtualRouter, peers: list[VirtualRouter]
) -> Iterator[tuple[VirtualRouter, IPv6Address]]:
    """(peer, next hop's IPv6 address) along a shortest path to each reachable peer."""
    import networkx as nx

    paths = nx.single_source_shortest_path(graph, ("vr", vr.name))
    for other in peers:
        node = ("vr", other.name)
        if node not in paths:
            continue
        path = paths[node]
        net, nxt = path[1][1], path[2][1]
        yield other, graph.edges[("vr", nxt), ("net", net)]["itf"].ipv6.ip


def _neighbour_hops(
    vr: VirtualRouter, peers: list[VirtualRouter]
) -> Iterator[tuple[VirtualRouter, IPv6Address]]:
    """(peer, its IPv6 address in the shared network) for each direct neighbour."""
    for other in peers:
        shared = shared_network(vr, other)
        if shared is not None:
            yield other, other.interfaces[shared[1]].ipv6.ip  # type: ignore[union-attr]


# -- MTU -------------------------------------------------------------------------


def endpoint_mtu_cap(
    topo: Topology, network: str, base_mtu: Callable[[VirtualNetwork], int]
) -> int | None:
    """The largest MTU for hosts in `network` so that their tunnels' packets still fit.

    `base_mtu(net)` is the network's MTU without this cap. None: no tunnel starts there.
    """
    cap = None
    hosts = {e.name: e for e in topo.endhosts}
    try:
        routers = {vr.name: vr for vr in topo.routers}
        for conn in topo.connections:
            ends = [(conn.a, conn.path)]
            if conn.bidirectional:
                ends.append((conn.b, list(reversed(conn.path))))
            for src, path in ends:
                if src not in hosts or hosts[src].network != network:
                    continue
                limit = path_mtu(topo, routers, path, base_mtu)
                if limit is not None:
                    room = limit - overhead(len(path) - 1)
                    cap = room if cap is None else min(cap, room)
    except (KeyError, AssertionError):
        return cap  # an unchecked topology: the checks report what is wrong
    return cap


def path_mtu(
    topo: Topology,
    routers: dict[str, VirtualRouter],
    path: Sequence[str],
    base_mtu: Callable[[VirtualNetwork], int],
) -> int | None:
    mtus = []
    for u, v in itertools.pairwise(path):
        if u not in routers or v not in routers:
            return None
        shared = shared_network(routers[u], routers[v])
        if shared is None:
            return None
        mtus.append(base_mtu(topo.network(routers[u].interfaces[shared[0]].network)))
    return min(mtus) if mtus else None
