"""Guarantees on Linux: connections (SRv6 tunnels) and bandwidth (HTB classes).

What `realize` adds for a topology's connections and network bandwidths; the
objects and their operations are in seg6.py and tc.py.
"""

from __future__ import annotations

from dataclasses import dataclass

from vnet.model import Topology
from vnet.model.address_text import ip_text
from vnet.model.host import HostConfig
from vnet.model.host_guarantees import Ingress, Srv6OnHost
from vnet.model.host_pieces import connection_pieces
from vnet.model.qos import best_effort_rate, link_shares, network_links
from vnet.model.srv6 import (
    PROTOCOL_NUMBERS,
    RULE_PRIORITY_BASE,
    TABLE_BASE,
    connection_sids,
    interface_in,
)
from vnet.model.topology import VirtualRouter
from vnet.substrate.marks import NsName
from vnet.substrate.placement import Placement, underlay_port_name
from vnet.substrate.seg6 import SidRoute, SteerRoute, SteerRule
from vnet.substrate.state import KernelState
from vnet.substrate.tc import (
    BEST_EFFORT_MINOR,
    ETH_P_ALL,
    ETH_P_IP,
    ETH_P_IPV6,
    LINK_MAJOR,
    LINK_ROOT_CLASS,
    MANAGEMENT_MINOR,
    PRIO_ANY_VXLAN,
    PRIO_NETWORK,
    PRIO_REST,
    PRIO_TENANT_ROUTING,
    UNDERLAY_MAJOR,
    VNET_MAJOR,
    Shaper,
    TcClass,
    TcFilter,
    TcRoot,
    handle,
)
from vnet.substrate.tc_sizes import bytes_rate, queue_bytes
from vnet.substrate.u32 import (
    TENANT_ROUTING,
    Match,
    ip6_dst_match,
    vxlan_match,
    vxlan_routing_match,
)


def realize_connections(topo: Topology, where: Placement, state: KernelState) -> None:
    """Every connection's pieces (steering, SIDs, shapers) on the hosts `where` includes."""
    if not topo.connections or not where.routers:
        return
    routers = {vr.name: vr for vr in topo.routers}
    for host, srv6 in connection_pieces(topo).items():
        if where.includes(host):
            realize_pieces(srv6, routers, where, state)


def realize_host_guarantees(hc: HostConfig, where: Placement, state: KernelState) -> None:
    """An agent's underlay classes and connection pieces (the hook of realize_host)."""
    realize_underlay(hc, where.host_ns(hc.host), state)
    if where.routers:
        realize_pieces(hc.srv6, {vr.name: vr for vr in hc.routers}, where, state)


def realize_pieces(
    srv6: Srv6OnHost, routers: dict[str, VirtualRouter], where: Placement, state: KernelState
) -> None:
    """One host's connection pieces: what a lab derives and what an agent is told."""
    for conn in srv6.connections:
        for ing in conn.ingress:
            _ingress(conn.id, ing, routers[ing.router], where, state)
        for tr in conn.transit:
            vr = routers[tr.router]
            dev = vr.ifname(interface_in(vr, tr.network))  # type: ignore[arg-type]
            s = SidRoute(where.node_ns(tr.router), ip_text(tr.sid), "End", None, dev)
            state.sids[s.key] = s
        for eg in conn.egress:
            vr = routers[eg.router]
            dev = vr.ifname(interface_in(vr, eg.network))  # type: ignore[arg-type]
            s = SidRoute(
                where.node_ns(eg.router), ip_text(eg.sid), eg.action, ip_text(eg.next_hop), dev
            )
            state.sids[s.key] = s


def _ingress(
    conn_id: int, ing: Ingress, vr: VirtualRouter, where: Placement, state: KernelState
) -> None:
    """The steering rule and encap route of one direction and family, and its shaper."""
    ns = where.node_ns(vr.name)
    out = vr.ifname(interface_in(vr, ing.network))  # type: ignore[arg-type]
    lan = vr.ifname(interface_in(vr, ing.lan_network))  # type: ignore[arg-type]
    host_len = 32 if ing.family == 4 else 128
    dst = f"{ip_text(ing.destination)}/{host_len}"
    table = TABLE_BASE + conn_id
    steer = SteerRoute(ns, table, dst, tuple(ip_text(seg) for seg in ing.segments), out)
    state.steers[steer.key] = steer
    proto = PROTOCOL_NUMBERS[ing.protocol][0 if ing.family == 4 else 1] if ing.protocol else None
    state.rules.add(
        SteerRule(
            ns,
            ing.family,
            RULE_PRIORITY_BASE + conn_id,
            table,
            f"{ip_text(ing.source)}/{host_len}",
            dst,
            lan,
            proto,
            ing.source_port,
            ing.destination_port,
        )
    )
    # the shaper: every packet of the connection leaves with the first segment's
    # router's SIDs of this connection (a /112) as its outer destination
    root = handle(VNET_MAJOR, 0)
    state.tc_roots.add(TcRoot(ns, out))
    rate = bytes_rate(ing.bandwidth)
    cls = TcClass(
        ns, out, handle(VNET_MAJOR, conn_id), root, rate, rate, queue_bytes(ing.bandwidth)
    )
    state.tc_classes[cls.key] = cls
    prefix = connection_sids(ing.segments[0])
    state.tc_filters.add(
        TcFilter(
            ns,
            out,
            root,
            1,
            ETH_P_IPV6,
            ip6_dst_match(prefix),
            cls.classid,
            label=f"match ip6 dst {ip_text(prefix.network_address)}/{prefix.prefixlen}",
        )
    )


