"""What one host carries of the guarantees: underlay classes and SRv6 connection pieces.

A lab derives these from its topology (`vnet.model.host_pieces`); a manager or an
operator writes them to an agent over NETCONF/RESTCONF. They are the per-host
form of paper 001's guarantees:

- per underlay interface, the HTB tree of the link: its rate, a reserved class
  for management and routing traffic, one class per virtual network with a
  guarantee (rate, ceil), classified by the VXLAN VNI, and best effort for the rest;
- the host's SRv6 locators, each owned by one of its VRs;
- per connection, the pieces on this host: at the ingress VR the 5-tuple steering
  rule, the segment list and the connection's shaper; at transit VRs the End
  SIDs; at the egress VR End.DX4/End.DX6 towards the destination end host.
"""

from __future__ import annotations

from ipaddress import IPv4Address, IPv6Address

from pydantic import Field

from vnet.model.connection import CONNECTION_ID_MAX, Protocol
from vnet.model.topology import Address, Network6, Rate, _Strict

IFNAME_MAX = 15


class NetworkClass(_Strict):
    """The guarantee of one virtual network on one underlay interface."""

    network: str
    rate: Rate
    ceil: Rate | None = None  # None: the rate (no borrowing)

    @property
    def limit(self) -> int:
        return self.ceil or self.rate


class UnderlayInterface(_Strict):
    """An interface towards the underlay and the HTB tree on it."""

    name: str = Field(min_length=1, max_length=IFNAME_MAX)
    rate: Rate  # the link's capacity: the root class
    reserved: Rate  # management and routing traffic (everything but tenant VXLAN)
    classes: list[NetworkClass] = Field(default_factory=list)

    @property
    def best_effort(self) -> int:
        """What is left for VXLAN of networks without a class (at least 8 kbit/s)."""
        left = self.rate - self.reserved - sum(c.rate for c in self.classes)
        return max(left, 8_000)


class Locator(_Strict):
    """An SRv6 locator of this host, owned by one of its VRs."""

    prefix: Network6
    router: str


class Ingress(_Strict):
    """Where a connection's tunnel starts: steering, encapsulation, shaping."""

    router: str
    lan_network: str  # the network the source end host is in (the rule's iif)
    network: str  # towards the first segment (the shaper sits on this interface)
    source: Address
    destination: Address
    protocol: Protocol | None = None
    source_port: int | None = Field(None, ge=1, le=65535)
    destination_port: int | None = Field(None, ge=1, le=65535)
    segments: list[IPv6Address] = Field(min_length=1)
    bandwidth: Rate

    @property
    def family(self) -> int:
        return self.destination.version


class Transit(_Strict):
    """An End SID of a VR in the middle of a connection's path."""

    router: str
    sid: IPv6Address
    network: str  # the interface the seg6local route names


class Egress(_Strict):
    """Where a tunnel ends: End.DX4 or End.DX6 to the destination end host."""

    router: str
    sid: IPv6Address
    network: str  # towards the destination end host
    next_hop: Address

    @property
    def action(self) -> str:
        return "End.DX4" if isinstance(self.next_hop, IPv4Address) else "End.DX6"


class ConnectionPieces(_Strict):
    """Everything of one connection that lands on this host."""

    name: str = Field(min_length=1, max_length=32)
    id: int = Field(ge=1, le=CONNECTION_ID_MAX)
    ingress: list[Ingress] = Field(default_factory=list)
    transit: list[Transit] = Field(default_factory=list)
    egress: list[Egress] = Field(default_factory=list)


class Srv6OnHost(_Strict):
    locators: list[Locator] = Field(default_factory=list)
    connections: list[ConnectionPieces] = Field(default_factory=list)

    def connection(self, name: str) -> ConnectionPieces:
        return next(c for c in self.connections if c.name == name)
