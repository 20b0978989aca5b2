"""Which MTU a tenant sees, so that encapsulation never drops a frame silently."""

from __future__ import annotations

from vnet.model.srv6 import endpoint_mtu_cap
from vnet.model.topology import Topology, VirtualNetwork

ETHERNET_MTU = 1500
# Outer IP + UDP (8) + VXLAN (8) + the inner Ethernet header (14).
VXLAN_OVERHEAD = {"ipv4": 20 + 8 + 8 + 14, "ipv6": 40 + 8 + 8 + 14}


def max_tenant_mtu(topo: Topology) -> int | None:
    """The largest tenant MTU the underlay carries, or None without an underlay.

    Every network may span hosts (an agent cannot know where its peers put
    their routers), so the limit is the same for all networks: the smallest
    underlay link MTU minus the VXLAN overhead.
    """
    if len(topo.hosts) < 2:
        return None
    underlay_mtu = min((link.mtu for link in topo.links), default=ETHERNET_MTU)
    return underlay_mtu - VXLAN_OVERHEAD[topo.underlay.family]


def base_network_mtu(topo: Topology, net: VirtualNetwork) -> int:
    """The configured MTU, or the largest one the underlay carries (ignoring tunnels)."""
    if net.mtu is not None:
        return net.mtu
    limit = max_tenant_mtu(topo)
    return ETHERNET_MTU if limit is None else min(ETHERNET_MTU, limit)


def network_mtu(topo: Topology, net: VirtualNetwork) -> int:
    """The MTU of every interface in `net`: the configured one or the largest safe one.

    Where connections start, "safe" leaves room for their SRv6 encapsulation
    (the kernel sends no "packet too big" back to the host for it).
    """
    mtu = base_network_mtu(topo, net)
    if net.mtu is None and topo.connections:
        cap = endpoint_mtu_cap(topo, net.name, lambda n: base_network_mtu(topo, n))
        if cap is not None:
            mtu = min(mtu, cap)
    return mtu
