"""One QoS benchmark run: its metrics and the three phases against the lab."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from vnet.bench.progress import BenchOptions, BenchProgress
from vnet.bench.qos.isolation import isolation
from vnet.bench.qos.measure import accuracy, path_switch
from vnet.bench.qos.scenario import ACCURACY_LINK, LAB, OFFER, SWITCH_LOADS
from vnet.bench.qos.table import Row
from vnet.bench.qos.variants import variants
from vnet.bench.results import BenchResult, tool_version
from vnet.lab import lab as labmod


def run_qos(
    base: dict[str, Any], file: Path, chosen: list[float], bench: BenchOptions, rows: list[Row]
) -> BenchResult:
    """All three phases against the lab "qos"; `rows` collects Table 3's rows."""
    result = BenchResult.start(
        "qos",
        parameters={
            **bench.as_parameters(),
            "file": str(file),
            "rates_mbit": chosen,
            "offered": f"{OFFER}x the rate",
            "switch_loads_mbit": SWITCH_LOADS,
            "accuracy_link_rate": ACCURACY_LINK,
        },
        tools={
            "iperf3": tool_version(["iperf3", "--version"]),
            "fping": tool_version(["fping", "--version"]),
        },
        description=(
            "Shapers as configured vs achieved, in layer-2 bytes (the HTB class's own "
            "counter over the steady part of each run) and as iperf3 payload; delay by "
            "fping through the same shaper; tenant isolation on one underlay link; "
            "datagrams lost while a connection's path is switched. Table 3 of paper 001 "
            "in its own shape: table3.md next to this report."
        ),
    )
    declare(result)
    extra = sum(len(variants(rate)) for rate in chosen)  # Table 3's 100 B and round trips
    runs = (len(chosen) * 4 + extra + 3 + 2 * len(SWITCH_LOADS)) * bench.repeat
    if LAB in labmod.running_labs():
        labmod.down(LAB)  # an interrupted earlier run
    try:
        with BenchProgress("qos", total=runs, quiet=bench.quiet) as progress:
            started = time.monotonic()
            rows += accuracy(result, base, chosen, bench, progress)
            progress.log(f"accuracy done after {time.monotonic() - started:.0f} s")
            isolation(result, base, bench, progress)
            progress.log(f"isolation done after {time.monotonic() - started:.0f} s")
            path_switch(result, base, bench, progress)
            progress.log(f"path switch done after {time.monotonic() - started:.0f} s")
    finally:
        labmod.down(LAB)
    return result


def declare(result: BenchResult) -> None:
    rate = "configured rate (Mbit/s)"
    result.declare(
        "achieved l2",
        "% of configured",
        x_label=rate,
        description="Bytes the shaper's HTB class sent (layer 2), per second, "
        "over the steady part of each run, as a share of the configured rate.",
    )
    result.declare(
        "achieved payload",
        "Mbit/s",
        x_label=rate,
        description="Payload the iperf3 receiver got (whole run).",
    )
    result.declare(
        "udp loss",
        "%",
        x_label=rate,
        description="Datagrams lost (by sequence number) when offered 1.2x.",
    )
    result.declare("latency avg", "ms", x_label=rate, description="fping through the shaper.")
    result.declare("latency max", "ms", x_label=rate)
    result.declare(
        "isolation b share",
        "% of guarantee",
        plot="bar",
        description="Tenant B's layer-2 rate on the underlay link over its "
        "guarantee, B sending exactly its guarantee.",
    )
    result.declare(
        "isolation b offered",
        "% of guarantee",
        plot="bar",
        description="What B's sender really sent, as layer-2 bytes on the link: below 100 "
        "when the machine cannot produce B's guarantee at all.",
    )
    result.declare("isolation b loss", "%", plot="bar")
    result.declare(
        "isolation b loss in network",
        "%",
        plot="bar",
        description="B's loss less what B's receiving host dropped itself (full socket "
        "buffer: a CPU-starved receiver).",
    )
    result.declare("isolation b latency avg", "ms", plot="bar")
    result.declare(
        "isolation link load",
        "% of the link rate",
        plot="bar",
        description="The link's root class over B's window: ~100 means the link was full.",
    )
    result.declare(
        "isolation a achieved",
        "Mbit/s",
        plot="bar",
        description="Tenant A's layer-2 rate (its class) while it floods.",
    )
    result.declare(
        "switch lost",
        "datagrams",
        x_label="UDP load (Mbit/s)",
        plot="bar",
        description="Datagrams lost (iperf3 sequence numbers) in a run with a path switch "
        "halfway, and in a run without one.",
    )
    result.declare(
        "switch load sent",
        "Mbit/s",
        x_label="UDP load (Mbit/s)",
        plot="bar",
        description="What iperf3 really sent: below the load when the machine cannot.",
    )
    result.declare(
        "switch lost in network",
        "datagrams",
        x_label="UDP load (Mbit/s)",
        plot="bar",
        description="The same, less what the receiving host dropped itself because its "
        "socket buffer was full (UDP RcvbufErrors in the receiver's namespace): a starved "
        "iperf3 server, not the path.",
    )
