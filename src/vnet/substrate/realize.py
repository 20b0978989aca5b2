"""Model -> desired kernel state: how vnet maps its objects onto Linux.

- physical host (lab only): a namespace with the underlay links and a loopback VTEP address
- virtual network on a host: a bridge "vb<VNI>", plus "vx<VNI>" (VXLAN) when other hosts carry it
- VR: a namespace with forwarding; interface k is a veth "vr<index>i<k>" on the bridge
- end host: a namespace with "eth0", a veth "eh-<name>" on the bridge
- VR admin state down: its bridge-side ports go down; the VR keeps every address and route
- bridge shortcuts: members of one network on one host reach each other's MAC through an
  eBPF redirect on their bridge-side ports, past the bridge (redirect.py); ports that are
  down or carry a shaper or bandwidth classes keep the plain bridge path
"""

from __future__ import annotations

from collections.abc import Collection

from vnet.model import Topology, network_mtu
from vnet.model.host import HostConfig, host_network_mtu, network_carriers
from vnet.model.host_guarantees import ConnectionPieces, Srv6OnHost
from vnet.model.management import MANAGEMENT_NODE, client_address, host_address
from vnet.model.topology import EndHost, VirtualNetwork, VirtualRouter
from vnet.model.underlay import UnderlayAddressing, underlay_addressing
from vnet.substrate.address import Address
from vnet.substrate.cgroup import node_cgroup
from vnet.substrate.fdb import Fdb
from vnet.substrate.link import Link
from vnet.substrate.marks import NsName
from vnet.substrate.namespace import Namespace
from vnet.substrate.placement import (
    Placement,
    bridge_name,
    endhost_port_name,
    management_port_name,
    underlay_port_name,
    vr_port_name,
    vxlan_name,
)
from vnet.substrate.realize_guarantees import (
    realize_connections,
    realize_host_guarantees,
    realize_pieces,
    realize_qos,
)
from vnet.substrate.redirect import MAX_TARGETS, Redirect
from vnet.substrate.route import Route
from vnet.substrate.state import KernelState
from vnet.substrate.tc import Shaper

Members = dict[tuple[NsName, str], frozenset[str]]  # (namespace, bridge) -> member ports


def realize(topo: Topology, where: Placement) -> KernelState:
    """A lab: every host of `topo` (those `where` includes), its underlay and tenants."""
    state = KernelState()
    addressing = underlay_addressing(topo)
    _underlay(topo, where, addressing, state)
    if topo.management is not None and where.only_host is None:
        _management(topo, where, state)
    carriers = network_carriers(topo)
    mtus = {net.name: network_mtu(topo, net) for net in topo.networks}
    for net in topo.networks if where.networks else ():
        for host in sorted(carriers.get(net.name, ())):
            if where.includes(host):
                local = addressing.loopback[host]
                remotes = sorted(addressing.loopback[h] for h in carriers[net.name] - {host})
                add_network(state, where, where.host_ns(host), net, mtus[net.name], local, remotes)
    nets = {net.name: net for net in topo.networks}
    for vr in topo.routers if where.routers else ():
        if where.includes(vr.host):
            add_router(state, where, vr, nets, mtus)
    for eh in topo.endhosts if where.endhosts else ():
        if where.includes(eh.host):
            _endhost(state, where, eh, nets[eh.network], mtus[eh.network])
    if topo.connections and where.routers:
        realize_connections(topo, where, state)
    realize_qos(topo, where, state)
    add_shortcuts(state, where.scope)
    return state


def realize_host(hc: HostConfig, where: Placement) -> KernelState:
    """An agent: the networks its host carries (if it provisions them) and its VRs."""
    state = KernelState()
    ns = where.host_ns(hc.host)
    local = str(hc.vtep) if hc.vtep is not None else None
    nets = {carried.network.name: carried.network for carried in hc.networks}
    mtus = {name: host_network_mtu(hc, net) for name, net in nets.items()}
    for carried in hc.networks if where.networks else ():
        net = carried.network
        remotes = sorted(str(v) for v in carried.remote_vteps)
        add_network(state, where, ns, net, mtus[net.name], local, remotes)
    for vr in hc.routers if where.routers else ():
        add_router(state, where, vr, nets, mtus)
    realize_host_guarantees(hc, where, state)
    add_shortcuts(state, where.scope)  # last: ports with shapers keep the bridge path
    return state


