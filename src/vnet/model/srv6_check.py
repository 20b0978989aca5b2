"""Connections that cannot be realised, each reported at its exact field."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

from vnet.model.connection import PORT_PROTOCOLS, Connection
from vnet.model.errors import Loc, Problem
from vnet.model.mtu import base_network_mtu
from vnet.model.qos import (
    Demand,
    LinkShare,
    UnderlayPaths,
    admission_problems,
    link_shares,
    network_links,
    underlay_paths,
)
from vnet.model.srv6 import (
    LOCATOR_LEN,
    MIN_MTU,
    families,
    gateway,
    interface_in,
    locator_block,
    network_tenants,
    overhead,
    path_mtu,
    router_numbers,
    router_tenant,
    shared_network,
    srv6_tenants,
)
from vnet.model.topology import EndHost, Topology


def connection_problems(topo: Topology, fixed: Fixed | None = None) -> list[Problem]:
    """Connections that cannot be realised, each at its exact field. `fixed`: what the
    topology's other parts say (`Fixed.of`), for a caller that checks many connections in
    one topology."""
    if not topo.connections:
        return []
    checker = _ConnectionChecker(topo, network_tenants(topo) if fixed is None else fixed.tenants)
    for i, conn in enumerate(topo.connections):
        checker.check(i, conn)
    problems = checker.problems
    if problems:
        return problems
    paths = underlay_paths(topo)  # one search of the underlay for the shares and demands
    fixed = Fixed.of(topo, paths) if fixed is None else fixed
    problems += _tenant_locator_problems(topo, fixed)
    problems += _mtu_problems(topo, checker.valid)
    demands = _demands(topo, checker.valid, paths)
    problems += admission_problems(topo, demands, paths, fixed.shares)
    return problems


@dataclass(frozen=True)
class Fixed:
    """What a topology's routers, networks, end hosts and links say whatever its
    connections: router numbers, networks' tenants and rated links' shares. Each is a pass
    over the whole topology, so a caller that checks many connections of one topology
    derives them once (`vnet.controller.pieces.PiecesMemo`)."""

    numbers: dict[str, int]
    tenants: dict[str, str]
    shares: dict[int, list[LinkShare]]

    @classmethod
    def of(cls, topo: Topology, paths: UnderlayPaths | None = None) -> Fixed:
        shares = link_shares(topo, network_links(topo, paths))
        return cls(router_numbers(topo), network_tenants(topo), shares)


class _Direction(NamedTuple):
    """One direction of a connection's tunnel."""

    end: str  # the connection's end ("a" or "b") that sends
    src: EndHost
    dst: EndHost
    first: str  # the router where the tunnel starts
    last: str  # the router where it ends
    k_first: int  # their positions in the path
    k_last: int


