"""Tenant isolation: beta at its guarantee while alpha floods the shared underlay link."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
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
    link_root,
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
from vnet.model import Topology, build_topology

FLOODS = (("B alone", None), ("B while A floods UDP", "udp"), ("B while A floods TCP", "tcp"))


@dataclass
class Isolation:
    """Alpha and beta guaranteed a share of one underlay link each; beta sends its share."""

    result: BenchResult
    topo: Topology
    link_rate: int
    share: int
    a_shaper: ClassRef
    b_shaper: ClassRef
    a_sink: tuple[str, str]
    b_sink: tuple[str, str]
    seconds: float
    networks: tuple[str, str]  # A's and B's network on the link

    @property
    def link_root(self) -> ClassRef:
        return link_root(self.b_shaper)

    @property
    def b_frame(self) -> float:
        """Underlay bytes per byte of B's UDP payload."""
        b_len = udp_length(self.topo, B_SRC)
        return (b_len + UDP_IPV4_OVERHEAD + VXLAN_FRAME_EXTRA) / b_len

    def flood(self, kind: str, out: dict[str, FlowResult], run: int) -> None:
        """A's flood: UDP at 1.2x the link rate, or greedy TCP (GSO: far less CPU per
        byte, so it fills the link where a 2-core machine cannot forward the UDP flood)."""
        udp = kind == "udp"
        try:
            out["a"] = run_flow(
                node_ns(SRC),
                node_ns(self.a_sink[0]),
                self.a_sink[1],
                seconds=self.seconds + 1.5,
                protocol=kind,
                rate_bps=self.link_rate * OFFER if udp else None,
                length=udp_length(self.topo, SRC) if udp else None,
                streams=1 if udp else FLOOD_TCP_STREAMS,
                port=5301,
                shaper=self.a_shaper,
                warmup=1.0,
            )
        except FlowError as err:
            self.result.note(f"isolation flood run {run + 1}: {err}")

    def beta(self, flood: str | None, run: int) -> tuple[FlowResult, FlowResult | None]:
        """B's flow at its guarantee, with A flooding beside it if `flood`."""
        flooded: dict[str, FlowResult] = {}
        flooder = None
        if flood:
            flooder = threading.Thread(target=self.flood, args=(flood, flooded, run), daemon=True)
        try:
            if flooder is not None:
                flooder.start()
                time.sleep(0.8)  # A's flood is on before B starts
            payload = self.share / self.b_frame
            flow = measure_flow(
                "network",
                "udp",
                self.topo,
                payload,
                self.seconds,
                self.b_shaper,
                port=5302,
                sink=self.b_sink,
                also=(self.link_root,),
            )
        finally:
            if flooder is not None:
                flooder.join(timeout=self.seconds + 40)
        return flow, flooded.get("a")

    def record(self, series: str, flow: FlowResult) -> None:
        record = self.result.record
        if flow.l2_bps is not None:
            record("isolation b share", series, flow.l2_bps / self.share * 100)
        if flow.offered_bps:
            record(
                "isolation b offered", series, flow.offered_bps * self.b_frame / self.share * 100
            )
        if flow.loss is not None and flow.packets:
            record("isolation b loss", series, flow.loss * 100)
            in_network = max(0, (flow.lost_packets or 0) - (flow.receiver_drops or 0))
            record("isolation b loss in network", series, in_network / flow.packets * 100)
        if (rtt := rtt_of(flow)) is not None:
            record("isolation b latency avg", series, rtt[1])

    def record_flood(self, series: str, flow: FlowResult, a: FlowResult) -> str:
        """A's rate and how full the link was; returns the line for the log."""
        self.result.record("isolation a achieved", series, (a.l2_bps or 0) / 1e6)
        carried = flow.also_l2_bps.get(self.link_root, 0.0) / self.link_rate
        full = "full" if carried >= 0.95 else "NOT full (machine-limited)"
        self.result.record("isolation link load", series, carried * 100)
        return (
            f"while B ran the link carried {carried:.1%} of its rate ({full}); "
            f"A {(a.l2_bps or 0) / 1e6:.0f} Mbit/s over its run; "
            f"B at {(flow.l2_bps or 0) / self.share * 100:.2f}% of its guarantee"
        )


def isolation_lab(result: BenchResult, base: dict[str, Any], seconds: float) -> Isolation:
    """Bring up the file's topology with both tenants' guarantees on the one link."""
    first = build_topology(base, source=str(LAB))
    link_rate = first.links[0].rate or 1_000_000_000
    a_net = gateway_network(first, "R1", DST)
    b_net = gateway_network(first, "b-R1", B_DST)
    share = int(link_rate * ISOLATION_SHARE) // 1_000_000 * 1_000_000
    guarantee = {"bandwidth": share, "ceil": link_rate}
    topo = variant(base, link_rate=link_rate, bandwidth={a_net: guarantee, b_net: guarantee})
    labmod.up("", topology=topo)
    a_sink, b_sink = far_end(topo, "R1", a_net), far_end(topo, "b-R1", b_net)
    warm_up(SRC, a_sink[1])
    warm_up(B_SRC, b_sink[1])
    return Isolation(
        result,
        topo,
        link_rate,
        share,
        network_shaper(topo, a_net, "R1"),
        network_shaper(topo, b_net, "b-R1"),
        a_sink,
        b_sink,
        seconds,
        (a_net, b_net),
    )


def isolation(
    result: BenchResult, base: dict[str, Any], bench: BenchOptions, progress: BenchProgress
) -> None:
    lab = isolation_lab(result, base, max(bench.duration, 1.5))
    progress.log(
        f"isolation: link {lab.link_rate / 1e6:g} Mbit/s; {lab.networks[0]} and "
        f"{lab.networks[1]} guaranteed {lab.share / 1e6:g} Mbit/s each (both may borrow up to "
        f"the link rate); A floods (UDP at {OFFER}x the link rate, or {FLOOD_TCP_STREAMS} TCP "
        "streams), B sends exactly its guarantee"
    )
    for series, flood in FLOODS:
        for run in range(bench.repeat):
            progress.update(f"isolation: {series}, run {run + 1}/{bench.repeat}")
            try:
                flow, a = lab.beta(flood, run)
            except FlowError as err:
                result.note(f"isolation {series} run {run + 1}: {err}")
                progress.advance()
                continue
            lab.record(series, flow)
            if a is not None and a.l2_bps is not None:
                progress.log(
                    f"isolation run {run + 1} ({series}): {lab.record_flood(series, flow, a)}"
                )
            progress.advance()
