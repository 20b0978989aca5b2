"""What one physical host's agent owns: its share of the virtual networks and its VRs.

A lab `Topology` describes many hosts and the links between them; an agent
knows only its own host. `host_configs(topo)` splits a lab into one
HostConfig per host, and the agent's datastore, the YANG codec, the clients
and (later) the controller all speak HostConfig, so a VR has one shape
between a NETCONF edit and the kernel.
"""

from __future__ import annotations

from ipaddress import ip_address

from pydantic import Field

from vnet.model.host_guarantees import Srv6OnHost, UnderlayInterface
from vnet.model.mtu import ETHERNET_MTU, VXLAN_OVERHEAD, network_mtu
from vnet.model.topology import (
    Address,
    PhysicalHost,
    Topology,
    VirtualNetwork,
    VirtualRouter,
    _Strict,
    by_name,
)
from vnet.model.underlay import underlay_addressing


class NetworkOnHost(_Strict):
    """A virtual network as one host carries it: the network and where its other members are."""

    network: VirtualNetwork
    # VXLAN tunnel endpoints of the other hosts that carry this network
    remote_vteps: list[Address] = Field(default_factory=list)


class HostConfig(_Strict):
    """The configuration of one physical host, as its agent holds and realises it."""

    host: str
    # this host's VXLAN tunnel endpoint; None: no underlay, networks stay on this host
    vtep: Address | None = None
    # the smallest MTU on the underlay between VTEPs (bounds the tenant MTU under VXLAN)
    underlay_mtu: int = Field(ETHERNET_MTU, ge=1280, le=9000)
    networks: list[NetworkOnHost] = Field(default_factory=list)
    routers: list[VirtualRouter] = Field(default_factory=list)
    # per underlay interface, the HTB classes of the networks' guarantees
    underlay: list[UnderlayInterface] = Field(default_factory=list)
    # SRv6 locators and the pieces of connections that land on this host
    srv6: Srv6OnHost = Field(default_factory=Srv6OnHost)

    def network(self, name: str) -> VirtualNetwork:
        return by_name((carried.network for carried in self.networks), name)

    def router(self, name: str) -> VirtualRouter:
        return by_name(self.routers, name)

    def as_topology(self) -> Topology:
        """The one-host view that the model's checks read (same list positions)."""
        return Topology(
            name="agent",
            hosts=[PhysicalHost(name=self.host)],
            networks=[carried.network for carried in self.networks],
            routers=self.routers,
        )


def max_host_mtu(hc: HostConfig) -> int | None:
    """The largest tenant MTU this host's VXLAN carries, or None without a VTEP."""
    if hc.vtep is None:
        return None
    family = "ipv4" if hc.vtep.version == 4 else "ipv6"
    return hc.underlay_mtu - VXLAN_OVERHEAD[family]


def host_network_mtu(hc: HostConfig, net: VirtualNetwork) -> int:
    """The configured MTU, or the largest one the host's VXLAN carries."""
    if net.mtu is not None:
        return net.mtu
    limit = max_host_mtu(hc)
    return ETHERNET_MTU if limit is None else min(ETHERNET_MTU, limit)


def network_carriers(topo: Topology, for_agents: bool = True) -> dict[str, set[str]]:
    """Network name -> the physical hosts that carry it.

    Those with a VR or end host in it, those the file names, and, where agents
    run and `for_agents`, every host (a VR may be created on any of them later).
    Guarantees are counted without the last: they follow the members there are.
    """
    every_host = for_agents and topo.management is not None and topo.management.agents
    carriers: dict[str, set[str]] = {
        n.name: {h.name for h in topo.hosts} if every_host else set(n.hosts) for n in topo.networks
    }
    for vr in topo.routers:
        for itf in vr.interfaces:
            carriers.setdefault(itf.network, set()).add(vr.host)
    for eh in topo.endhosts:
        carriers.setdefault(eh.network, set()).add(eh.host)
    return carriers


def host_configs(topo: Topology) -> dict[str, HostConfig]:
    """A checked and resolved lab topology as one HostConfig per host (what each agent gets).

    Each host carries the networks the lab puts on it, each with its resolved
    MTU and the VTEPs of the other hosts that carry it, and its own VRs.
    """
    loopback = underlay_addressing(topo).loopback
    carriers = network_carriers(topo)
    underlay_mtu = min((link.mtu for link in topo.links), default=ETHERNET_MTU)
    out = {}
    for host in topo.hosts:
        networks = [
            NetworkOnHost(
                network=net.model_copy(update={"mtu": network_mtu(topo, net)}),
                remote_vteps=[
                    ip_address(loopback[h.name])
                    for h in topo.hosts
                    if h.name != host.name and h.name in carriers[net.name]
                ],
            )
            for net in topo.networks
            if host.name in carriers.get(net.name, ())
        ]
        out[host.name] = HostConfig(
            host=host.name,
            vtep=ip_address(loopback[host.name]) if len(topo.hosts) > 1 else None,
            underlay_mtu=underlay_mtu,
            networks=networks,
            routers=[vr for vr in topo.routers if vr.host == host.name],
        )
    return out
