"""Bandwidth on the substrate: which underlay links a virtual network uses, what each
link guarantees to whom, and admission control for connections.

The model (paper 001, Section 2.2 and 5.1): every rated underlay link is an HTB
tree. Its root is the link rate; below it a guaranteed class for management and
routing traffic (everything on the link that is not tenant VXLAN), one class per
virtual network with a bandwidth (rate = the guarantee, ceil = the network's
ceiling), and a best-effort class for the VXLAN traffic of networks without one.
Guarantees are admitted only if they fit: management + the networks' guarantees
may not exceed the link rate, and connections (the tunnels of `vnet.model.srv6`)
may not exceed the guarantee of the network they ride, or the best-effort
remainder of the link when that network has none.

Rates are compared as configured; encapsulation overhead (SRv6 headers inside,
VXLAN outside) counts against the class the packets end up in.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from vnet.model.errors import Problem
from vnet.model.host import network_carriers
from vnet.model.rate import format_rate
from vnet.model.topology import Topology, UnderlayLink, VirtualNetwork

MIN_MANAGEMENT = 64_000  # bit/s

# (link index, True if the traffic goes from link.a to link.b)
Hop = tuple[int, bool]


def management_rate(link: UnderlayLink) -> int | None:
    """The guarantee for non-VXLAN traffic on a rated link: configured, or 1% of the rate."""
    if link.rate is None:
        return None
    if link.management is not None:
        return link.management
    return max(link.rate // 100, min(MIN_MANAGEMENT, link.rate))


def network_ceil(net: VirtualNetwork, link: UnderlayLink) -> int | None:
    """What a network with a bandwidth may borrow up to on `link` (None: no class)."""
    if net.bandwidth is None or link.rate is None:
        return None
    return min(net.ceil or net.bandwidth, link.rate)


class UnderlayPaths:
    """(from host, to host) -> the links a packet crosses, as the underlay routes it.

    Built exactly like `vnet.model.underlay.underlay_addressing` builds the
    routes (same graph, same order), so it names the links really used. Paths
    are found on demand, one breadth-first search per source host asked about:
    checks ask only for the hosts of networks with a bandwidth and of
    connections, so a large lab is not searched all pairs (issue 17, finding 4).
    """

    def __init__(self, topo: Topology):
        import networkx as nx  # 0.25 s to import: not for commands that never plan

        self._links = topo.links
        self._graph = nx.Graph()
        self._graph.add_nodes_from(h.name for h in topo.hosts)
        self._index: dict[frozenset[str], int] = {}
        for j, link in enumerate(topo.links):
            self._graph.add_edge(link.a, link.b)
            self._index.setdefault(frozenset((link.a, link.b)), j)
        self._from: dict[str, dict[str, list[str]]] = {}

    def _paths_from(self, source: str) -> dict[str, list[str]]:
        import networkx as nx

        if source not in self._from:
            found = source in self._graph
            self._from[source] = (
                nx.single_source_shortest_path(self._graph, source) if found else {}
            )
        return self._from[source]

    def get(self, pair: tuple[str, str], default: list[Hop] | None = None) -> list[Hop] | None:
        """The hops from pair[0] to pair[1]; `default` if they are one host or not joined."""
        a, b = pair
        path = self._paths_from(a).get(b) if a != b else None
        if path is None:
            return default
        hops = []
        for u, v in itertools.pairwise(path):
            j = self._index[frozenset((u, v))]
            hops.append((j, self._links[j].a == u))
        return hops


def underlay_paths(topo: Topology) -> UnderlayPaths:
    """The underlay's paths between hosts, each found when first asked for."""
    return UnderlayPaths(topo)


def network_links(topo: Topology, paths: UnderlayPaths | None = None) -> dict[str, set[int]]:
    """Network with a bandwidth -> indexes of the underlay links its VXLAN traffic crosses.

    Only networks with a bandwidth get a class on a link, so only their pairs of
    carrier hosts are looked at; the others are left out.
    """
    paths = underlay_paths(topo) if paths is None else paths
    rated = {n.name for n in topo.networks if n.bandwidth is not None}
    out: dict[str, set[int]] = {}
    for net, hosts in network_carriers(topo, for_agents=False).items():
        if net not in rated:
            continue
        used: set[int] = set()
        for a in sorted(hosts):
            for b in hosts:
                used.update(j for j, _ in paths.get((a, b)) or ())
        out[net] = used
    return out


@dataclass(frozen=True)
class LinkShare:
    """One guaranteed class of a rated underlay link."""

    network: str | None  # None: the management class
    rate: int
    ceil: int


def link_shares(topo: Topology, links_of: dict[str, set[int]] | None = None) -> dict[int, list]:
    """Rated link index -> [management share, one share per network with a bandwidth]."""
    links_of = network_links(topo) if links_of is None else links_of
    crossing: dict[int, list[VirtualNetwork]] = {}  # link -> the networks on it, in file order
    for net in topo.networks:
        for j in links_of.get(net.name, ()):
            crossing.setdefault(j, []).append(net)
    out: dict[int, list[LinkShare]] = {}
    for j, link in enumerate(topo.links):
        mgmt = management_rate(link)
        if link.rate is None or mgmt is None:
            continue
        shares = [LinkShare(None, mgmt, link.rate)]
        for net in crossing.get(j, ()):
            ceil = network_ceil(net, link)
            if ceil is not None:
                shares.append(LinkShare(net.name, net.bandwidth or 0, ceil))
        out[j] = shares
    return out


