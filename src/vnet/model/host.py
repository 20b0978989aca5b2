"""What one physical host's agent owns: its share of the virtual networks and its VRs.

A lab `Topology` describes many hosts and the links between them; an agent
knows only its own host. `Topology.host_configs()` splits a lab into one
HostConfig per host, and the agent's datastore, the YANG codec, the clients
and (later) the controller all speak HostConfig, so a VR has one shape
between a NETCONF edit and the kernel.
"""

from __future__ import annotations

from pydantic import Field

from vnet.model.topology import (
    Address,
    VirtualNetwork,
    VirtualRouter,
    _Strict,
)


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
    # the largest MTU of this host's underlay links (bounds the tenant MTU under VXLAN)
    underlay_mtu: int = Field(1500, ge=1280, le=9000)
    networks: list[NetworkOnHost] = Field(default_factory=list)
    routers: list[VirtualRouter] = Field(default_factory=list)
    # Room for the per-host pieces the next issues add (underlay guarantees per
    # network, SRv6 locators and connection pieces): each gets a typed field here.

    def network(self, name: str) -> VirtualNetwork:
        for carried in self.networks:
            if carried.network.name == name:
                return carried.network
        raise KeyError(name)

    def router(self, name: str) -> VirtualRouter:
        for vr in self.routers:
            if vr.name == name:
                return vr
        raise KeyError(name)
