"""The forwarding benchmark's plan and run: points, metrics, steps."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass

from vnet.bench.dataplane import maxrate
from vnet.bench.dataplane.measure import Step, noter, run_plans
from vnet.bench.dataplane.paths import ReadyPath, path_labs
from vnet.bench.forwarding import BASELINE
from vnet.bench.forwarding.pps import WARMUP, PpsRun, measure_pps
from vnet.bench.forwarding.profile import GROUP_NAMES, PERF_FREQUENCY, profile
from vnet.bench.forwarding.receiver import attach_ingress_drop, freeze_neighbours
from vnet.bench.forwarding.summary import (
    PROFILE_METRIC,
    cost_metric,
    lead_summary,
    pps_metric,
    size_metric,
)
from vnet.bench.progress import BenchOptions, BenchProgress
from vnet.bench.results import BenchResult, tool_version
from vnet.tools import iperf3, netns
from vnet.tools.errors import ToolError

# -- the run -----------------------------------------------------------------------


@dataclass(frozen=True)
class Point:
    size: int
    cores: int


def plan_points(sizes: Sequence[int], cores: Sequence[int]) -> list[Point]:
    """The first size with every core count; the other sizes with the fewest cores."""
    first, fewest = sizes[0], min(cores)
    points = [Point(first, c) for c in cores]
    points += [Point(s, fewest) for s in sizes[1:]]
    return points


def declare_metrics(result: BenchResult, sizes: Sequence[int], cores: Sequence[int]) -> None:
    first, fewest = sizes[0], min(cores)
    result.declare(
        pps_metric(first),
        "packets/s",
        x_label="sender cores",
        plot="bar",
        description=f"{first} B UDP frames received per second at dst's interface.",
    )
    if len(sizes) > 1:
        result.declare(
            size_metric(fewest),
            "packets/s",
            x_label="frame size (B, with FCS)",
            plot="bar",
            description=f"The same with {fewest} sender core(s) and bigger frames "
            f"(the {first} B bars repeat the runs above).",
        )
    result.declare(
        cost_metric("softirq", first),
        "ns",
        x_label="sender cores",
        plot="bar",
        description="Softirq time of the sender's CPUs (/proc/stat) per packet received: "
        "the receive, forward and drop path.",
    )
    result.declare(
        cost_metric("cpu", first),
        "ns",
        x_label="sender cores",
        plot="bar",
        description="user + system + irq + softirq time of the sender's CPUs per packet "
        "received: the whole path including trafgen (and anything else on those CPUs).",
    )


def _count(path: ReadyPath, point: Point, run: PpsRun, result: BenchResult, first: int) -> None:
    kind = path.kind
    metric = size_metric(point.cores)
    if metric in result.metrics:
        result.record(metric, kind, run.pps, x=point.size)
    if point.size != first:
        return
    result.record(pps_metric(first), kind, run.pps, x=point.cores)
    if run.packets <= 0:
        result.note(f"{kind}, {first} B, {point.cores} core(s): nothing arrived, no CPU cost")
        return
    for name, ticks in (("softirq", run.cpu.softirq), ("cpu", run.cpu.busy)):
        result.record(cost_metric(name, first), kind, run.ns_per_packet(ticks), x=point.cores)


def profile_groups(kinds: Sequence[str]) -> list[str]:
    """The groups worth a bar: VXLAN's only when a path has VXLAN in it."""
    return [g for g in GROUP_NAMES if g != "vxlan" or "vxlan" in kinds]


def measure_profile(
    result: BenchResult, path: ReadyPath, size: int, cores: int, duration: float
) -> None:
    """A separate run under perf: CPU per packet, split by function group."""
    cpus = list(range(cores))
    found: dict[str, Counter[str]] = {}

    def sample() -> None:
        found["groups"] = profile(cpus, duration)

    run = measure_pps(path, size, cores, duration, during=sample)
    groups = found["groups"]
    total = sum(groups.values())
    if total == 0 or run.pps <= 0:
        raise ToolError("perf recorded no samples or nothing arrived")
    # cpu-clock samples every CPU at a fixed rate, idle or not: a group's share
    # of all samples is its share of the len(cpus) CPU-seconds per second.
    cpu_ns_per_packet = len(cpus) * 1e9 / run.pps
    for name in profile_groups(result.parameters.get("kinds") or [path.kind]):
        result.record(
            PROFILE_METRIC, path.kind, cpu_ns_per_packet * groups.get(name, 0) / total, x=name
        )


