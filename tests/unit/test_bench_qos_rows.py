"""vnet bench qos: Table 3's 100-byte and round-trip rows, planned without root."""

from __future__ import annotations

from pathlib import Path

from vnet.bench.qos import EXAMPLE
from vnet.bench.qos.scenario import (
    PATH_A,
    connection_shaper,
    connection_spec,
    udp_length,
    variant,
)
from vnet.bench.qos.scenario import load_topology as load_base
from vnet.bench.qos.variants import SMALL_PACKET, Variant, packet_size, variants


def test_rows_per_rate() -> None:
    assert variants(10) == [Variant(None, True), Variant(100, False), Variant(100, True)]
    assert variants(1000) == [Variant(None, True)]  # 100 B at 1.2 Gbit/s: beyond iperf3
    assert [v.series for v in variants(10)] == [
        "connection udp round trip",
        "connection udp 100 B round trip".replace(" round trip", ""),
        "connection udp 100 B round trip",
    ]


def test_round_trip_has_a_shaper_each_way_and_sizes_are_ip_packets() -> None:
    base = load_base(Path(EXAMPLE))
    topo = variant(base, connection=connection_spec(10, PATH_A, bidirectional=True))
    there, back = connection_shaper(topo), connection_shaper(topo, reverse=True)
    assert there != back and there.ns.endswith("-R1") and back.ns.endswith("-R2")
    assert packet_size(topo, Variant(SMALL_PACKET, True)) == 100
    # the end host's MTU: room left for VXLAN and the SRv6 encapsulation
    assert packet_size(topo, Variant(None, False)) == udp_length(topo, "hs") + 28 < 1450
    assert "R2→MR2" in Variant(None, True).path()