def realize_host_change(
    before: KernelState,
    hc: HostConfig,
    where: Placement,
    gone: list[VirtualRouter],
    made: list[VirtualRouter],
    members: Members | None = None,
) -> tuple[KernelState, KernelState, Members]:
    """`realize_host(hc, where)`, from `before` (what it gave for the previous configuration)
    when only VRs changed: the VRs `gone` (deleted or replaced) taken out, those `made`
    (new or replacing) put in, the shortcuts of the bridges they join worked out again
    (`members`: before's shortcut members, see shortcut_members; None: found). Only for a
    host without guarantees (their classes and pieces name VRs); the networks as they were.
    Also the objects of both, the only ones but shortcuts that can differ from `before`
    (a VR's namespace holds nothing but what add_router puts there), and the new members."""
    state = before.copy()
    nets = {carried.network.name: carried.network for carried in hc.networks}
    mtus = {name: host_network_mtu(hc, net) for name, net in nets.items()}
    old, new = KernelState(), KernelState()
    for vr in gone:
        add_router(old, where, vr, nets, mtus)
    for vr in made:
        add_router(new, where, vr, nets, mtus)
    state.remove(old)
    state.merge(new)
    members = shortcut_members(before) if members is None else members
    members = _shortcuts_again(state, where.scope, members, old, new)
    touched = old.copy()
    touched.merge(new)
    return state, touched, members


def _shortcuts_again(
    state: KernelState, scope: str, members: Members, old: KernelState, new: KernelState
) -> Members:
    """The shortcuts of the bridges whose ports `old` and `new` hold, worked out again in
    `state` (the others' stay): the members after the change."""
    shaped = _shaped(state)
    links = [*old.links.values(), *new.links.values()]
    bridges = {b for lk in links if (b := _bridge(lk)) is not None}
    for bridge in bridges:  # all first: a port may move from one bridge to another
        if _takes_shortcuts(had := members.get(bridge, frozenset())):
            for port in had:
                state.redirects.pop((bridge[0], port), None)
    after = dict(members)
    for bridge in bridges:
        ports = set(members.get(bridge, ()))
        ports -= {lk.name for lk in old.links.values() if _bridge(lk) == bridge}
        ports |= {lk.name for lk in new.links.values() if _member_of(lk, shaped) == bridge}
        after[bridge] = frozenset(ports)
        _bridge_shortcuts(state, scope, bridge[0], ports)
    return {bridge: ports for bridge, ports in after.items() if ports}


def shortcut_members(state: KernelState) -> Members:
    """Per bridge, the ports that take shortcuts (see add_shortcuts)."""
    shaped = _shaped(state)
    members: dict[tuple[NsName, str], set[str]] = {}
    for lk in state.links.values():
        if (bridge := _member_of(lk, shaped)) is not None:
            members.setdefault(bridge, set()).add(lk.name)
    return {bridge: frozenset(ports) for bridge, ports in members.items()}


def _bridge(lk: Link) -> tuple[NsName, str] | None:
    return (lk.ns, lk.master) if lk.kind == "veth" and lk.master else None


def _member_of(lk: Link, shaped: set[tuple[NsName, str]]) -> tuple[NsName, str] | None:
    """The bridge whose shortcuts `lk` takes part in, if any."""
    return _bridge(lk) if lk.up and lk.key not in shaped else None


def _shaped(state: KernelState) -> set[tuple[NsName, str]]:
    shaped = set(state.shapers)
    shaped |= {(r.ns, r.dev) for r in state.tc_roots}
    shaped |= {(c.ns, c.dev) for c in state.tc_classes.values()}
    return shaped


def _takes_shortcuts(ports: Collection[str]) -> bool:
    """Whether a bridge of these member ports has shortcuts: a larger one has none (and
    the ports of a bridge of thousands are neither sorted nor looked at in each commit)."""
    return 2 <= len(ports) <= MAX_TARGETS + 1