def plan_steps(
    result: BenchResult,
    paths: Sequence[ReadyPath],
    points: Sequence[Point],
    duration: float,
    with_profile: bool,
) -> list[Step]:
    """One repeat: every point for every kind (kinds interleaved), then the profiles."""
    first = points[0].size
    steps = []
    for point in points:
        for p in paths:

            def run(p: ReadyPath = p, point: Point = point) -> None:
                _count(p, point, measure_pps(p, point.size, point.cores, duration), result, first)

            label = f"{p.kind}: {point.size} B, {point.cores} core(s)"
            steps.append(Step(label, run))
    if with_profile:
        fewest = min(pt.cores for pt in points)
        for p in paths:

            def prof(p: ReadyPath = p) -> None:
                measure_profile(result, p, first, fewest, duration)

            steps.append(Step(f"{p.kind}: perf profile", prof))
    return steps


def run_forwarding(
    bench: BenchOptions,
    kinds: Sequence[str],
    sizes: Sequence[int],
    cores: Sequence[int],
    with_profile: bool,
    max_rate: maxrate.MaxRatePlan | None = None,
) -> BenchResult:
    points = plan_points(sizes, cores)
    result = BenchResult.start(
        "forwarding",
        parameters={
            **bench.as_parameters(),
            "kinds": list(kinds),
            "frame_sizes": list(sizes),
            "sender_cores": list(cores),
            "points": [f"{p.size} B x {p.cores}" for p in points],
            "warmup_seconds": WARMUP,
            "receiver": "eBPF tc ingress program dropping UDP to port 9 (the generator's), "
            "rx_packets of dst's interface",
            "neighbours": "ARP entries along the path made permanent before the runs",
            "profile": with_profile,
            "max_rate_packet_sizes": list(max_rate.sizes) if max_rate else [],
            "max_rate_loss_bound_percent": maxrate.LOSS_BOUND,
            "max_rate_bisection_steps": max_rate.steps if max_rate else 0,
        },
        tools={
            "trafgen": tool_version(["trafgen", "--version"]),
            "perf": tool_version(["perf", "--version"]) if with_profile else None,
            "iperf3": tool_version(["iperf3", "--version"]) if max_rate else None,
        },
        baseline=BASELINE if BASELINE in kinds else None,
    )
    declare_metrics(result, sizes, cores)
    if with_profile:
        result.declare(
            PROFILE_METRIC,
            "ns",
            x_label="function group",
            plot="bar",
            description=f"perf cpu-clock samples ({PERF_FREQUENCY} Hz) on the sender's CPUs at "
            f"{sizes[0]} B, {min(cores)} core(s), grouped by kernel function prefix: a "
            "group's share of all samples times the CPU time per packet received (as paper "
            "003's Fig. 1; a separate run from the pps runs; idle left out). 'others' is CPU "
            "taken by programs outside the benchmark; 'netfilter' is br_netfilter's hooks.",
        )
    if max_rate:
        maxrate.declare(result)
    with (
        BenchProgress("forwarding: bringing labs up", quiet=bench.quiet) as progress,
        path_labs("fw", kinds, noter(result, progress)) as paths,
        ExitStack() as servers,
    ):
        for p in paths:
            freeze_neighbours(netns.list_names(p.spec.prefix))
            attach_ingress_drop(p.dst_ns, p.spec.dst.ifname)
            if max_rate:
                servers.enter_context(iperf3.Iperf3Server(p.dst_ns, bind=p.dst_ip))
                reverse = iperf3.Iperf3Server(p.src_ns, maxrate.REVERSE_PORT, bind=p.src_ip)
                servers.enter_context(reverse)
        # A smoke run profiles once per kind; a real run in every repeat.
        profiled = 1 if bench.quick else bench.repeat

        def own(r: int) -> list[Step]:
            return plan_steps(result, paths, points, bench.duration, with_profile and r < profiled)

        plans = maxrate.with_search(own, result, paths, max_rate, bench)
        run_plans(plans, result, progress)
    result.description = lead_summary(result)
    return result
