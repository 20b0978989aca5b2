"""Tenant isolation: beta at its guarantee while alpha floods the shared underlay link."""

from __future__ import annotations

import threading
import time
from typing import Any

from vnet.bench.progress import BenchOptions, BenchProgress
from vnet.bench.qos.scenario import (
    B_DST,
    B_SRC,
    DST,
    FLOOD_TCP_STREAMS,
    ISOLATION_SHARE,
    LAB,
    OFFER,
    SRC,
    UDP_IPV4_OVERHEAD,
    VXLAN_FRAME_EXTRA,
    far_end,
    gateway_network,
    measure_flow,
    network_shaper,
    node_ns,
    rtt_of,
    udp_length,
    variant,
    warm_up,
)
from vnet.bench.results import BenchResult
from vnet.lab import lab as labmod
from vnet.lab.shaping import ClassRef, FlowError, FlowResult, run_flow
from vnet.model import build_topology
from vnet.substrate.qos import LINK_ROOT_CLASS


def isolation(
    result: BenchResult, base: dict[str, Any], bench: BenchOptions, progress: BenchProgress
) -> None:
    first = build_topology(base, source=str(LAB))
    link_rate = first.links[0].rate or 1_000_000_000
    a_net = gateway_network(first, "R1", DST)
    b_net = gateway_network(first, "b-R1", B_DST)
    share = int(link_rate * ISOLATION_SHARE) // 1_000_000 * 1_000_000
    topo = variant(
        base,
        link_rate=link_rate,
        bandwidth={
            a_net: {"bandwidth": share, "ceil": link_rate},
            b_net: {"bandwidth": share, "ceil": link_rate},
        },
    )
    progress.log(
        f"isolation: link {link_rate / 1e6:g} Mbit/s; {a_net} and {b_net} guaranteed "
        f"{share / 1e6:g} Mbit/s each (both may borrow up to the link rate); A floods (UDP "
        f"at {OFFER}x the link rate, or {FLOOD_TCP_STREAMS} TCP streams), B sends exactly its "
        "guarantee"
    )
    labmod.up("", topology=topo)
    b_shaper = network_shaper(topo, b_net, "b-R1")
    a_shaper = network_shaper(topo, a_net, "R1")
    link_root = ClassRef(b_shaper.ns, b_shaper.dev, LINK_ROOT_CLASS)
    a_sink, b_sink = far_end(topo, "R1", a_net), far_end(topo, "b-R1", b_net)
    warm_up(SRC, a_sink[1])
    warm_up(B_SRC, b_sink[1])
    b_len = udp_length(topo, B_SRC)
    # B offers exactly its guarantee in layer-2 bytes on the underlay
    b_payload = share * b_len / (b_len + UDP_IPV4_OVERHEAD + VXLAN_FRAME_EXTRA)
    seconds = max(bench.duration, 1.5)
    for series, flood in (
        ("B alone", None),
        ("B while A floods UDP", "udp"),
        ("B while A floods TCP", "tcp"),
    ):
        for run in range(bench.repeat):
            progress.update(f"isolation: {series}, run {run + 1}/{bench.repeat}")
            flood_result: dict[str, FlowResult] = {}

            def start_flood(
                out: dict[str, FlowResult] = flood_result, n: int = run, kind: str = flood or ""
            ) -> None:
                # UDP at 1.2x the link rate, or greedy TCP (GSO: far less CPU per byte,
                # so it fills the link where a 2-core machine cannot forward the UDP flood)
                try:
                    out["a"] = run_flow(
                        node_ns(SRC),
                        node_ns(a_sink[0]),
                        a_sink[1],
                        seconds=seconds + 1.5,
                        protocol=kind,
                        rate_bps=link_rate * OFFER if kind == "udp" else None,
                        length=udp_length(topo, SRC) if kind == "udp" else None,
                        streams=1 if kind == "udp" else FLOOD_TCP_STREAMS,
                        port=5301,
                        shaper=a_shaper,
                        warmup=1.0,
                    )
                except FlowError as err:
                    result.note(f"isolation flood run {n + 1}: {err}")

            flooder = threading.Thread(target=start_flood, daemon=True) if flood else None
            try:
                if flooder is not None:
                    flooder.start()
                    time.sleep(0.8)  # A's flood is on before B starts
                flow = measure_flow(
                    "network",
                    "udp",
                    topo,
                    b_payload,
                    seconds,
                    b_shaper,
                    port=5302,
                    sink=b_sink,
                    also=(link_root,),
                )
            except FlowError as err:
                result.note(f"isolation {series} run {run + 1}: {err}")
                progress.advance()
                continue
            finally:
                if flooder is not None:
                    flooder.join(timeout=seconds + 40)
            if flow.l2_bps is not None:
                result.record("isolation b share", series, flow.l2_bps / share * 100)
            if flow.offered_bps:
                frame = (b_len + UDP_IPV4_OVERHEAD + VXLAN_FRAME_EXTRA) / b_len
                result.record("isolation b offered", series, flow.offered_bps * frame / share * 100)
            if flow.loss is not None and flow.packets:
                result.record("isolation b loss", series, flow.loss * 100)
                in_network = max(0, (flow.lost_packets or 0) - (flow.receiver_drops or 0))
                result.record(
                    "isolation b loss in network", series, in_network / flow.packets * 100
                )
            if (rtt := rtt_of(flow)) is not None:
                result.record("isolation b latency avg", series, rtt[1])
            a = flood_result.get("a")
            if a is not None and a.l2_bps is not None:
                result.record("isolation a achieved", series, a.l2_bps / 1e6)
                carried = flow.also_l2_bps.get(link_root, 0.0) / link_rate
                full = "full" if carried >= 0.95 else "NOT full (machine-limited)"
                result.record("isolation link load", series, carried * 100)
                progress.log(
                    f"isolation run {run + 1} ({series}): while B ran the link carried "
                    f"{carried:.1%} of its rate ({full}); A {a.l2_bps / 1e6:.0f} Mbit/s over "
                    f"its run; B at {(flow.l2_bps or 0) / share * 100:.2f}% of its guarantee"
                )
            progress.advance()