def _bridge_shortcuts(state: KernelState, scope: str, ns: NsName, ports: Collection[str]) -> None:
    if not _takes_shortcuts(ports):
        return
    ports = sorted(ports)
    for port in ports:
        others = tuple(p for p in ports if p != port)
        state.redirects[(ns, port)] = Redirect(ns, port, scope, others)


def realize_host_connections(
    before: KernelState,
    hc: HostConfig,
    where: Placement,
    gone: list[ConnectionPieces],
    made: list[ConnectionPieces],
) -> tuple[KernelState, KernelState]:
    """`realize_host(hc, where)`, from `before` (what it gave for the previous configuration)
    when only connections changed: the pieces of those `gone` (deleted or replaced) taken
    out, those of the ones `made` (new or replacing) put in. Also the pieces of both, the
    only tunnel objects that can differ from `before` (plan_tunnels compares just those)."""
    routers = {vr.name: vr for vr in hc.routers}
    old, new = KernelState(), KernelState()
    if where.routers:
        realize_pieces(Srv6OnHost(connections=gone), routers, where, old)
        realize_pieces(Srv6OnHost(connections=made), routers, where, new)
    state = before.copy()
    state.remove(old)
    state.merge(new)
    # an HTB root stays while another connection's class hangs off it
    for root in old.tc_roots - new.tc_roots:
        if any(c.ns == root.ns and c.dev == root.dev for c in state.tc_classes.values()):
            state.tc_roots.add(root)
    if state.tc_roots != before.tc_roots:  # a port gained or lost its only shaper
        state.redirects = {}
        add_shortcuts(state, where.scope)
    touched = old.copy()
    touched.merge(new)
    return state, touched


def add_shortcuts(state: KernelState, scope: str) -> None:
    """A redirect on each member port of a bridge towards the other members' ports.

    Only ports this realisation makes are members here (an agent's VRs, a lab's
    end hosts): a frame for any other MAC takes the bridge, so the shortcut is
    right whoever else is on it. Ports that are down, or carry a shaper or
    bandwidth classes (their egress qdisc would be skipped), stay on the bridge.
    """
    for (ns, _bridge_name), ports in shortcut_members(state).items():
        _bridge_shortcuts(state, scope, ns, ports)


def add_network(
    state: KernelState,
    where: Placement,
    ns: NsName,
    net: VirtualNetwork,
    mtu: int,
    local: str | None,
    remotes: list[str],
) -> None:
    """A network on one host: its bridge, and a VXLAN device when other hosts carry it."""
    bridge = bridge_name(net.vni)
    state.add_link(Link(ns=ns, name=bridge, kind="bridge", scope=where.scope, mtu=mtu))
    if not remotes or local is None:
        return
    vxlan = vxlan_name(net.vni)
    state.add_link(
        Link(
            ns=ns,
            name=vxlan,
            kind="vxlan",
            scope=where.scope,
            mtu=mtu,
            master=bridge,
            vni=net.vni,
            local=local,
        )
    )
    for remote in remotes:
        state.fdb.add(Fdb(ns, vxlan, remote))


def add_router(
    state: KernelState,
    where: Placement,
    vr: VirtualRouter,
    nets: dict[str, VirtualNetwork],
    mtus: dict[str, int],
) -> None:
    """A VR: its namespace, a veth per interface onto the network's bridge, addresses, routes."""
    ns = where.node_ns(vr.name)
    state.add_namespace(Namespace(ns, where.scope, "router", vr.name))
    if vr.resources is not None:
        state.cgroups[ns] = node_cgroup(ns, where.scope, vr.resources)
    assert vr.index is not None, "resolve() assigns every VR an index"
    for k, itf in enumerate(vr.interfaces):
        ifname = vr.ifname(k)
        state.add_link(
            Link(
                ns=where.host_ns(vr.host),
                name=vr_port_name(vr.index, k),
                kind="veth",
                scope=where.scope,
                mtu=mtus[itf.network],
                up=vr.admin_state == "up",
                master=bridge_name(nets[itf.network].vni),
                peer_ns=ns,
                peer_name=ifname,
            )
        )
        for addr in (itf.ipv4, itf.ipv6):
            if addr is not None:
                state.addresses.add(Address(ns, ifname, str(addr)))
    for route in vr.routes:
        state.routes.add(Route(ns, str(route.destination), str(route.via)))


