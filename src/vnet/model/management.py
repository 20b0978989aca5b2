"""Addresses of the lab's management network (one agent per physical host)."""

from __future__ import annotations

from ipaddress import IPv4Address

from vnet.model.topology import Topology

MANAGEMENT_NODE = "mgmt"  # the namespace holding the management bridge


def host_address(topo: Topology, host: str) -> IPv4Address:
    """Host i (1-based, file order) gets the i-th address of the management subnet."""
    assert topo.management is not None
    index = [h.name for h in topo.hosts].index(host) + 1
    return topo.management.subnet.network_address + index


def client_address(topo: Topology) -> IPv4Address:
    """The management namespace's own address, from which lab tools connect."""
    assert topo.management is not None
    return topo.management.subnet.broadcast_address - 1
