"""A lab's guarantees as the pieces each host carries (what its agent is told).

`tunnels(topo)` describes each direction of a connection end to end; an agent
knows only its own host, so a lab splits them: the ingress VR's steering,
segments and shaper, the transit VRs' End SIDs, the egress VR's End.DX4/DX6,
and the locators of the host's VRs. The lab realises its own connections from
the same pieces (`vnet.substrate.realize_guarantees.realize_pieces`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from ipaddress import IPv6Address
from typing import Any

from vnet.model.connection import Connection
from vnet.model.host import HostConfig
from vnet.model.host_guarantees import (
    ConnectionPieces,
    Egress,
    Ingress,
    Locator,
    NetworkClass,
    Srv6OnHost,
    Transit,
    UnderlayInterface,
)
from vnet.model.qos import link_shares
from vnet.model.srv6 import (
    Tunnel,
    locator,
    network_tenants,
    renumbered,
    router_numbers,
    router_tenant,
    shared_network,
    srv6_tenants,
    tunnels,
)
from vnet.model.topology import Topology


def connection_pieces(
    topo: Topology,
    locators: Callable[[Topology, str], list[Locator]] | None = None,
    numbers: dict[str, int] | None = None,
    tenants: Mapping[str, str] | None = None,
) -> dict[str, Srv6OnHost]:
    """Host -> its locators and connection pieces, for a checked and resolved topology.
    `locators`: `host_locators`, or one that remembers its answers; `numbers`, `tenants`:
    router_numbers(topo) and network_tenants(topo), for a caller that knows them."""
    located = locators or host_locators
    if not topo.connections:
        return {}
    host_of = {vr.name: vr.host for vr in topo.routers}
    pieces: dict[str, dict[str, dict[str, list[Any]]]] = {}
    ids = {c.name: c.id for c in topo.connections}
    for t in tunnels(topo, numbers, tenants):
        for host, kind, piece in _pieces(topo, t):
            conn = pieces.setdefault(host_of[host], {}).setdefault(
                t.connection, {"ingress": [], "transit": [], "egress": []}
            )
            if piece not in conn[kind]:
                conn[kind].append(piece)
    out = {}
    for host, conns in pieces.items():
        # made of validated models: constructed as they are, so a list of locators
        # remembered for many connections is held once, not copied into each
        out[host] = Srv6OnHost.model_construct(
            locators=located(topo, host),
            connections=[
                ConnectionPieces(name=name, id=ids[name], **parts)  # type: ignore[arg-type]
                for name, parts in conns.items()
            ],
        )
    return out


def as_another(
    pieces: Mapping[str, Srv6OnHost], was: Connection, now: Connection
) -> dict[str, Srv6OnHost] | None:
    """`connection_pieces` of a topology holding `now` alone, from those of the same
    topology holding `was` alone, where the two differ only in name, id and port numbers
    (each port given in both or in neither): what depends on those is the pieces' name and
    id, the SIDs (`renumbered`) and each ingress's ports, the reverse direction's swapped.
    None when a direction cannot be told by its ingress router (a path that ends where it
    starts): derive those."""
    assert was.id is not None and now.id is not None, "resolve() assigns every connection an id"
    if now.path[0] == now.path[-1]:
        return None
    old_id, new_id = was.id, now.id
    ports = {
        now.path[0]: {"source_port": now.src_port, "destination_port": now.dst_port},
        now.path[-1]: {"source_port": now.dst_port, "destination_port": now.src_port},
    }

    def sids(found: list[IPv6Address]) -> list[IPv6Address]:
        return [renumbered(x, old_id, new_id) for x in found]

    def one(c: ConnectionPieces) -> ConnectionPieces:
        return c.model_copy(
            update={
                "name": now.name,
                "id": now.id,
                "ingress": [
                    i.model_copy(update={"segments": sids(i.segments), **ports[i.router]})
                    for i in c.ingress
                ],
                "transit": [t.model_copy(update={"sid": sids([t.sid])[0]}) for t in c.transit],
                "egress": [e.model_copy(update={"sid": sids([e.sid])[0]}) for e in c.egress],
            }
        )

    return {
        host: on.model_copy(update={"connections": [one(c) for c in on.connections]})
        for host, on in pieces.items()
    }


def host_locators(
    topo: Topology,
    host: str,
    numbers: dict[str, int] | None = None,
    tenants: Mapping[str, str] | None = None,
) -> list[Locator]:
    """The locators of `host`'s VRs: those of tenants SRv6 serves (`srv6_tenants`).
    `numbers`, `tenants`: as for `connection_pieces`."""
    numbers = router_numbers(topo) if numbers is None else numbers
    tenants = network_tenants(topo) if tenants is None else tenants
    wanted = srv6_tenants(topo, tenants)
    return [
        Locator(prefix=locator(topo, vr.name, numbers, tenants), router=vr.name)
        for vr in topo.routers
        if vr.host == host and router_tenant(topo, vr, tenants) in wanted
    ]


def _pieces(topo: Topology, t: Tunnel) -> list[tuple[str, str, object]]:
    """(router, kind, piece) of one tunnel."""
    hosts = {e.name: e for e in topo.endhosts}
    src, dst = hosts[t.src], hosts[t.dst]
    ingress_vr = topo.router(t.ingress)
    first = shared_network(ingress_vr, topo.router(t.path[1]))
    assert first is not None, "checked: consecutive routers of a path share a network"
    out_network = ingress_vr.interfaces[first[0]].network
    out: list[tuple[str, str, object]] = []
    for fam in t.families:
        out.append(
            (
                t.ingress,
                "ingress",
                Ingress(
                    router=t.ingress,
                    lan_network=src.network,
                    network=out_network,
                    source=t.src_addr[fam],
                    destination=t.dst_addr[fam],
                    protocol=t.protocol,
                    source_port=t.src_port,
                    destination_port=t.dst_port,
                    segments=list(t.segments(fam)),
                    bandwidth=t.bandwidth,
                ),
            )
        )
        out.append(
            (
                t.egress,
                "egress",
                Egress(
                    router=t.egress,
                    sid=t.egress_sids[fam],
                    network=dst.network,
                    next_hop=t.dst_addr[fam],
                ),
            )
        )
    for router, sid in t.transit:
        vr = topo.router(router)
        out.append(
            (
                router,
                "transit",
                Transit(router=router, sid=sid, network=vr.interfaces[0].network),
            )
        )
    return out


def underlay_interfaces(
    topo: Topology, host: str, port_name: Callable[[str], str]
) -> list[UnderlayInterface]:
    """The HTB trees of `host`'s rated underlay link ends (`port_name(peer)`: the interface),
    as the lab shapes them itself when no agent runs: the link's rate, the management
    guarantee reserved, one class per network whose VXLAN crosses the link."""
    out = []
    for j, shares in link_shares(topo).items():
        link = topo.links[j]
        if host not in (link.a, link.b) or link.rate is None:
            continue
        peer = link.b if link.a == host else link.a
        out.append(
            UnderlayInterface(
                name=port_name(peer),
                rate=link.rate,
                reserved=shares[0].rate,
                classes=[
                    NetworkClass(network=sh.network, rate=sh.rate, ceil=sh.ceil)
                    for sh in shares[1:]
                    if sh.network is not None
                ],
            )
        )
    return out


def with_guarantees(topo: Topology, hc: HostConfig, port_name: Callable[[str], str]) -> HostConfig:
    """`hc` with its host's underlay classes, locators and connection pieces (for its agent)."""
    return hc.model_copy(
        update={
            "underlay": underlay_interfaces(topo, hc.host, port_name),
            "srv6": connection_pieces(topo).get(hc.host, Srv6OnHost()),
        }
    )