def _endhost(
    state: KernelState, where: Placement, eh: EndHost, net: VirtualNetwork, mtu: int
) -> None:
    ns = where.node_ns(eh.name)
    state.add_namespace(Namespace(ns, where.scope, "endhost", eh.name))
    if eh.resources is not None:
        state.cgroups[ns] = node_cgroup(ns, where.scope, eh.resources)
    state.add_link(
        Link(
            ns=where.host_ns(eh.host),
            name=endhost_port_name(eh.name),
            kind="veth",
            scope=where.scope,
            mtu=mtu,
            master=bridge_name(net.vni),
            peer_ns=ns,
            peer_name="eth0",
        )
    )
    for addr in (eh.ipv4, eh.ipv6):
        if addr is not None:
            state.addresses.add(Address(ns, "eth0", str(addr)))
    for route in eh.routes:
        state.routes.add(Route(ns, str(route.destination), str(route.via)))


def _management(topo: Topology, where: Placement, state: KernelState) -> None:
    """A namespace with a bridge joining every host's "mgmt0": the lab's management network."""
    ns = where.node_ns(MANAGEMENT_NODE)
    prefix = topo.management.subnet.prefixlen  # type: ignore[union-attr]
    state.add_namespace(Namespace(ns, where.scope, "mgmt", MANAGEMENT_NODE))
    state.add_link(Link(ns=ns, name="mgmt", kind="bridge", scope=where.scope))
    state.addresses.add(Address(ns, "mgmt", f"{client_address(topo)}/{prefix}"))
    for host in topo.hosts:
        host_ns = where.host_ns(host.name)
        state.add_link(
            Link(
                ns=host_ns,
                name="mgmt0",
                kind="veth",
                scope=where.scope,
                peer_ns=ns,
                peer_name=management_port_name(host.name),
                peer_master="mgmt",
            )
        )
        state.addresses.add(Address(host_ns, "mgmt0", f"{host_address(topo, host.name)}/{prefix}"))


def _underlay(
    topo: Topology, where: Placement, addressing: UnderlayAddressing, state: KernelState
) -> None:
    host_len = 32 if topo.underlay.family == "ipv4" else 128
    for host in topo.hosts:
        if not where.includes(host.name):
            continue
        ns = where.host_ns(host.name)
        if ns is not None:
            state.add_namespace(Namespace(ns, where.scope, "host", host.name))
            # Outside the lab the host's own addresses are the operator's business.
            state.addresses.add(Address(ns, "lo", f"{addressing.loopback[host.name]}/{host_len}"))
            for dst, via in addressing.routes[host.name]:
                state.routes.add(Route(ns, dst, via))
    for j, link in enumerate(topo.links):
        a_ns, b_ns = where.host_ns(link.a), where.host_ns(link.b)
        if where.only_host is not None or a_ns is None or b_ns is None:
            continue  # underlay links exist only in the lab
        a_name, b_name = underlay_port_name(link.b), underlay_port_name(link.a)
        state.add_link(
            Link(
                ns=a_ns,
                name=a_name,
                kind="veth",
                scope=where.scope,
                mtu=link.mtu,
                peer_ns=b_ns,
                peer_name=b_name,
            )
        )
        a_addr, b_addr = addressing.link_addresses[j]
        state.addresses.add(Address(a_ns, a_name, a_addr))
        state.addresses.add(Address(b_ns, b_name, b_addr))
        if link.rate is not None and where.routers:  # else the hosts' agents shape them
            state.shapers[(a_ns, a_name)] = Shaper(a_ns, a_name, link.rate)
            state.shapers[(b_ns, b_name)] = Shaper(b_ns, b_name, link.rate)
