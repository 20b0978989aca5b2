"""Model -> desired kernel state: how vnet maps its objects onto Linux.

- physical host (lab only): a namespace with the underlay links and a loopback VTEP address
- virtual network on a host: a bridge "vb<VNI>", plus "vx<VNI>" (VXLAN) when other hosts carry it
- VR: a namespace with forwarding; interface k is a veth "vr<index>i<k>" on the bridge
- end host: a namespace with "eth0", a veth "eh-<name>" on the bridge
- VR admin state down: its bridge-side ports go down; the VR keeps every address and route
"""

from __future__ import annotations

from vnet.model import Topology, network_mtu
from vnet.model.management import MANAGEMENT_NODE, client_address, host_address
from vnet.model.underlay import underlay_addressing
from vnet.substrate.address import Address
from vnet.substrate.fdb import Fdb
from vnet.substrate.link import Link
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
from vnet.substrate.realize_guarantees import realize_connections, realize_qos
from vnet.substrate.route import Route
from vnet.substrate.state import KernelState
from vnet.substrate.tc import Shaper


def realize(topo: Topology, where: Placement) -> KernelState:
    state = KernelState()
    addressing = underlay_addressing(topo)
    _underlay(topo, where, addressing, state)
    carriers = _network_carriers(topo)
    if where.remote_vteps is not None and where.only_host is not None:
        # an agent's networks are provisioned on its host whether or not a VR uses them yet
        carriers = {net.name: {where.only_host} for net in topo.networks}
    if topo.management is not None and where.only_host is None:
        _management(topo, where, state)
    for net in topo.networks if where.networks else ():
        for host in sorted(carriers.get(net.name, ())):
            if where.includes(host):
                _network_on_host(topo, where, addressing, carriers, net.name, host, state)
    for vr in topo.routers if where.routers else ():
        if not where.includes(vr.host):
            continue
        ns = where.node_ns(vr.name)
        state.add_namespace(Namespace(ns, where.scope, "router", vr.name))
        assert vr.index is not None, "resolve() assigns every VR an index"
        for k, itf in enumerate(vr.interfaces):
            net = topo.network(itf.network)
            ifname = vr.ifname(k)
            state.add_link(
                Link(
                    ns=where.host_ns(vr.host),
                    name=vr_port_name(vr.index, k),
                    kind="veth",
                    scope=where.scope,
                    mtu=network_mtu(topo, net),
                    up=vr.admin_state == "up",
                    master=bridge_name(net.vni),
                    peer_ns=ns,
                    peer_name=ifname,
                )
            )
            for addr in (itf.ipv4, itf.ipv6):
                if addr is not None:
                    state.addresses.add(Address(ns, ifname, str(addr)))
        for route in vr.routes:
            state.routes.add(Route(ns, str(route.destination), str(route.via)))
    for eh in topo.endhosts if where.endhosts else ():
        if not where.includes(eh.host):
            continue
        ns = where.node_ns(eh.name)
        net = topo.network(eh.network)
        state.add_namespace(Namespace(ns, where.scope, "endhost", eh.name))
        state.add_link(
            Link(
                ns=where.host_ns(eh.host),
                name=endhost_port_name(eh.name),
                kind="veth",
                scope=where.scope,
                mtu=network_mtu(topo, net),
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
    if topo.connections and where.routers:
        realize_connections(topo, where, state)
    realize_qos(topo, where, state)
    return state


def _network_carriers(topo: Topology) -> dict[str, set[str]]:
    """Network name -> the physical hosts that carry it.

    Those with a VR or end host in it, those the file names, and with
    agents every host (a VR may be created on any of them later).
    """
    every_host = topo.management is not None and topo.management.agents
    carriers: dict[str, set[str]] = {
        n.name: {h.name for h in topo.hosts} if every_host else set(n.hosts) for n in topo.networks
    }
    for vr in topo.routers:
        for itf in vr.interfaces:
            carriers.setdefault(itf.network, set()).add(vr.host)
    for eh in topo.endhosts:
        carriers.setdefault(eh.network, set()).add(eh.host)
    return carriers


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


def _underlay(topo: Topology, where: Placement, addressing, state: KernelState) -> None:  # type: ignore[no-untyped-def]
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
        if link.rate is not None:
            state.shapers[(a_ns, a_name)] = Shaper(a_ns, a_name, link.rate)
            state.shapers[(b_ns, b_name)] = Shaper(b_ns, b_name, link.rate)


def _network_on_host(  # type: ignore[no-untyped-def]
    topo: Topology,
    where: Placement,
    addressing,
    carriers: dict[str, set[str]],
    network: str,
    host: str,
    state: KernelState,
) -> None:
    net = topo.network(network)
    ns = where.host_ns(host)
    mtu = network_mtu(topo, net)
    state.add_link(
        Link(ns=ns, name=bridge_name(net.vni), kind="bridge", scope=where.scope, mtu=mtu)
    )
    if where.remote_vteps is not None:
        remote_addrs = sorted(where.remote_vteps.get(network, ()))
        local = where.local_vtep
    else:
        remote_addrs = sorted(addressing.loopback[h] for h in carriers[network] - {host})
        local = addressing.loopback[host]
    if not remote_addrs or local is None:
        return
    state.add_link(
        Link(
            ns=ns,
            name=vxlan_name(net.vni),
            kind="vxlan",
            scope=where.scope,
            mtu=mtu,
            master=bridge_name(net.vni),
            vni=net.vni,
            local=local,
        )
    )
    for remote in remote_addrs:
        state.fdb.add(Fdb(ns, vxlan_name(net.vni), remote))