def best_effort_rate(link: UnderlayLink, shares: list[LinkShare]) -> int:
    """What is left of a link's rate after every guarantee (may be 0)."""
    return max(0, (link.rate or 0) - sum(s.rate for s in shares))


def _link_name(link: UnderlayLink) -> str:
    return f"{link.a}-{link.b}"


def qos_problems(topo: Topology) -> list[Problem]:
    """Network guarantees that the substrate cannot keep."""
    problems: list[Problem] = []
    hosts = {h.name for h in topo.hosts}
    if any(link.a not in hosts or link.b not in hosts for link in topo.links):
        return problems  # reported elsewhere; the underlay graph is not usable
    links_of = network_links(topo)
    for i, net in enumerate(topo.networks):
        problems += _network_guarantee_problems(topo, i, net, links_of.get(net.name, ()))
    for j, shares in link_shares(topo, links_of).items():
        link = topo.links[j]
        total = sum(s.rate for s in shares)
        if link.rate is not None and total > link.rate:
            parts = ", ".join(f"{s.network or 'management'} {format_rate(s.rate)}" for s in shares)
            problems.append(
                Problem(
                    ("links", j, "rate"),
                    f"guarantees on underlay link {_link_name(link)} add up to "
                    f"{format_rate(total)} ({parts}), more than its rate "
                    f"{format_rate(link.rate)}; lower a network's bandwidth or raise the rate",
                    f"link {_link_name(link)}",
                )
            )
    return problems


def _network_guarantee_problems(
    topo: Topology, i: int, net: VirtualNetwork, links: Iterable[int]
) -> list[Problem]:
    """A network's ceil against its bandwidth, and the rates of the links it crosses."""
    problems: list[Problem] = []
    subject = f"network {net.name!r}"
    if net.ceil is not None and net.bandwidth is None:
        problems.append(
            Problem(("networks", i, "ceil"), "a ceil needs a bandwidth to guarantee", subject)
        )
    elif net.ceil is not None and net.bandwidth is not None and net.ceil < net.bandwidth:
        problems.append(
            Problem(
                ("networks", i, "ceil"),
                f"ceil {format_rate(net.ceil)} is below the bandwidth "
                f"{format_rate(net.bandwidth)} it should guarantee",
                subject,
            )
        )
    if net.bandwidth is None:
        return problems
    for j in sorted(links):
        link = topo.links[j]
        if link.rate is None:
            problems.append(
                Problem(
                    ("networks", i, "bandwidth"),
                    f"the network crosses underlay link {_link_name(link)}, which has no "
                    f"rate, so its bandwidth cannot be guaranteed there; set links[{j}].rate",
                    subject,
                )
            )
        elif net.ceil is not None and net.ceil > link.rate:
            problems.append(
                Problem(
                    ("networks", i, "ceil"),
                    f"ceil {format_rate(net.ceil)} exceeds the rate "
                    f"{format_rate(link.rate)} of underlay link {_link_name(link)}",
                    subject,
                )
            )
    return problems


@dataclass(frozen=True)
class Demand:
    """One connection direction crossing one underlay link inside one network."""

    connection: int  # index in topo.connections
    network: str
    link: int
    forward: bool  # direction on the link (a -> b)
    rate: int


def admission_problems(
    topo: Topology,
    demands: Iterator[Demand],
    paths: UnderlayPaths | None = None,
    shares: dict[int, list[LinkShare]] | None = None,
) -> list[Problem]:
    """Connections whose bandwidth does not fit what their networks and links guarantee.

    Demands are admitted in file order; the first one that no longer fits is
    reported at its connection's bandwidth, naming what is already taken.
    `paths`, `shares`: the underlay's paths and `link_shares(topo)`, when the caller has
    them (the shares do not depend on the connections: a pass over the whole topology
    that a caller checking many connections of one topology makes once).
    """
    problems: list[Problem] = []
    shares = link_shares(topo, network_links(topo, paths)) if shares is None else shares
    nets = {n.name: n for n in topo.networks}
    used: dict[tuple[str | None, int, bool], list[tuple[int, int]]] = {}
    reported: set[int] = set()
    for d in demands:
        link = topo.links[d.link]
        if link.rate is None or d.connection in reported:
            continue
        net = nets.get(d.network)
        guarantee = net.bandwidth if net is not None else None
        guaranteed = guarantee is not None
        pool: str | None = d.network if guaranteed else None  # None: best effort
        capacity = (
            guarantee if guarantee is not None else best_effort_rate(link, shares.get(d.link, []))
        )
        taken = used.setdefault((pool, d.link, d.forward), [])
        if sum(r for _, r in taken) + d.rate <= capacity:
            taken.append((d.connection, d.rate))
            continue
        reported.add(d.connection)
        conn = topo.connections[d.connection]
        direction = f"{link.a} to {link.b}" if d.forward else f"{link.b} to {link.a}"
        what = (
            f"network {d.network!r} guarantees {format_rate(capacity)} on underlay link "
            f"{_link_name(link)} from {direction}"
            if guaranteed
            else f"network {d.network!r} has no bandwidth of its own, and underlay link "
            f"{_link_name(link)} (rate {format_rate(link.rate)}) has "
            f"{format_rate(capacity) if capacity else 'nothing'} left after its guarantees"
        )
        others = ", ".join(
            f"{topo.connections[c].name!r} {format_rate(r)}" for c, r in taken if c != d.connection
        )
        already = f"; already admitted there: {others}" if others else ""
        problems.append(
            Problem(
                ("connections", d.connection, "bandwidth"),
                f"{format_rate(d.rate)} does not fit: {what}{already}",
                f"connection {conn.name!r}",
            )
        )
    return problems
