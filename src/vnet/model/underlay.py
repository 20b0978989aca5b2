"""Addresses and routes of the underlay that joins physical hosts.

Each host gets a loopback address (its VXLAN tunnel endpoint), each link a
point-to-point subnet, and each host a route to every other host's loopback
along a shortest path, so hosts need not be directly connected.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from ipaddress import IPv4Network, ip_address

from vnet.model.topology import Topology


@dataclass
class UnderlayAddressing:
    loopback: dict[str, str] = field(default_factory=dict)  # host -> "10.200.0.1"
    # link index -> (address of end a, address of end b), with prefix length
    link_addresses: dict[int, tuple[str, str]] = field(default_factory=dict)
    routes: dict[str, list[tuple[str, str]]] = field(default_factory=dict)  # host -> [(dst, via)]


def underlay_addressing(topo: Topology) -> UnderlayAddressing:
    prefix = topo.underlay.effective_prefix
    v4 = isinstance(prefix, IPv4Network)
    host_len = 32 if v4 else 128
    p2p_len = 31 if v4 else 127
    base = int(prefix.network_address)
    # loopbacks from the bottom of the prefix, link subnets from its upper half
    half = base + (prefix.num_addresses // 2)
    out = UnderlayAddressing()
    for i, host in enumerate(topo.hosts, start=1):
        out.loopback[host.name] = str(ip_address(base + i))
    far_end: dict[tuple[str, str], str] = {}
    for j, link in enumerate(topo.links):
        a = ip_address(half + 2 * j)
        b = ip_address(half + 2 * j + 1)
        out.link_addresses[j] = (f"{a}/{p2p_len}", f"{b}/{p2p_len}")
        far_end[(link.a, link.b)] = str(b)
        far_end[(link.b, link.a)] = str(a)
    import networkx as nx  # 0.25 s to import: not for commands that never plan

    graph = nx.Graph()
    graph.add_nodes_from(h.name for h in topo.hosts)
    graph.add_edges_from((link.a, link.b) for link in topo.links)
    for host in topo.hosts:
        routes = out.routes.setdefault(host.name, [])
        paths = nx.single_source_shortest_path(graph, host.name)
        for other in topo.hosts:
            if other.name == host.name or other.name not in paths:
                continue
            first_hop = paths[other.name][1]
            routes.append(
                (f"{out.loopback[other.name]}/{host_len}", far_end[(host.name, first_hop)])
            )
    return out
