"""Paper 001's Table 3 in its own shape."""

from __future__ import annotations

from dataclasses import dataclass
from statistics import fmean


@dataclass
class Row:
    """One line of the Table 3 shape: means over the repeats."""

    path: str
    flow: str
    packet: int
    offered: float
    limit: float
    l2: list[float]
    payload: list[float]
    loss: list[float]
    rtt: list[tuple[float, float, float]]
    limited: int = 0  # runs in which the sender never filled the shaper


def table3(rows: list[Row]) -> str:
    """Paper 001's Table 3, one row per path, flow and rate (means over the repeats)."""
    head = (
        "| Path | Flow | Packet size [B] | Transmission rate [Mbit/s] | Bandwidth limit "
        "[Mbit/s] | Throughput, layer 2 [Mbit/s] | Throughput, payload [Mbit/s] | Loss [%] "
        "| Latency min / avg / max [ms] |"
    )
    lines = [
        "# vnet bench qos: Table 3 of paper 001, vnet's way",
        "",
        "Layer 2: the shaper's own byte counter (HTB class, Ethernet frames with "
        "the encapsulation) over the steady part of each run. Payload: iperf3's receiver. "
        "Loss: UDP datagrams by sequence number.",
        "",
        head,
        "|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        l2 = f"{fmean(r.l2):.2f} ({fmean(r.l2) / r.limit * 100:.2f}%)" if r.l2 else "n/a"
        if r.limited:
            l2 += " †"
        loss = f"{fmean(r.loss):.2f}" if r.loss else "–"
        rtt = (
            f"{min(x[0] for x in r.rtt):.3f} / {fmean(x[1] for x in r.rtt):.3f} / "
            f"{max(x[2] for x in r.rtt):.3f}"
            if r.rtt
            else "n/a"
        )
        payload = f"{fmean(r.payload):.2f}" if r.payload else "n/a"
        lines.append(
            f"| {r.path} | {r.flow} | {r.packet} | {r.offered:g} | {r.limit:g} | {l2} | "
            f"{payload} | {loss} | {rtt} |"
        )
    if any(r.limited for r in rows):
        lines += [
            "",
            "† in at least one run the shaper dropped nothing and passed less than its "
            "rate: the sender or the forwarding path (CPU) could not offer more, so the "
            "shaper was not the limit.",
        ]
    return "\n".join(lines) + "\n"
