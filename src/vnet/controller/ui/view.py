"""What the pages draw, computed from the service's answers (pure functions, no I/O).

The topology graph is Cytoscape.js "elements" (plain dicts the page's script hands to the
library): physical hosts as boxes, the tenants' VRs inside the host they run on, one arc per
direction of each underlay link (links are full duplex and the ledger counts each direction
on its own), and a dashed edge between VRs of one virtual network. Everything comes from one
TopologyView, which the service already cut down to what the caller may see.
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any

from vnet.model.controller_api import ConnectionView, LinkView, TopologyView

Element = dict[str, Any]


def rate(bits: int | None) -> str:
    """A bit rate for people: '990 Mbit/s', '1.5 Gbit/s', '-' when unknown."""
    if bits is None:
        return "-"
    for unit, scale in (("Gbit/s", 10**9), ("Mbit/s", 10**6), ("kbit/s", 10**3)):
        if bits >= scale:
            value = bits / scale
            return f"{value:.3g} {unit}" if value < 100 else f"{value:.0f} {unit}"
    return f"{bits} bit/s"


def ends(direction: str) -> tuple[str, str]:
    """'h1 -> h2' -> ('h1', 'h2')."""
    source, _, target = direction.partition("->")
    return source.strip(), target.strip()


def arc_rows(links: list[LinkView]) -> list[dict[str, Any]]:
    """One row per link direction: what the graph's arcs and the links table show."""
    rows = []
    for link in links:
        for arc in link.directions:
            source, target = ends(arc.direction)
            rows.append(
                {
                    "id": f"arc:{link.name}:{source}",
                    "link": link.name,
                    "direction": arc.direction,
                    "source": source,
                    "target": target,
                    "capacity": link.capacity_bps,
                    "reserved": arc.reserved_bps,
                    "free": arc.free_bps,
                    "utilisation": arc.utilisation_bps,
                    "state": link.status.state,  # failure detection's: up, down, unknown
                    "label": arc_label(arc.reserved_bps, link.capacity_bps, arc.utilisation_bps),
                }
            )
    return rows


def arc_label(reserved: int, capacity: int, utilisation: int | None) -> str:
    return f"{rate(reserved)} of {rate(capacity)} reserved · now {rate(utilisation)}"


def graph_elements(topology: TopologyView) -> list[Element]:
    elements: list[Element] = []
    endhosts_on: dict[str, int] = {}
    for endhost in topology.endhosts:
        endhosts_on[endhost.host] = endhosts_on.get(endhost.host, 0) + 1
    for host in topology.hosts:
        count = endhosts_on.get(host.name, 0)
        label = f"{host.name} ({count} end hosts)" if count else host.name
        elements.append({"data": {"id": f"host:{host.name}", "label": label}, "classes": "host"})
    for router in topology.routers:
        elements.append(
            {
                "data": {
                    "id": f"vr:{router.name}",
                    "parent": f"host:{router.host}",
                    "label": router.name,
                    "tenant": router.tenant or "",
                },
                "classes": "router",
            }
        )
    for row in arc_rows(topology.links):
        data = dict(row, source=f"host:{row['source']}", target=f"host:{row['target']}")
        elements.append({"data": data, "classes": "arc"})
    elements.extend(network_edges(topology))
    return elements


def network_edges(topology: TopologyView) -> list[Element]:
    """A chain of dashed edges through the VRs of each virtual network."""
    members: dict[str, list[str]] = {}
    for router in sorted(topology.routers, key=lambda r: r.name):
        for network in router.networks:
            members.setdefault(network, []).append(router.name)
    edges = []
    for network, routers in sorted(members.items()):
        for left, right in pairwise(routers):
            edges.append(
                {
                    "data": {
                        "id": f"net:{network}:{left}:{right}",
                        "source": f"vr:{left}",
                        "target": f"vr:{right}",
                        "network": network,
                    },
                    "classes": "vnet",
                }
            )
    return edges


def connection_paths(connections: list[ConnectionView]) -> dict[str, Any]:
    """'tenant/name' -> what the page highlights for that connection."""
    return {
        f"{c.tenant}/{c.name}": {
            "tenant": c.tenant,
            "name": c.name,
            "status": c.status,
            "path": c.path,
            "routers": [hop.router for hop in c.hops],
            "bidirectional": c.bidirectional,
            "bandwidth": rate(c.bandwidth),
        }
        for c in connections
        if c.status != "released"
    }


def path_arcs(connection: ConnectionView, links: list[LinkView]) -> list[dict[str, Any]]:
    """The link directions a connection's path crosses, with their current figures."""
    rows = {(row["source"], row["target"]): row for row in arc_rows(links)}
    hops = list(pairwise(connection.path))
    if connection.bidirectional:
        hops += [(b, a) for a, b in hops]
    return [rows[hop] for hop in hops if hop in rows]
