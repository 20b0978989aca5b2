"""What a connection costs on an underlay link: bandwidth + headers + shaper margin.

A connection's bandwidth is counted at the tenant's IP packets (what its shaper
and the application see). On the underlay every packet also carries the
encapsulation, so a link carries bandwidth * (size + overhead) / size, and the
controller adds a margin for shaper inaccuracy on top (paper 001: 5 %):

- SRv6: outer IPv6 (40) + SRH (8) + 16 per segment (`vnet.model.srv6.overhead`);
- VXLAN between hosts: outer IP + UDP + VXLAN + inner Ethernet, 50 bytes over
  IPv4, 70 over IPv6 (`vnet.model.mtu.VXLAN_OVERHEAD`).

A connection's SRv6 packets between VRs on different hosts travel inside the
virtual network's VXLAN, so both apply.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from math import ceil
from typing import Literal

from vnet.model.mtu import VXLAN_OVERHEAD
from vnet.model.srv6 import overhead as srv6_overhead

DEFAULT_MARGIN = Fraction(5, 100)  # paper 001's shaper margin
DEFAULT_PACKET_SIZE = 1500


@dataclass(frozen=True)
class Encapsulation:
    """Which headers a connection's packets carry on the underlay."""

    srv6: bool = True
    vxlan: Literal["ipv4", "ipv6"] | None = "ipv4"

    def overhead(self, segments: int) -> int:
        """Bytes added to each packet with a segment list of `segments` SIDs."""
        extra = srv6_overhead(segments) if self.srv6 else 0
        return extra + (VXLAN_OVERHEAD[self.vxlan] if self.vxlan else 0)


@lru_cache(maxsize=4096)  # every plan asks it per hop count; Fractions are slow to make
def link_cost(
    bandwidth: int,
    packet_size: int,
    encapsulation: Encapsulation,
    segments: int,
    margin: Fraction = DEFAULT_MARGIN,
) -> int:
    """Bit/s a connection takes on each link of a path with `segments` SIDs (rounded up).

    Exact arithmetic (Fraction): a reservation must not depend on float rounding,
    or two controllers could disagree by one bit about whether a link is full.
    """
    if bandwidth <= 0:
        raise ValueError(f"bandwidth {bandwidth} bit/s: must be positive")
    if packet_size <= 0:
        raise ValueError(f"packet size {packet_size} bytes: must be positive")
    if margin < 0:
        raise ValueError(f"shaper margin {margin}: must not be negative")
    wire = Fraction(packet_size + encapsulation.overhead(segments), packet_size)
    return ceil(bandwidth * wire * (1 + Fraction(margin)))
