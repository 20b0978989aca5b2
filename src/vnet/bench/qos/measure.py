"""Shaper accuracy and the path switch: flows through shapers, as paper 001's Table 3."""

from __future__ import annotations

from typing import Any

from vnet.bench.progress import BenchOptions, BenchProgress
from vnet.bench.qos.scenario import (
    ACCURACY_LINK,
    B_DST,
    B_SRC,
    CONNECTION,
    DST,
    LAB,
    OFFER,
    PATH_A,
    PATH_B,
    SRC,
    SWITCH_BANDWIDTH,
    SWITCH_LOADS,
    UDP_IPV4_OVERHEAD,
    address_of,
    connection_shaper,
    connection_spec,
    far_end,
    gateway_network,
    hop,
    measure_flow,
    network_shaper,
    node_ns,
    rtt_of,
    udp_length,
    variant,
    warm_up,
)
from vnet.bench.qos.table import Row
from vnet.bench.qos.variants import measure_variant, packet_size, variants
from vnet.bench.results import BenchResult
from vnet.lab import lab as labmod
from vnet.lab.shaping import FlowError, FlowResult, run_flow
from vnet.model import Topology, build_topology


def accuracy(
    result: BenchResult,
    base: dict[str, Any],
    rates: list[float],
    bench: BenchOptions,
    progress: BenchProgress,
) -> list[Row]:
    first = build_topology(base, source=str(LAB))
    b_net = gateway_network(first, "b-R1", B_DST)
    rows: dict[tuple[str, str, float], Row] = {}
    for rate in rates:
        topo = variant(
            base,
            link_rate=ACCURACY_LINK,
            # both ways: the round-trip rows load the reverse tunnel too
            connection=connection_spec(rate, PATH_A, bidirectional=True),
            bandwidth={b_net: {"bandwidth": f"{rate}mbit"}},
        )
        progress.log(f"configuring {rate:g} Mbit/s: connection {CONNECTION}, network {b_net}")
        labmod.up("", topology=topo)
        shapers = {
            "connection": connection_shaper(topo),
            "network": network_shaper(topo, b_net, "b-R1"),
        }
        sinks = {
            "connection": (DST, address_of(topo, DST)),
            "network": far_end(topo, "b-R1", b_net),
        }
        paths = {
            "connection": "→".join(PATH_A) + " (SRv6 tunnel)",
            "network": f"{'→'.join(hop(topo, 'b-R1', b_net))} (network {b_net}, underlay)",
        }
        warm_up(SRC, sinks["connection"][1])
        warm_up(B_SRC, sinks["network"][1])
        for kind in ("connection", "network"):
            src = SRC if kind == "connection" else B_SRC
            packet = udp_length(topo, src) + UDP_IPV4_OVERHEAD  # the host's MTU
            for proto in ("tcp", "udp"):
                series = f"{kind} {proto}"
                row = rows.setdefault(
                    (kind, proto, rate),
                    Row(paths[kind], proto.upper(), packet, rate * OFFER, rate, [], [], [], []),
                )
                for run in range(bench.repeat):
                    progress.update(f"{series} @ {rate:g} Mbit/s, run {run + 1}/{bench.repeat}")
                    try:
                        flow = measure_flow(
                            kind,
                            proto,
                            topo,
                            rate * 1e6 * OFFER,
                            bench.duration,
                            shapers[kind],
                            port=5201,
                            sink=sinks[kind],
                        )
                    except FlowError as err:
                        result.note(f"{series} @ {rate:g} Mbit/s run {run + 1}: {err}")
                        progress.advance()
                        continue
                    record_flow(result, series, rate, flow)
                    if flow.l2_bps is not None:
                        row.l2.append(flow.l2_bps / 1e6)
                        if flow.class_drops == 0 and flow.l2_bps < 0.97 * rate * 1e6:
                            row.limited += 1
                    row.payload.append(flow.payload_bps / 1e6)
                    if flow.loss is not None:
                        row.loss.append(flow.loss * 100)
                    if (rtt := rtt_of(flow)) is not None:
                        row.rtt.append(rtt)
                    progress.advance()
        measure_variants(result, topo, rate, bench, progress, rows)
    return list(rows.values())