class _ConnectionChecker:
    """Checks connections one by one, remembering what earlier ones claimed."""

    def __init__(self, topo: Topology, tenants: dict[str, str]) -> None:
        self.topo = topo
        self.problems: list[Problem] = []
        self.valid: list[int] = []  # connections without any problem, for the later checks
        self.hosts = {e.name: e for e in topo.endhosts}
        self.routers = {vr.name: vr for vr in topo.routers}
        self.nets = {n.name: n for n in topo.networks}
        self.tenants = tenants
        self.names: dict[str, int] = {}
        self.ids: dict[int, str] = {}
        self.selectors: dict[tuple[Any, ...], str] = {}

    def add(self, loc: Loc, message: str, conn: Connection) -> None:
        self.problems.append(Problem(("connections", *loc), message, f"connection {conn.name!r}"))

    def check(self, i: int, conn: Connection) -> None:
        before = len(self.problems)
        self._check_names(i, conn)
        ends = self._ends(i, conn)
        if ends is None:
            return
        a, b = ends
        if not self._check_pair(i, conn, a, b):
            return
        fams = families(conn, a, b)
        if not fams:
            want = conn.family or "any family"
            self.add(
                (i, "family"),
                f"{a.name!r} and {b.name!r} have no address of {want} in common",
                conn,
            )
            return
        if not self._check_path_routers(i, conn, self.nets[a.network].tenant):
            return
        if not self._check_adjacency(i, conn):
            return
        for direction in self._directions(conn, a, b):
            self._check_direction(i, conn, fams, direction)
        if len(self.problems) == before:
            self.valid.append(i)

    def _check_names(self, i: int, conn: Connection) -> None:
        """Unique name and id; ports only with a protocol that has them."""
        if conn.name in self.names:
            self.add(
                (i, "name"),
                f"duplicate connection name (first at connections[{self.names[conn.name]}])",
                conn,
            )
        self.names.setdefault(conn.name, i)
        if conn.id is not None:
            if conn.id in self.ids:
                self.add(
                    (i, "id"),
                    f"id {conn.id} is already used by connection {self.ids[conn.id]!r}",
                    conn,
                )
            self.ids.setdefault(conn.id, conn.name)
        if conn.protocol not in PORT_PROTOCOLS and (conn.src_port or conn.dst_port):
            self.add((i, "protocol"), "ports need a protocol with ports: tcp, udp or sctp", conn)

    def _ends(self, i: int, conn: Connection) -> tuple[EndHost, EndHost] | None:
        """Both end hosts, or None when one is unknown or sits in an unknown network."""
        ends = {}
        for end in ("a", "b"):
            name = getattr(conn, end)
            eh = self.hosts.get(name)
            if eh is None:
                self.add((i, end), f"unknown end host {name!r}", conn)
            elif eh.network in self.nets:  # an unknown network is reported at the end host
                ends[end] = eh
        if len(ends) < 2:
            return None
        return ends["a"], ends["b"]

    def _check_pair(self, i: int, conn: Connection, a: EndHost, b: EndHost) -> bool:
        """Two different end hosts, one tenant, different networks."""
        ta, tb = self.nets[a.network].tenant, self.nets[b.network].tenant
        if a.name == b.name:
            self.add((i, "b"), "a connection joins two different end hosts", conn)
            return False
        if ta != tb:
            self.add(
                (i, "b"),
                f"end host {b.name!r} is in tenant {tb!r} (network {b.network!r}), outside "
                f"tenant {ta!r} of {a.name!r}: a connection stays inside one tenant's networks",
                conn,
            )
            return False
        if a.network == b.network:
            self.add(
                (i, "b"),
                f"{a.name!r} and {b.name!r} share network {a.network!r}: "
                "their traffic meets no router, so there is no path to pin",
                conn,
            )
            return False
        return True

    def _check_path_routers(self, i: int, conn: Connection, tenant: str) -> bool:
        """The path's routers are known, of this tenant, and none repeats."""
        path_ok = True
        seen: set[str] = set()
        for k, r in enumerate(conn.path):
            vr = self.routers.get(r)
            owner = None if vr is None else router_tenant(self.topo, vr, self.tenants)
            if vr is None:
                self.add((i, "path", k), f"unknown router {r!r}", conn)
                path_ok = False
            elif owner != tenant:
                self.add(
                    (i, "path", k),
                    f"router {r!r} belongs to tenant {owner!r}, not to {tenant!r} of the end hosts",
                    conn,
                )
                path_ok = False
            elif r in seen:
                self.add(
                    (i, "path", k),
                    f"router {r!r} appears twice; a path visits each router once",
                    conn,
                )
                path_ok = False
            seen.add(r)
        return path_ok

    def _check_adjacency(self, i: int, conn: Connection) -> bool:
        """Each pair of consecutive routers shares a network over IPv6."""
        path_ok = True
        for k, (u, v) in enumerate(zip(conn.path, conn.path[1:], strict=False)):
            if shared_network(self.routers[u], self.routers[v]) is None:
                self.add(
                    (i, "path", k + 1),
                    f"{u} and {v} are not adjacent: {self._not_adjacent_why(u, v)}; consecutive "
                    "routers of a path must share a network",
                    conn,
                )
                path_ok = False
        return path_ok

    def _not_adjacent_why(self, u: str, v: str) -> str:
        u_nets = [i.network for i in self.routers[u].interfaces]
        v_nets = [i.network for i in self.routers[v].interfaces]
        common = sorted(set(u_nets) & set(v_nets))
        if common:
            return f"they share {', '.join(common)} but not over IPv6, which SRv6 needs"
        return (
            f"they share no network ({u}: {', '.join(u_nets) or 'none'}; "
            f"{v}: {', '.join(v_nets) or 'none'})"
        )

    @staticmethod
    def _directions(conn: Connection, a: EndHost, b: EndHost) -> list[_Direction]:
        last = len(conn.path) - 1
        directions = [_Direction("a", a, b, conn.path[0], conn.path[-1], 0, last)]
        if conn.bidirectional:
            directions.append(_Direction("b", b, a, conn.path[-1], conn.path[0], last, 0))
        return directions

    def _check_direction(
        self, i: int, conn: Connection, fams: tuple[int, ...], direction: _Direction
    ) -> None:
        """The tunnel of one direction starts where the source sends and ends at the target."""
        _, src, dst, first, last, k_first, k_last = direction
        if interface_in(self.routers[first], src.network) is None:
            self.add(
                (i, "path", k_first),
                f"the path must start at a router of {src.name!r}'s "
                f"network {src.network!r}; {first} has no interface there",
                conn,
            )
            return
        egress = interface_in(self.routers[last], dst.network)
        if egress is None:
            self.add(
                (i, "path", k_last),
                f"the path must end at a router of {dst.name!r}'s "
                f"network {dst.network!r}; {last} has no interface there",
                conn,
            )
            return
        for fam in fams:
            self._check_family(i, conn, fam, direction, egress)
        self._check_selector(i, conn, fams, direction)

    def _check_family(
        self, i: int, conn: Connection, fam: int, direction: _Direction, egress: int
    ) -> None:
        _, src, dst, first, last, k_first, k_last = direction
        attr = "ipv4" if fam == 4 else "ipv6"
        dst_ip = getattr(dst, attr).ip
        gw = gateway(self.topo, src, dst_ip)
        if gw != first:
            sends = f"to {gw}" if gw else "to no router (it has no route)"
            self.add(
                (i, "path", k_first),
                f"{src.name!r} sends packets for {dst_ip} {sends}, "
                f"so its tunnel cannot start at {first}",
                conn,
            )
        if getattr(self.routers[last].interfaces[egress], attr) is None:
            self.add(
                (i, "path", k_last),
                f"{last} has no {attr} address in network "
                f"{dst.network!r} to deliver to {dst.name!r}",
                conn,
            )

    def _check_selector(
        self, i: int, conn: Connection, fams: tuple[int, ...], direction: _Direction
    ) -> None:
        """No two connections steer the same traffic."""
        end, src, dst, first = direction[:4]
        key = (
            first,
            fams,
            src.name,
            dst.name,
            conn.protocol,
            conn.src_port if end == "a" else conn.dst_port,
            conn.dst_port if end == "a" else conn.src_port,
        )
        if key in self.selectors:
            self.add(
                (i,),
                f"the same traffic is already steered by connection {self.selectors[key]!r} "
                "(same end hosts, protocol and ports); give one of them other ports",
                conn,
            )
        self.selectors.setdefault(key, conn.name)


def _tenant_locator_problems(topo: Topology, fixed: Fixed) -> list[Problem]:
    problems = []
    numbers, owners = fixed.numbers, fixed.tenants
    for tenant in sorted(srv6_tenants(topo, owners)):
        block = locator_block(topo, tenant)
        k = next((j for j, t in enumerate(topo.tenants) if t.name == tenant), None)
        loc = ("tenants", k, "locators") if k is not None else ("connections",)
        count = max(
            (numbers[vr.name] for vr in topo.routers if router_tenant(topo, vr, owners) == tenant),
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


def _demands(topo: Topology, valid: list[int], paths: UnderlayPaths) -> Iterator[Demand]:
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
                for link, forward in (paths.get((hu, hv)) or []) if hu != hv else []:
                    if (network, link, forward) not in seen:
                        seen.add((network, link, forward))
                        yield Demand(i, network, link, forward, conn.bandwidth)
