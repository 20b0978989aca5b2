"""Guarantees on Linux: connections (SRv6 tunnels) and bandwidth (HTB classes).

What `realize` adds for a topology's connections and network bandwidths; the
objects and their operations are in seg6.py and tc.py.
"""

from __future__ import annotations

from ipaddress import ip_network

from vnet.model import Topology
from vnet.model.qos import best_effort_rate, link_shares, network_links
from vnet.model.srv6 import PROTOCOL_NUMBERS, tunnels
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
    VNET_MAJOR,
    TcClass,
    TcFilter,
    TcRoot,
    bytes_rate,
    handle,
    queue_bytes,
)
from vnet.substrate.u32 import ip6_dst_match, vxlan_match


def realize_connections(topo: Topology, where: Placement, state: KernelState) -> None:
    """Add every connection's SIDs, tables and rules on the hosts `where` includes."""
    if not topo.connections:
        return
    hosts = {vr.name: vr.host for vr in topo.routers}
    for t in tunnels(topo):
        if where.includes(hosts[t.ingress]):
            ns = where.node_ns(t.ingress)
            for fam in t.families:
                host_len = 32 if fam == 4 else 128
                dst = f"{t.dst_addr[fam]}/{host_len}"
                steer = SteerRoute(ns, t.table, dst, t.segments(fam), t.out_ifname)
                state.steers[steer.key] = steer
                proto = PROTOCOL_NUMBERS[t.protocol][0 if fam == 4 else 1] if t.protocol else None
                state.rules.add(
                    SteerRule(
                        ns,
                        fam,
                        t.priority,
                        t.table,
                        f"{t.src_addr[fam]}/{host_len}",
                        dst,
                        t.lan_ifname,
                        proto,
                        t.src_port,
                        t.dst_port,
                    )
                )
        for router, end_sid in t.transit:
            if where.includes(hosts[router]):
                vr = topo.router(router)
                s = SidRoute(where.node_ns(router), end_sid, "End", None, vr.ifname(0))
                state.sids[s.key] = s
        if where.includes(hosts[t.egress]):
            for fam in t.families:
                action = "End.DX4" if fam == 4 else "End.DX6"
                s = SidRoute(
                    where.node_ns(t.egress),
                    t.egress_sids[fam],
                    action,
                    t.dst_addr[fam],
                    t.egress_ifname,
                )
                state.sids[s.key] = s


def network_minors(topo: Topology) -> dict[str, int]:
    """Network -> its class minor on underlay links: the VNI where it fits, else a free one."""
    out: dict[str, int] = {}
    taken = {LINK_ROOT_CLASS & 0xFFFF, MANAGEMENT_MINOR, BEST_EFFORT_MINOR}
    late = []
    for net in sorted(topo.networks, key=lambda n: n.vni):
        if net.bandwidth is None:
            continue
        if net.vni <= 0xFFFF and net.vni not in taken:
            out[net.name] = net.vni
            taken.add(net.vni)
        else:
            late.append(net)
    minor = 0x10
    for net in late:
        while minor in taken:
            minor += 1
        out[net.name] = minor
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
    if not topo.connections or not where.routers:
        return
    hosts = {vr.name: vr.host for vr in topo.routers}
    root = handle(VNET_MAJOR, 0)
    for t in tunnels(topo):
        if not where.includes(hosts[t.ingress]):
            continue
        ns = where.node_ns(t.ingress)
        state.tc_roots.add(TcRoot(ns, t.out_ifname))
        cls = TcClass(
            ns,
            t.out_ifname,
            handle(VNET_MAJOR, t.id),
            root,
            bytes_rate(t.bandwidth),
            bytes_rate(t.bandwidth),
            queue_bytes(t.bandwidth),
        )
        state.tc_classes[cls.key] = cls
        prefix = ip_network(t.first_hop_sids)
        state.tc_filters.add(
            TcFilter(
                ns,
                t.out_ifname,
                root,
                1,
                ETH_P_IPV6,
                ip6_dst_match(prefix),  # type: ignore[arg-type]
                cls.classid,
                label=f"match ip6 dst {prefix}",
                hint=t.id,
            )
        )


def _realize_underlay(
    topo: Topology, link_ends: dict[int, list[tuple[NsName, str]]], state: KernelState
) -> None:
    if not link_ends:
        return
    links_of = network_links(topo)
    shares = link_shares(topo, links_of)
    minors = network_minors(topo)
    nets = {n.name: n for n in topo.networks}
    v6 = topo.underlay.family == "ipv6"
    l3 = ETH_P_IPV6 if v6 else ETH_P_IP
    for j, ends in link_ends.items():
        link = topo.links[j]
        if j not in shares or link.rate is None:
            continue
        rate = link.rate
        for ns, dev in ends:

            def add_class(minor: int, r: int, ceil: int, ns: NsName = ns, dev: str = dev) -> int:
                cls = TcClass(
                    ns,
                    dev,
                    handle(LINK_MAJOR, minor),
                    LINK_ROOT_CLASS,
                    bytes_rate(r),
                    bytes_rate(ceil),
                    queue_bytes(ceil),
                )
                state.tc_classes[cls.key] = cls
                return cls.classid

            mgmt = shares[j][0]
            mgmt_id = add_class(MANAGEMENT_MINOR, mgmt.rate, rate)
            be_id = add_class(BEST_EFFORT_MINOR, best_effort_rate(link, shares[j]), rate)
            root = handle(LINK_MAJOR, 0)
            for node, share in enumerate(shares[j][1:], start=1):
                assert share.network is not None
                net = nets[share.network]
                cid = add_class(minors[share.network], share.rate, share.ceil)
                state.tc_filters.add(
                    TcFilter(
                        ns,
                        dev,
                        root,
                        1,
                        l3,
                        vxlan_match(net.vni, v6),
                        cid,
                        label=f"match vxlan vni {net.vni}",
                        hint=node,
                    )
                )
            state.tc_filters.add(
                TcFilter(
                    ns,
                    dev,
                    root,
                    2,
                    l3,
                    vxlan_match(None, v6),
                    be_id,
                    label="match udp dport 4789",
                    hint=1,
                )
            )
            state.tc_filters.add(
                TcFilter(ns, dev, root, 3, ETH_P_ALL, (), mgmt_id, label="match u32 0 0", hint=1)
            )