def measure_variants(
    result: BenchResult,
    topo: Topology,
    rate: float,
    bench: BenchOptions,
    progress: BenchProgress,
    rows: dict[tuple[str, str, float], Row],
) -> None:
    """Table 3's 100 B and round-trip rows through the connection."""
    for v in variants(rate):
        row = rows.setdefault(
            (v.series, "udp", rate),
            Row(v.path(), "UDP", packet_size(topo, v), rate * OFFER, rate, [], [], [], []),
        )
        for run in range(bench.repeat):
            progress.update(f"{v.series} @ {rate:g} Mbit/s, run {run + 1}/{bench.repeat}")
            try:
                flows = measure_variant(topo, v, rate, bench.duration)
            except FlowError as err:
                result.note(f"{v.series} @ {rate:g} Mbit/s run {run + 1}: {err}")
                progress.advance()
                continue
            for flow in flows:
                record_flow(result, v.series, rate, flow)
            l2 = [f.l2_bps for f in flows if f.l2_bps is not None]
            if l2:
                row.l2.append(sum(l2) / len(l2) / 1e6)
                if all(f.class_drops == 0 for f in flows) and min(l2) < 0.97 * rate * 1e6:
                    row.limited += 1  # the sender or the path, not the shaper, was the limit
            row.payload.append(sum(f.payload_bps for f in flows) / len(flows) / 1e6)
            losses = [f.loss for f in flows if f.loss is not None]
            if losses:
                row.loss.append(sum(losses) / len(losses) * 100)
            if (rtt := rtt_of(flows[0])) is not None:
                row.rtt.append(rtt)
            progress.advance()


def record_flow(result: BenchResult, series: str, rate: float, flow: FlowResult) -> None:
    if flow.l2_bps is not None:
        result.record("achieved l2", series, flow.l2_bps / (rate * 1e6) * 100, x=rate)
    result.record("achieved payload", series, flow.payload_bps / 1e6, x=rate)
    if flow.loss is not None:
        result.record("udp loss", series, flow.loss * 100, x=rate)
    rtt = rtt_of(flow)
    if rtt is not None:
        result.record("latency avg", series, rtt[1], x=rate)
        result.record("latency max", series, rtt[2], x=rate)


def path_switch(
    result: BenchResult, base: dict[str, Any], bench: BenchOptions, progress: BenchProgress
) -> None:
    topos = {
        tuple(path): variant(
            base, link_rate=ACCURACY_LINK, connection=connection_spec(SWITCH_BANDWIDTH, path)
        )
        for path in (PATH_A, PATH_B)
    }
    current = tuple(PATH_A)
    labmod.up("", topology=topos[current])
    seconds = max(bench.duration, 2.0)
    warm_up(SRC, address_of(topos[current], DST))
    for load in SWITCH_LOADS:
        for series in ("no switch", "switch"):
            for run in range(bench.repeat):
                progress.update(f"path switch: {series} @ {load} Mbit/s, run {run + 1}")
                other = tuple(PATH_B) if current == tuple(PATH_A) else tuple(PATH_A)
                at = None
                if series == "switch":
                    target = topos[other]
                    at = (seconds / 2 - 0.6, lambda t=target: labmod.up("", topology=t))
                topo = topos[current]
                try:
                    flow = run_flow(
                        node_ns(SRC),
                        node_ns(DST),
                        address_of(topo, DST),
                        seconds=seconds,
                        protocol="udp",
                        rate_bps=load * 1e6,
                        length=udp_length(topo, SRC),
                        port=5401,
                        at=at,
                    )
                except FlowError as err:
                    result.note(f"path switch {series} @ {load} run {run + 1}: {err}")
                    progress.advance()
                    continue
                finally:
                    if series == "switch":
                        current = other
                if flow.lost_packets is not None:
                    at_receiver = flow.receiver_drops or 0
                    result.record("switch lost", series, flow.lost_packets, x=load)
                    # trailing datagrams the receiver dropped are not counted as lost by
                    # iperf3, so the difference can dip below 0
                    in_network = max(0, flow.lost_packets - at_receiver)
                    result.record("switch lost in network", series, in_network, x=load)
                    if flow.offered_bps:
                        result.record("switch load sent", series, flow.offered_bps / 1e6, x=load)
                    sent = (flow.offered_bps or 0) / 1e6
                    progress.log(
                        f"{series} at {load} Mbit/s (sent {sent:.0f}): "
                        f"{flow.lost_packets} of {flow.packets} "
                        f"datagrams lost, {at_receiver} of them dropped by the receiving host's "
                        "full socket buffer"
                    )
                progress.advance()
