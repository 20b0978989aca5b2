"""A `vnet bench dataplane` run: the path labs up, the offered loads and TCP of measure.py
and the loss-bounded search of maxrate.py planned per repeat and run, then the lead."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import ExitStack

from vnet.bench.dataplane import BASELINE, UDP_LENGTH, maxrate
from vnet.bench.dataplane.measure import Step, declare_metrics, noter, plan_steps, run_plans
from vnet.bench.dataplane.paths import DST_ADDRESS, SRC_ADDRESS, path_labs
from vnet.bench.dataplane.summary import SUSTAINED_LOSS_PERCENT, lead_summary
from vnet.bench.progress import BenchOptions, BenchProgress
from vnet.bench.results import BenchResult, tool_version
from vnet.tools import fping, iperf3


def run_dataplane(
    bench: BenchOptions,
    kinds: Sequence[str],
    loads: Sequence[float],
    *,
    with_max: bool = True,
    length: int = UDP_LENGTH,
    max_rate: maxrate.MaxRatePlan | None = None,
) -> BenchResult:
    """`max_rate`: None skips the loss-bounded search."""
    result = BenchResult.start(
        "dataplane",
        parameters={
            **bench.as_parameters(),
            "iperf3_seconds": iperf3.iperf3_seconds(bench.duration),
            "kinds": list(kinds),
            "loads_mbit": list(loads),
            "unlimited_load": with_max,
            "udp_datagram_bytes": length,
            "ping_interval_ms": fping.PING_INTERVAL_MS,
            "sustained_loss_percent": SUSTAINED_LOSS_PERCENT,
            "addresses": f"{SRC_ADDRESS} -> {DST_ADDRESS} (physical: its underlay link)",
            "max_rate_packet_sizes": list(max_rate.sizes) if max_rate else [],
            "max_rate_bisection_steps": max_rate.steps if max_rate else 0,
        },
        tools={
            "iperf3": tool_version(["iperf3", "--version"]),
            "fping": tool_version(["fping", "--version"]),
        },
        baseline=BASELINE,
        description="",
    )
    declare_metrics(result, loads, with_max)
    if max_rate:
        maxrate.declare(result)
    if iperf3.iperf3_seconds(bench.duration) != bench.duration:
        result.note(
            f"iperf3 runs whole seconds: --duration {bench.duration:g} ran as "
            f"{iperf3.iperf3_seconds(bench.duration)} s"
        )
    with (
        BenchProgress("dataplane: bringing labs up", quiet=bench.quiet) as progress,
        path_labs("dp", kinds, noter(result, progress)) as paths,
        ExitStack() as servers,
    ):
        if BASELINE not in [p.kind for p in paths]:
            result.note("the physical baseline is missing: no ratios")
        for p in paths:
            servers.enter_context(iperf3.Iperf3Server(p.dst_ns, bind=p.dst_ip))
            if max_rate:
                reverse = iperf3.Iperf3Server(p.src_ns, maxrate.REVERSE_PORT, bind=p.src_ip)
                servers.enter_context(reverse)
        # A smoke run measures the unlimited load and TCP once; a real run every time.
        extras = 1 if bench.quick else bench.repeat

        def own(r: int) -> list[Step]:
            once = r < extras
            return plan_steps(result, paths, loads, with_max and once, bench.duration, length, once)

        plans = maxrate.with_search(own, result, paths, max_rate, bench)
        run_plans(plans, result, progress)
    result.description = lead_summary(result)
    return result