def network_minors(topo: Topology) -> dict[str, int]:
    """Network -> its class minor on underlay links: the VNI where it fits, else a free one."""
    return class_minors([(n.name, n.vni) for n in topo.networks if n.bandwidth is not None])


def class_minors(networks: list[tuple[str, int]]) -> dict[str, int]:
    """(name, VNI) of the networks with a class -> their minors (VNI order)."""
    out: dict[str, int] = {}
    taken = {LINK_ROOT_CLASS & 0xFFFF, MANAGEMENT_MINOR, BEST_EFFORT_MINOR}
    late = []
    for name, vni in sorted(networks, key=lambda n: n[1]):
        if vni <= 0xFFFF and vni not in taken:
            out[name] = vni
            taken.add(vni)
        else:
            late.append(name)
    minor = 0x10
    for name in late:
        while minor in taken:
            minor += 1
        out[name] = minor
        taken.add(minor)
    return out


def realize_qos(topo: Topology, where: Placement, state: KernelState) -> None:
    """Classes and filters on rated underlay link ends and on connections' entries."""
    link_ends: dict[int, list[tuple[NsName, str]]] = {}
    for j, link in enumerate(topo.links):
        a = (where.host_ns(link.a), underlay_port_name(link.b))
        b = (where.host_ns(link.b), underlay_port_name(link.a))
        if a in state.shapers and b in state.shapers:  # a rated link inside the lab
            link_ends[j] = [a, b]
    _realize_underlay(topo, link_ends, state)


def _realize_underlay(
    topo: Topology, link_ends: dict[int, list[tuple[NsName, str]]], state: KernelState
) -> None:
    if not link_ends:
        return
    links_of = network_links(topo)
    shares = link_shares(topo, links_of)
    minors = network_minors(topo)
    vnis = {n.name: n.vni for n in topo.networks}
    v6 = topo.underlay.family == "ipv6"
    for j, ends in link_ends.items():
        link = topo.links[j]
        if j not in shares or link.rate is None:
            continue
        tree = LinkTree(
            LINK_MAJOR,
            shares[j][0].rate,
            best_effort_rate(link, shares[j]),
            link.rate,
            [
                (minors[sh.network], vnis[sh.network], sh.rate, sh.ceil)
                for sh in shares[j][1:]
                if sh.network is not None
            ],
        )
        for ns, dev in ends:
            add_link_tree(state, ns, dev, tree, v6)


def realize_underlay(hc: HostConfig, ns: NsName, state: KernelState) -> None:
    """An agent's underlay interfaces: its own HTB tree ("75:") on each, in its namespace."""
    if not hc.underlay:
        return
    vnis = {carried.network.name: carried.network.vni for carried in hc.networks}
    minors = class_minors(
        sorted({(c.network, vnis[c.network]) for i in hc.underlay for c in i.classes})
    )
    v6 = hc.vtep is not None and hc.vtep.version == 6
    for itf in hc.underlay:
        state.shapers[(ns, itf.name)] = Shaper(ns, itf.name, itf.rate, UNDERLAY_MAJOR)
        classes = [(minors[c.network], vnis[c.network], c.rate, c.limit) for c in itf.classes]
        tree = LinkTree(UNDERLAY_MAJOR, itf.reserved, itf.best_effort, itf.rate, classes)
        add_link_tree(state, ns, itf.name, tree, v6)


@dataclass(frozen=True)
class LinkTree:
    """The HTB tree of one link end: reserved, best effort, and (minor, vni, rate, ceil)
    per network with a guarantee, below the shaper's class major:1 at `rate`."""

    major: int
    reserved: int
    best_effort: int
    rate: int
    networks: list[tuple[int, int, int, int]]


def add_link_tree(state: KernelState, ns: NsName, dev: str, tree: LinkTree, v6: bool) -> None:
    """Classes and u32 filters (by VNI, then any VXLAN, then the rest) on one link end."""
    l3 = ETH_P_IPV6 if v6 else ETH_P_IP
    root = handle(tree.major, 0)

    def add_class(minor: int, rate: int, ceil: int) -> int:
        cls = TcClass(
            ns,
            dev,
            handle(tree.major, minor),
            handle(tree.major, 1),
            bytes_rate(rate),
            bytes_rate(ceil),
            queue_bytes(ceil),
        )
        state.tc_classes[cls.key] = cls
        return cls.classid

    def add_filter(prio: int, proto: int, match: Match, to: int, label: str) -> None:
        state.tc_filters.add(TcFilter(ns, dev, root, prio, proto, match, to, label=label))

    mgmt_id = add_class(MANAGEMENT_MINOR, tree.reserved, tree.rate)
    be_id = add_class(BEST_EFFORT_MINOR, tree.best_effort, tree.rate)
    # The kernel numbers each filter (TcFilter), so order between kinds is the prio's: the
    # tenants' routing (OSPF, BFD inside VXLAN) rides the guaranteed class with the
    # substrate's own, ahead of the networks' classes that would take it otherwise.
    for label, ethertype, proto, port in TENANT_ROUTING:
        match = vxlan_routing_match(ethertype, proto, port, v6)
        add_filter(PRIO_TENANT_ROUTING, l3, match, mgmt_id, f"match vxlan {label}")
    for minor, vni, rate, ceil in tree.networks:
        cid = add_class(minor, rate, ceil)
        add_filter(PRIO_NETWORK, l3, vxlan_match(vni, v6), cid, f"match vxlan vni {vni}")
    add_filter(PRIO_ANY_VXLAN, l3, vxlan_match(None, v6), be_id, "match udp dport 4789")
    add_filter(PRIO_REST, ETH_P_ALL, (), mgmt_id, "match u32 0 0")
