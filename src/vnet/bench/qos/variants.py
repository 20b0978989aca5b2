"""Table 3's other rows: 100-byte packets, and the round trip through the connection.

Paper 001's Table 3 sends 1460 B and 100 B packets through the tunnel one way
(R1 -> ... -> R2) and round trip (R1 -> ... -> R2 -> ... -> R1, both tunnels
loaded at once). Here the round trip is two UDP flows at the same time, hs ->
hd through the connection's tunnel and hd -> hs through its reverse tunnel
(the connection is bidirectional, each direction shaped at its own entry);
achieved and loss are the mean of the two directions. 100 B packets are
measured only up to SMALL_PACKET_MAX_RATE: 1.2x a 1 Gbit/s limit would be
1.5 million packets a second, beyond what iperf3 sends from one core.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from vnet.bench.qos.scenario import (
    DST,
    OFFER,
    PATH_A,
    SRC,
    UDP_IPV4_OVERHEAD,
    address_of,
    connection_shaper,
    node_ns,
    udp_length,
)
from vnet.lab.shaping import FlowResult, run_flow
from vnet.model import Topology

SMALL_PACKET = 100  # B, IP packet
SMALL_PACKET_MAX_RATE = 100  # Mbit/s
REVERSE_PORT = 5202


@dataclass(frozen=True)
class Variant:
    """A UDP flow through the connection: packet size (None: the host's MTU), direction."""

    packet: int | None
    round_trip: bool

    @property
    def series(self) -> str:
        size = f" {self.packet} B" if self.packet else ""
        return f"connection udp{size}" + (" round trip" if self.round_trip else "")

    def path(self) -> str:
        there = "→".join(PATH_A)
        back = "→".join(reversed(PATH_A))
        return f"{there} {back} (SRv6, round trip)" if self.round_trip else f"{there} (SRv6)"


def variants(rate: float) -> list[Variant]:
    """The rows beyond the MTU-sized one-way UDP row, for one configured rate."""
    out = [Variant(None, True)]
    if rate <= SMALL_PACKET_MAX_RATE:
        out += [Variant(SMALL_PACKET, False), Variant(SMALL_PACKET, True)]
    return out


def packet_size(topo: Topology, v: Variant) -> int:
    return v.packet or udp_length(topo, SRC) + UDP_IPV4_OVERHEAD


def measure_variant(topo: Topology, v: Variant, rate: float, seconds: float) -> list[FlowResult]:
    """One run: the flows of `v` at 1.2x `rate` Mbit/s (IP packets), one per direction."""
    length = packet_size(topo, v) - UDP_IPV4_OVERHEAD
    offered = rate * 1e6 * OFFER * length / (length + UDP_IPV4_OVERHEAD)  # iperf3 counts payload
    ends = [(SRC, DST, 5201, False)] + ([(DST, SRC, REVERSE_PORT, True)] if v.round_trip else [])

    def flow(src: str, dst: str, port: int, reverse: bool) -> FlowResult:
        return run_flow(
            node_ns(src),
            node_ns(dst),
            address_of(topo, dst),
            seconds=seconds,
            protocol="udp",
            rate_bps=offered,
            length=length,
            port=port,
            shaper=connection_shaper(topo, reverse=reverse),
            ping_from=None if reverse else node_ns(SRC),
            ping_to=None if reverse else address_of(topo, DST),
        )

    with ThreadPoolExecutor(max_workers=len(ends)) as pool:
        futures = [pool.submit(flow, *end) for end in ends]
        return [f.result() for f in futures]
