"""Measuring the data-plane paths: UDP at offered loads, RTT idle and under load, TCP."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from vnet.bench.dataplane.paths import ReadyPath
from vnet.bench.progress import BenchProgress
from vnet.bench.results import BenchResult
from vnet.tools import fping, iperf3
from vnet.tools.errors import ToolError

PING_DELAY = 0.3  # s after a load starts: skip iperf3's connection set-up
TCP_PER_SECOND = "tcp throughput per second"
TCP_STDEV = "tcp throughput stdev over seconds"


# -- measuring -------------------------------------------------------------------


def ping_count(duration: float) -> int:
    """Probes that fit in a load of `duration` s after PING_DELAY, with a margin."""
    seconds = iperf3.iperf3_seconds(duration)
    return max(10, round((seconds - PING_DELAY - 0.3) * 1000 / fping.PING_INTERVAL_MS))


def record_rtt(result: BenchResult, prefix: str, kind: str, rtt: fping.RttStats, x: Any) -> None:
    stats = {"p50": rtt.p50, "p99": rtt.p99, "min": rtt.min, "max": rtt.max}
    for name, value in stats.items():
        if value is not None:
            result.record(f"{prefix} {name}", kind, value * 1000, x=x)  # ms -> µs


def per_second_metric(quantity: str, load: float) -> str:
    return f"udp {quantity} per second at {load:g} Mbit/s"


def declare_metrics(result: BenchResult, loads: Sequence[float], with_max: bool) -> None:
    load_axis = "offered load (Mbit/s)"
    result.declare(
        "udp throughput",
        "Mbit/s",
        x_label=load_axis,
        description="Received UDP payload rate (iperf3 receiver side), one sample per run.",
    )
    result.declare(
        "udp jitter",
        "µs",
        x_label=load_axis,
        description="Mean over the run's seconds of iperf3's jitter (RFC 3550 estimate).",
    )
    result.declare(
        "udp loss",
        "%",
        x_label=load_axis,
        description="Datagrams lost / datagrams sent over the whole run.",
    )
    for stat in ("p50", "p99", "min", "max"):
        result.declare(
            f"rtt {stat}",
            "µs",
            x_label=f"{load_axis}; 0 = idle",
            description=f"{stat} of one run's fping RTTs (every {fping.PING_INTERVAL_MS} "
            "ms) next to the UDP load; at 0 with no load.",
        )
    if with_max:
        result.declare(
            "udp max throughput",
            "Mbit/s",
            description="UDP with no rate limit (iperf3 -b 0): the most this machine moves.",
        )
        result.declare("udp max loss", "%", description="Loss of the unlimited UDP run.")
    result.declare(
        "tcp throughput",
        "Mbit/s",
        description="One TCP stream (iperf3). vxlan carries vnet's default tenant MTU of "
        "1450 B over a 1500 B underlay, so its segments are 50 B shorter.",
    )
    for stat in ("p50", "p99"):
        result.declare(
            f"tcp rtt {stat}",
            "µs",
            description=f"{stat} of the fping RTTs next to the TCP stream.",
        )
    result.declare("tcp srtt", "µs", description="The TCP sender's smoothed RTT (iperf3 mean_rtt).")
    result.declare(
        TCP_PER_SECOND,
        "Mbit/s",
        x_label="time (s)",
        description="TCP throughput in each second of the stream (iperf3 intervals, sender "
        "side), as paper 004's time series; samples are runs.",
    )
    result.declare(
        TCP_STDEV,
        "Mbit/s",
        description="Standard deviation of one run's per-second TCP throughput (paper 004).",
    )
    if loads:
        for quantity, unit in (("throughput", "Mbit/s"), ("jitter", "µs"), ("loss", "%")):
            result.declare(
                per_second_metric(quantity, loads[0]),
                unit,
                x_label="time (s)",
                description="Per-second values at the first offered load, as the papers' "
                "time series; samples are runs.",
            )


def measure_udp(
    result: BenchResult, path: ReadyPath, load: float | None, duration: float, length: int
) -> None:
    """One UDP run at `load` (None: unlimited) with fping next to it."""
    probe = fping.Probe(path.dst_ip, path.src_ip, ping_count(duration), PING_DELAY)
    run, rtt = iperf3.run_udp(
        path.src_ns, path.dst_ip, load, duration, length, probe, bind=path.src_ip
    )
    if load is None:
        result.record("udp max throughput", path.kind, run.mbit)
        result.record("udp max loss", path.kind, run.loss_percent)
        return
    result.record("udp throughput", path.kind, run.mbit, x=load)
    result.record("udp jitter", path.kind, run.jitter_ms * 1000, x=load)
    result.record("udp loss", path.kind, run.loss_percent, x=load)
    if rtt is not None:
        record_rtt(result, "rtt", path.kind, rtt, load)
    if per_second_metric("throughput", load) in result.metrics:
        for second, interval in enumerate(run.intervals, start=1):
            values = (interval.mbit, interval.jitter_ms * 1000, interval.loss_percent)
            for quantity, value in zip(("throughput", "jitter", "loss"), values, strict=True):
                result.record(per_second_metric(quantity, load), path.kind, value, x=second)


def measure_tcp(result: BenchResult, path: ReadyPath, duration: float) -> None:
    probe = fping.Probe(path.dst_ip, path.src_ip, ping_count(duration), PING_DELAY)
    run, rtt = iperf3.run_tcp(path.src_ns, path.dst_ip, duration, probe, bind=path.src_ip)
    result.record("tcp throughput", path.kind, run.mbit)
    if rtt is not None:
        for name, value in (("p50", rtt.p50), ("p99", rtt.p99)):
            if value is not None:
                result.record(f"tcp rtt {name}", path.kind, value * 1000)
    if run.srtt_ms is not None:
        result.record("tcp srtt", path.kind, run.srtt_ms * 1000)
    for second, mbit in enumerate(run.intervals, start=1):
        result.record(TCP_PER_SECOND, path.kind, mbit, x=second)
    if len(run.intervals) >= 2:
        result.record(TCP_STDEV, path.kind, statistics.stdev(run.intervals))


def measure_idle(result: BenchResult, path: ReadyPath, duration: float) -> None:
    rtt = fping.ping_rtts(path.src_ns, path.dst_ip, ping_count(duration), source=path.src_ip)
    record_rtt(result, "rtt", path.kind, rtt, 0)


@dataclass(frozen=True)
class Step:
    """One measurement of one kind: what the progress bar says and what to run."""

    label: str
    run: Callable[[], None]


def run_plans(plans: list[list[Step]], result: BenchResult, progress: BenchProgress) -> None:
    """Run every repeat's steps; a step whose tool fails is noted and not counted."""
    progress.update(total=sum(len(steps) for steps in plans))
    for repeat, steps in enumerate(plans):
        for step in steps:
            progress.update(f"{step.label}, run {repeat + 1}/{len(plans)}")
            try:
                step.run()
            except ToolError as err:
                result.note(f"{step.label}, run {repeat + 1}: not counted: {err}")
            progress.advance()


def plan_steps(
    result: BenchResult,
    paths: Sequence[ReadyPath],
    loads: Sequence[float],
    with_max: bool,
    duration: float,
    length: int,
    with_tcp: bool = True,
) -> list[Step]:
    """One repeat: idle RTT, each load, the unlimited load, TCP; kinds interleaved."""
    steps: list[Step] = []

    def add(label: str, measure: Callable[..., None], **options: Any) -> None:
        for p in paths:
            steps.append(Step(f"{p.kind}: {label}", partial(measure, result, p, **options)))

    add("idle RTT", measure_idle, duration=duration)
    for load in loads:
        add(f"UDP {load:g} Mbit/s", measure_udp, load=load, duration=duration, length=length)
    if with_max:
        add("UDP unlimited", measure_udp, load=None, duration=duration, length=length)
    if with_tcp:
        add("TCP", measure_tcp, duration=duration)
    return steps


def noter(result: BenchResult, progress: BenchProgress) -> Callable[[str], None]:
    def note(text: str) -> None:
        result.note(text)
        progress.log(text)

    return note
