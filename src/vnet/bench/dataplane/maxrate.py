"""The loss-bounded maximum rate (paper 001, Table 1; RFC 2544's throughput).

The highest offered UDP rate at which at most LOSS_BOUND % of the datagrams
are lost, one way (src -> dst) and in both directions at once (src -> dst and
dst -> src, each offered the same rate; the figure is per direction), with
fping's RTT next to the run that found it (the paper's latency min/avg/max).

Sizes are IP packet sizes, as the paper's "1500 bytes, which equals MTU size";
the rates count whole IP packets (iperf3's payload rate x size / payload).
iperf3 paces the load: trafgen's own pacing stalls near 50k packets/s here,
and the kernel has no pktgen. iperf3 sends at most ~230k packets/s from one
core, so at 100 B a path faster than that reports the sender's limit, which
the run says ("no loss even unpaced").
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from vnet.bench.dataplane.measure import PING_DELAY, Step, ping_count
from vnet.bench.dataplane.paths import ReadyPath
from vnet.bench.progress import BenchOptions
from vnet.bench.results import BenchResult
from vnet.tools import fping, iperf3

LOSS_BOUND = 0.1  # percent, paper 001's "acceptable packet loss"
IP_UDP_HEADERS = 28
REVERSE_PORT = iperf3.IPERF3_PORT + 1  # the dst -> src stream's server, in src
MODES = ("one way", "both ways")


@dataclass(frozen=True)
class Trial:
    offered_mbit: float | None  # IP Mbit/s asked of each direction; None: unpaced
    received_mbit: float  # IP Mbit/s that arrived, mean of the directions
    loss_percent: float  # over both directions
    rtt: fping.RttStats | None


def ip_mbit(payload_mbit: float, size: int) -> float:
    return payload_mbit * size / (size - IP_UDP_HEADERS)


def trial(path: ReadyPath, size: int, mbit: float | None, duration: float, both: bool) -> Trial:
    """One run at `mbit` IP Mbit/s per direction (None: as fast as iperf3 sends)."""
    length = size - IP_UDP_HEADERS
    payload = None if mbit is None else mbit * length / size
    probe = fping.Probe(path.dst_ip, path.src_ip, ping_count(duration), PING_DELAY)
    with ThreadPoolExecutor(max_workers=2) as pool:
        ahead = pool.submit(
            iperf3.run_udp,
            path.src_ns,
            path.dst_ip,
            payload,
            duration,
            length,
            probe,
            bind=path.src_ip,
        )
        back = (
            pool.submit(
                iperf3.run_udp,
                path.dst_ns,
                path.src_ip,
                payload,
                duration,
                length,
                port=REVERSE_PORT,
                bind=path.dst_ip,
            )
            if both
            else None
        )
        runs = [ahead.result()[0]] + ([back.result()[0]] if back is not None else [])
        rtt = ahead.result()[1]
    lost, packets = sum(r.lost for r in runs), sum(r.packets for r in runs)
    received = sum(ip_mbit(r.mbit, size) for r in runs) / len(runs)
    return Trial(mbit, received, 100.0 * lost / packets if packets else 100.0, rtt)


def search(
    path: ReadyPath, size: int, both: bool, duration: float, steps: int
) -> tuple[Trial | None, Trial]:
    """(the best trial within the bound or None, the unpaced one).

    Unpaced first: 90% of what got through is the first guess; halved until
    a rate holds, then bisection between the best rate within the bound and
    the lowest one above it.
    """
    unpaced = trial(path, size, None, duration, both)
    if unpaced.loss_percent <= LOSS_BOUND:
        return unpaced, unpaced
    best: Trial | None = None
    low, high = 0.0, unpaced.received_mbit / (1 - unpaced.loss_percent / 100 + 1e-9)
    rate = unpaced.received_mbit * 0.9
    for _ in range(steps):
        t = trial(path, size, rate, duration, both)
        if t.loss_percent <= LOSS_BOUND:
            best, low = t, rate
        else:
            high = rate
        # halve until one rate holds, then bisect between it and the lowest that lost
        rate = (low + high) / 2 if best is not None else rate / 2
    return best, unpaced


def metric(mode: str) -> str:
    return f"max rate at <= {LOSS_BOUND:g}% loss, {mode}"


def rtt_metric(stat: str, mode: str) -> str:
    return f"rtt {stat} at max rate, {mode}"


def declare(result: BenchResult) -> None:
    for mode in MODES:
        per = " per direction, both at once" if mode == "both ways" else ""
        result.declare(
            metric(mode),
            "Mbit/s",
            x_label="IP packet size (B)",
            plot="bar",
            description=f"Highest offered UDP rate (iperf3){per} with at most {LOSS_BOUND:g}% "
            "of the datagrams lost; whole IP packets counted (paper 001, Table 1).",
        )
        for stat in ("min", "p50", "max"):
            result.declare(
                rtt_metric(stat, mode),
                "µs",
                x_label="IP packet size (B)",
                plot="bar",
                description=f"{stat} of fping's RTTs next to the run that found the rate.",
            )


def measure(
    result: BenchResult, path: ReadyPath, size: int, mode: str, duration: float, steps: int
) -> None:
    best, unpaced = search(path, size, mode == "both ways", duration, steps)
    if best is None:
        result.note(
            f"{path.kind}, {size} B {mode}: no rate within {LOSS_BOUND:g}% loss found in "
            f"{steps} step(s) (unpaced: {unpaced.received_mbit:.0f} Mbit/s, "
            f"{unpaced.loss_percent:.2f}% lost)"
        )
        return
    if best is unpaced:
        result.note(f"{path.kind}, {size} B {mode}: no loss even unpaced: the sender's limit")
    result.record(metric(mode), path.kind, best.received_mbit, x=size)
    if best.rtt is not None:
        for stat in ("min", "p50", "max"):
            value = getattr(best.rtt, stat)
            if value is not None:
                result.record(rtt_metric(stat, mode), path.kind, value * 1000, x=size)


@dataclass(frozen=True)
class MaxRatePlan:
    """The loss-bounded search: packet sizes, bisection steps, and in how many repeats."""

    sizes: Sequence[int]
    steps: int
    repeats: int


def plan_steps(
    result: BenchResult, paths: Sequence[ReadyPath], plan: MaxRatePlan, duration: float
) -> list[Step]:
    steps = []
    for size in plan.sizes:
        for mode in MODES:
            for p in paths:

                def run(p: ReadyPath = p, size: int = size, mode: str = mode) -> None:
                    measure(result, p, size, mode, duration, plan.steps)

                steps.append(Step(f"{p.kind}: max rate at {size} B, {mode}", run))
    return steps


def with_search(
    own: Callable[[int], list[Step]],
    result: BenchResult,
    paths: Sequence[ReadyPath],
    plan: MaxRatePlan | None,
    bench: BenchOptions,
) -> list[list[Step]]:
    """Each repeat's steps: its own (`own(repeat)`), then the loss-bounded search's in the
    first `plan.repeats` repeats (none without a plan)."""
    return [
        own(r)
        + (plan_steps(result, paths, plan, bench.duration) if plan and r < plan.repeats else [])
        for r in range(bench.repeat)
    ]
