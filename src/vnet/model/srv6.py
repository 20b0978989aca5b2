"""Connections as SRv6 tunnels: locators, SIDs, segment lists, and their checks.

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
from collections.abc import Iterator
from dataclasses import dataclass, field
from ipaddress import IPv4Address, IPv6Address, IPv6Network

from vnet.model.connection import PORT_PROTOCOLS, Connection
from vnet.model.errors import Problem
from vnet.model.qos import Demand, admission_problems, underlay_paths
from vnet.model.topology import EndHost, Route, Topology, VirtualRouter

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


def router_tenant(topo: Topology, vr: VirtualRouter) -> str | None:
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
    for vr in topo.routers:
        tenant = router_tenant(topo, vr)
        counters[tenant] = counters.get(tenant, 0) + 1
        out[vr.name] = counters[tenant]
    return out


def locator(topo: Topology, router: str, numbers: dict[str, int] | None = None) -> IPv6Network:
    vr = topo.router(router)
    block = locator_block(topo, router_tenant(topo, vr) or "")
    n = (numbers or router_numbers(topo))[router]
    return IPv6Network((int(block.network_address) + (n << (128 - LOCATOR_LEN)), LOCATOR_LEN))


def sid(loc: IPv6Network, connection_id: int, function: int) -> IPv6Address:
    return IPv6Address(int(loc.network_address) + (connection_id << 16) + function)


def connection_sids(loc: IPv6Network, connection_id: int) -> IPv6Network:
    """The /112 holding every SID of one connection at one router."""
    return IPv6Network((int(sid(loc, connection_id, 0)), 112))


# -- adjacency and gateways ------------------------------------------------------


def shared_network(a: VirtualRouter, b: VirtualRouter) -> tuple[int, int] | None:
    """Positions of a's and b's interfaces in the first network they share over IPv6."""
    theirs = {itf.network: k for k, itf in enumerate(b.interfaces) if itf.ipv6 is not None}
    for k, itf in enumerate(a.interfaces):
        if itf.ipv6 is not None and itf.network in theirs:
            return k, theirs[itf.network]
    return None


def _interface_in(vr: VirtualRouter, network: str) -> int | None:
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
            k = _interface_in(vr, host.network)
            if k is not None and getattr(vr.interfaces[k], fam) is not None:
                return vr.name
        return None
    for vr in topo.routers:
        k = _interface_in(vr, host.network)
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
    src_addr: dict[int, str] = field(hash=False, compare=False)
    dst_addr: dict[int, str] = field(hash=False, compare=False)
    protocol: str | None
    src_port: int | None
    dst_port: int | None
    bandwidth: int
    transit: tuple[tuple[str, str], ...]  # (router, End SID) for path[1:-1]
    egress_sids: dict[int, str] = field(hash=False, compare=False)  # family -> DX SID
    first_hop_sids: str = ""  # the /112 of the first segment's router, for the shaper

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

    def segments(self, family: int) -> tuple[str, ...]:
        return (*(s for _, s in self.transit), self.egress_sids[family])

    @property
    def overhead(self) -> int:
        return overhead(len(self.path) - 1)


def _families(conn: Connection, a: EndHost, b: EndHost) -> tuple[int, ...]:
    fams = []
    for version, fam in ((4, "ipv4"), (6, "ipv6")):
        if conn.family in (None, "both", fam) and getattr(a, fam) and getattr(b, fam):
            fams.append(version)
    return tuple(fams)


def tunnels(topo: Topology) -> list[Tunnel]:
    """Every tunnel of a checked and resolved topology (ids assigned)."""
    numbers = router_numbers(topo)
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
            locs = [locator(topo, r, numbers) for r in path]
            first = shared_network(routers[0], routers[1])
            assert first is not None
            lan = _interface_in(routers[0], src.network)
            egress = _interface_in(routers[-1], dst.network)
            assert lan is not None and egress is not None
            fams = _families(conn, src, dst)
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
                    src_addr={
                        4: str(src.ipv4.ip) if src.ipv4 else "",
                        6: str(src.ipv6.ip) if src.ipv6 else "",
                    },
                    dst_addr={
                        4: str(dst.ipv4.ip) if dst.ipv4 else "",
                        6: str(dst.ipv6.ip) if dst.ipv6 else "",
                    },
                    protocol=conn.protocol,
                    src_port=sport,
                    dst_port=dport,
                    bandwidth=conn.bandwidth,
                    transit=tuple(
                        (r, str(sid(loc, conn.id, FUNC_END)))
                        for r, loc in zip(path[1:-1], locs[1:-1], strict=True)
                    ),
                    egress_sids={
                        4: str(sid(locs[-1], conn.id, FUNC_DX4)),
                        6: str(sid(locs[-1], conn.id, FUNC_DX6)),
                    },
                    first_hop_sids=str(connection_sids(locs[1], conn.id)),
                )
            )
    return out


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


def srv6_tenants(topo: Topology) -> set[str]:
    """Tenants that have at least one connection (and so locators)."""
    hosts = {e.name: e for e in topo.endhosts}
    tenants = network_tenants(topo)
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
    import networkx as nx

    auto = {t.name for t in topo.tenants if t.routing == "auto"}
    numbers = router_numbers(topo)
    tenant_of = {vr.name: router_tenant(topo, vr) for vr in topo.routers}
    graph = nx.Graph()
    for vr in topo.routers:
        if tenant_of[vr.name] not in wanted:
            continue
        for itf in vr.interfaces:
            if itf.ipv6 is not None:
                graph.add_edge(("vr", vr.name), ("net", itf.network), itf=itf)
    routers = []
    for vr in topo.routers:
        tenant = tenant_of[vr.name]
        me = ("vr", vr.name)
        if tenant not in wanted or me not in graph:
            routers.append(vr)
            continue
        explicit = {r.destination for r in vr.routes}
        routes = list(vr.routes)
        if tenant in auto:
            paths = nx.single_source_shortest_path(graph, me)
            for other in topo.routers:
                node = ("vr", other.name)
                if other.name == vr.name or tenant_of[other.name] != tenant or node not in paths:
                    continue
                path = paths[node]
                net, nxt = path[1][1], path[2][1]
                via = graph.edges[("vr", nxt), ("net", net)]["itf"].ipv6.ip
                dst = locator(topo, other.name, numbers)
                if dst not in explicit:
                    routes.append(Route(to=dst, via=via))
        else:
            for other in topo.routers:
                if other.name == vr.name or tenant_of[other.name] != tenant:
                    continue
                shared = shared_network(vr, other)
                if shared is None:
                    continue
                dst = locator(topo, other.name, numbers)
                if dst not in explicit:
                    via = other.interfaces[shared[1]].ipv6.ip  # type: ignore[union-attr]
                    routes.append(Route(to=dst, via=via))
        routers.append(vr.model_copy(update={"routes": routes}))
    return topo.model_copy(update={"routers": routers})


# -- MTU -------------------------------------------------------------------------


def endpoint_mtu_cap(topo: Topology, network: str, base_mtu) -> int | None:  # type: ignore[no-untyped-def]
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
                limit = _path_mtu(topo, routers, path, base_mtu)
                if limit is not None:
                    room = limit - overhead(len(path) - 1)
                    cap = room if cap is None else min(cap, room)
    except (KeyError, AssertionError):
        return cap  # an unchecked topology: the checks report what is wrong
    return cap


def _path_mtu(topo: Topology, routers: dict[str, VirtualRouter], path, base_mtu) -> int | None:  # type: ignore[no-untyped-def]
    mtus = []
    for u, v in itertools.pairwise(path):
        if u not in routers or v not in routers:
            return None
        shared = shared_network(routers[u], routers[v])
        if shared is None:
            return None
        mtus.append(base_mtu(topo.network(routers[u].interfaces[shared[0]].network)))
    return min(mtus) if mtus else None


# -- checks ----------------------------------------------------------------------


def connection_problems(topo: Topology) -> list[Problem]:
    """Connections that cannot be realised, each at its exact field."""
    if not topo.connections:
        return []
    problems: list[Problem] = []

    def add(loc: tuple, message: str, conn: Connection) -> None:  # type: ignore[type-arg]
        problems.append(Problem(("connections", *loc), message, f"connection {conn.name!r}"))

    hosts = {e.name: e for e in topo.endhosts}
    routers = {vr.name: vr for vr in topo.routers}
    nets = {n.name: n for n in topo.networks}
    names: dict[str, int] = {}
    ids: dict[int, str] = {}
    selectors: dict[tuple, str] = {}  # type: ignore[type-arg]
    valid: list[int] = []
    for i, conn in enumerate(topo.connections):
        before = len(problems)
        if conn.name in names:
            add(
                (i, "name"),
                f"duplicate connection name (first at connections[{names[conn.name]}])",
                conn,
            )
        names.setdefault(conn.name, i)
        if conn.id is not None:
            if conn.id in ids:
                add((i, "id"), f"id {conn.id} is already used by connection {ids[conn.id]!r}", conn)
            ids.setdefault(conn.id, conn.name)
        if conn.protocol not in PORT_PROTOCOLS and (conn.src_port or conn.dst_port):
            add((i, "protocol"), "ports need a protocol with ports: tcp, udp or sctp", conn)
        ends = {}
        for end in ("a", "b"):
            name = getattr(conn, end)
            eh = hosts.get(name)
            if eh is None:
                add((i, end), f"unknown end host {name!r}", conn)
            elif eh.network not in nets:
                pass  # reported at the end host
            else:
                ends[end] = eh
        if len(ends) < 2:
            continue
        a, b = ends["a"], ends["b"]
        ta, tb = nets[a.network].tenant, nets[b.network].tenant
        if a.name == b.name:
            add((i, "b"), "a connection joins two different end hosts", conn)
            continue
        if ta != tb:
            add(
                (i, "b"),
                f"end host {b.name!r} is in tenant {tb!r} (network {b.network!r}), outside "
                f"tenant {ta!r} of {a.name!r}: a connection stays inside one tenant's networks",
                conn,
            )
            continue
        if a.network == b.network:
            add(
                (i, "b"),
                f"{a.name!r} and {b.name!r} share network {a.network!r}: "
                "their traffic meets no router, so there is no path to pin",
                conn,
            )
            continue
        fams = _families(conn, a, b)
        if not fams:
            want = conn.family or "any family"
            add(
                (i, "family"),
                f"{a.name!r} and {b.name!r} have no address of {want} in common",
                conn,
            )
            continue
        # the path: known routers of this tenant, no repeats, each pair adjacent over IPv6
        path_ok = True
        seen: set[str] = set()
        for k, r in enumerate(conn.path):
            vr = routers.get(r)
            if vr is None:
                add((i, "path", k), f"unknown router {r!r}", conn)
                path_ok = False
            elif router_tenant(topo, vr) != ta:
                add(
                    (i, "path", k),
                    f"router {r!r} belongs to tenant "
                    f"{router_tenant(topo, vr)!r}, not to {ta!r} of the end hosts",
                    conn,
                )
                path_ok = False
            elif r in seen:
                add(
                    (i, "path", k),
                    f"router {r!r} appears twice; a path visits each router once",
                    conn,
                )
                path_ok = False
            seen.add(r)
        if not path_ok:
            continue
        for k, (u, v) in enumerate(zip(conn.path, conn.path[1:], strict=False)):
            if shared_network(routers[u], routers[v]) is None:
                common = sorted(
                    {i.network for i in routers[u].interfaces}
                    & {i.network for i in routers[v].interfaces}
                )
                why = (
                    f"they share {', '.join(common)} but not over IPv6, which SRv6 needs"
                    if common
                    else f"they share no network ({u}: "
                    f"{', '.join(i.network for i in routers[u].interfaces) or 'none'}; {v}: "
                    f"{', '.join(i.network for i in routers[v].interfaces) or 'none'})"
                )
                add(
                    (i, "path", k + 1),
                    f"{u} and {v} are not adjacent: {why}; consecutive "
                    "routers of a path must share a network",
                    conn,
                )
                path_ok = False
        if not path_ok:
            continue
        directions = [("a", a, b, conn.path[0], conn.path[-1], 0, len(conn.path) - 1)]
        if conn.bidirectional:
            directions.append(("b", b, a, conn.path[-1], conn.path[0], len(conn.path) - 1, 0))
        for end, src, dst, first, last, k_first, k_last in directions:
            if _interface_in(routers[first], src.network) is None:
                add(
                    (i, "path", k_first),
                    f"the path must start at a router of {src.name!r}'s "
                    f"network {src.network!r}; {first} has no interface there",
                    conn,
                )
                continue
            egress = _interface_in(routers[last], dst.network)
            if egress is None:
                add(
                    (i, "path", k_last),
                    f"the path must end at a router of {dst.name!r}'s "
                    f"network {dst.network!r}; {last} has no interface there",
                    conn,
                )
                continue
            for fam in fams:
                attr = "ipv4" if fam == 4 else "ipv6"
                dst_ip = getattr(dst, attr).ip
                gw = gateway(topo, src, dst_ip)
                if gw != first:
                    sends = f"to {gw}" if gw else "to no router (it has no route)"
                    add(
                        (i, "path", k_first),
                        f"{src.name!r} sends packets for {dst_ip} {sends}, "
                        f"so its tunnel cannot start at {first}",
                        conn,
                    )
                if getattr(routers[last].interfaces[egress], attr) is None:
                    add(
                        (i, "path", k_last),
                        f"{last} has no {attr} address in network "
                        f"{dst.network!r} to deliver to {dst.name!r}",
                        conn,
                    )
            key = (
                first,
                fams,
                src.name,
                dst.name,
                conn.protocol,
                conn.src_port if end == "a" else conn.dst_port,
                conn.dst_port if end == "a" else conn.src_port,
            )
            if key in selectors:
                add(
                    (i,),
                    f"the same traffic is already steered by connection {selectors[key]!r} "
                    "(same end hosts, protocol and ports); give one of them other ports",
                    conn,
                )
            selectors.setdefault(key, conn.name)
        if len(problems) == before:
            valid.append(i)
    if problems:
        return problems
    problems += _tenant_locator_problems(topo)
    problems += _mtu_problems(topo, valid)
    problems += admission_problems(topo, _demands(topo, valid))
    return problems


def _tenant_locator_problems(topo: Topology) -> list[Problem]:
    problems = []
    numbers = router_numbers(topo)
    for tenant in sorted(srv6_tenants(topo)):
        block = locator_block(topo, tenant)
        k = next((j for j, t in enumerate(topo.tenants) if t.name == tenant), None)
        loc = ("tenants", k, "locators") if k is not None else ("connections",)
        count = max(
            (numbers[vr.name] for vr in topo.routers if router_tenant(topo, vr) == tenant),
            default=0,
        )
        if block.prefixlen >= LOCATOR_LEN or count >= 2 ** (LOCATOR_LEN - block.prefixlen):
            problems.append(
                Problem(
                    loc,
                    f"locator block {block} of tenant {tenant!r} has no room "
                    f"for {count} routers' /{LOCATOR_LEN} locators",
                    f"tenant {tenant!r}",
                )
            )
            continue
        for net in topo.networks:
            if net.tenant == tenant and net.ipv6 is not None and net.ipv6.overlaps(block):
                problems.append(
                    Problem(
                        loc,
                        f"locator block {block} of tenant {tenant!r} overlaps "
                        f"network {net.name!r} ({net.ipv6}); set the tenant's "
                        "locators to a free prefix",
                        f"tenant {tenant!r}",
                    )
                )
    return problems


def _mtu_problems(topo: Topology, valid: list[int]) -> list[Problem]:
    from vnet.model.mtu import base_network_mtu

    problems = []
    routers = {vr.name: vr for vr in topo.routers}
    hosts = {e.name: e for e in topo.endhosts}
    for i in valid:
        conn = topo.connections[i]
        ends = [(conn.a, list(conn.path))]
        if conn.bidirectional:
            ends.append((conn.b, list(reversed(conn.path))))
        for src, path in ends:
            net = topo.network(hosts[src].network)
            limit = _path_mtu(topo, routers, path, lambda n: base_network_mtu(topo, n))
            if limit is None:
                continue
            extra = overhead(len(path) - 1)
            room = limit - extra
            fams = _families(conn, hosts[conn.a], hosts[conn.b])
            floor = max(MIN_MTU[f] for f in fams)
            if room < floor:
                problems.append(
                    Problem(
                        ("connections", i, "path"),
                        f"the path's {len(path) - 1} segments add {extra} bytes; with the path's "
                        f"MTU {limit} that leaves {room}, below the IPv{6 if 6 in fams else 4} "
                        "minimum "
                        f"{floor}: shorten the path or raise the underlay links' mtu",
                        f"connection {conn.name!r}",
                    )
                )
            elif net.mtu is not None and net.mtu > room:
                k = next(j for j, n in enumerate(topo.networks) if n.name == net.name)
                problems.append(
                    Problem(
                        ("networks", k, "mtu"),
                        f"MTU {net.mtu} leaves no room for the {extra} bytes of connection "
                        f"{conn.name!r}'s SRv6 encapsulation on a path with MTU {limit}, and the "
                        f"kernel would drop larger packets silently; set it to at most {room} or "
                        "leave it unset (vnet then picks it)",
                        f"network {net.name!r}",
                    )
                )
    return problems


def _demands(topo: Topology, valid: list[int]) -> Iterator[Demand]:
    paths = underlay_paths(topo)
    routers = {vr.name: vr for vr in topo.routers}
    for i in valid:
        conn = topo.connections[i]
        directions = [list(conn.path)]
        if conn.bidirectional:
            directions.append(list(reversed(conn.path)))
        for path in directions:
            seen: set[tuple[str, int, bool]] = set()
            for u, v in itertools.pairwise(path):
                shared = shared_network(routers[u], routers[v])
                assert shared is not None
                network = routers[u].interfaces[shared[0]].network
                hu, hv = routers[u].host, routers[v].host
                for link, forward in paths.get((hu, hv), []) if hu != hv else []:
                    if (network, link, forward) not in seen:
                        seen.add((network, link, forward))
                        yield Demand(i, network, link, forward, conn.bandwidth)
