"""Connections that cannot be realised, each reported at its exact field."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

from vnet.model.connection import PORT_PROTOCOLS, Connection
from vnet.model.errors import Problem
from vnet.model.mtu import base_network_mtu
from vnet.model.qos import Demand, admission_problems, underlay_paths
from vnet.model.srv6 import (
    LOCATOR_LEN,
    MIN_MTU,
    families,
    gateway,
    interface_in,
    locator_block,
    overhead,
    path_mtu,
    router_numbers,
    router_tenant,
    shared_network,
    srv6_tenants,
)
from vnet.model.topology import Topology


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
        fams = families(conn, a, b)
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
            if interface_in(routers[first], src.network) is None:
                add(
                    (i, "path", k_first),
                    f"the path must start at a router of {src.name!r}'s "
                    f"network {src.network!r}; {first} has no interface there",
                    conn,
                )
                continue
            egress = interface_in(routers[last], dst.network)
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
            limit = path_mtu(topo, routers, path, lambda n: base_network_mtu(topo, n))
            if limit is None:
                continue
            extra = overhead(len(path) - 1)
            room = limit - extra
            fams = families(conn, hosts[conn.a], hosts[conn.b])
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
