"""vnet bench forwarding: packets per second through routers, and their CPU cost (paper 003).

trafgen blasts one small UDP frame from end host "src" towards "dst"; "dst"
drops every IPv4 packet at its interface's ingress hook (a two-instruction
eBPF program in tc, where nft's netdev ingress would sit: nftables is not
installed here), and the received rate is read from that interface's
counters. Path kinds (see vnet.bench.dataplane):

  physical  no router: two physical hosts on one underlay veth
  native    a native router: the middle of three physical hosts forwards
  bridge    no router: a virtual network on one host (what every VR hop adds too)
  vrN       a chain of N vnet VRs

Per packet CPU cost: the ticks of the sender's CPUs (/proc/stat; veth hands
packets on within the sending CPU, so the whole path runs there) divided by
packets received; with perf, also split by kernel function group, in the
spirit of paper 003's Fig. 1.
"""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import socket
import struct
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import click
from pyroute2 import IPRoute

from vnet.bench import traffic
from vnet.bench.dataplane import (
    PATH_BUILDERS,
    ReadyPath,
    Step,
    format_ratio,
    noter,
    parse_kinds,
    parse_list,
    path_labs,
    require_root,
    require_tools,
    summary_of,
)
from vnet.bench.progress import BenchOptions, BenchProgress, bench_options
from vnet.bench.report import finish_run
from vnet.bench.results import BenchResult, tool_version
from vnet.bench.stats import Summary, ratio
from vnet.substrate import nsfs

BASELINE = "native"
FORWARDING_KINDS = ("physical", "native", "bridge", "vr1", "vr2", "vr4")
DEFAULT_SIZES = (64, 128, 512, 1500)  # Ethernet frame with FCS, as RFC 2544 counts
QUICK_SIZES = (64,)
DEFAULT_CORES = (1, 2)
WARMUP = 0.4  # s of traffic before counting: trafgen maps its ring, neighbours settle
PERF_FREQUENCY = 1000  # Hz; with cpu-clock every sample stands for 1 ms of CPU


# -- the receiver: drop at ingress -------------------------------------------------

SYS_BPF = 321  # x86_64
BPF_PROG_LOAD = 5
BPF_PROG_TYPE_SCHED_CLS = 3
TC_ACT_OK, TC_ACT_SHOT = 0, 2
ETH_P_IP_IN_SKB = 0x0008  # htons(0x0800) as __sk_buff.protocol reads on little-endian


def _insn(code: int, dst: int = 0, src: int = 0, off: int = 0, imm: int = 0) -> bytes:
    return struct.pack("<BBhi", code, (src << 4) | dst, off, imm)


# Drop IPv4, pass the rest: ARP must still answer, or routers stop resolving dst.
DROP_IPV4 = b"".join(
    [
        _insn(0x61, 0, 1, 16),  # r0 = skb->protocol
        _insn(0x55, 0, 0, 2, ETH_P_IP_IN_SKB),  # if r0 != IPv4 goto pass
        _insn(0xB7, 0, 0, 0, TC_ACT_SHOT),  # r0 = TC_ACT_SHOT
        _insn(0x95),  # exit
        _insn(0xB7, 0, 0, 0, TC_ACT_OK),  # pass: r0 = TC_ACT_OK
        _insn(0x95),  # exit
    ]
)


def load_drop_program() -> int:
    """Load DROP_IPV4 as a tc classifier; returns its file descriptor."""
    libc = ctypes.CDLL(None, use_errno=True)
    insns = ctypes.create_string_buffer(DROP_IPV4, len(DROP_IPV4))
    license_ = ctypes.create_string_buffer(b"GPL")
    log = ctypes.create_string_buffer(4096)
    attr = struct.pack(
        "<IIQQIIQII16s",
        BPF_PROG_TYPE_SCHED_CLS,
        len(DROP_IPV4) // 8,
        ctypes.addressof(insns),
        ctypes.addressof(license_),
        1,  # log level: say why if the verifier refuses
        len(log),
        ctypes.addressof(log),
        0,
        0,
        b"vnet_drop",
    )
    buf = ctypes.create_string_buffer(attr, 128)
    fd = libc.syscall(SYS_BPF, BPF_PROG_LOAD, buf, len(buf))
    if fd < 0:
        err = ctypes.get_errno()
        raise traffic.ToolError(
            f"loading the eBPF drop program failed: {os.strerror(err)}: {log.value.decode()}"
        )
    return int(fd)


def attach_ingress_drop(ns: str, ifname: str) -> None:
    """clsact + the drop program on `ifname`'s ingress; it goes with the namespace."""
    fd = load_drop_program()
    with nsfs.entered(ns):
        ipr = IPRoute()
    try:
        index = ipr.link_lookup(ifname=ifname)[0]
        ipr.tc("add", "clsact", index)
        ipr.tc(
            "add-filter",
            "bpf",
            index,
            ":1",
            fd=fd,
            name="vnet_drop",
            parent="ffff:fff2",  # clsact ingress
            classid=1,
            direct_action=True,
        )
    finally:
        ipr.close()
        os.close(fd)  # the filter holds the program


NUD_PERMANENT = 0x80
NUD_LEARNED = 0x02 | 0x04 | 0x08 | 0x10  # REACHABLE, STALE, DELAY, PROBE


def freeze_neighbours(namespaces: Sequence[str]) -> int:
    """Make the ARP entries the reachability pings learnt permanent; returns how many.

    The flood is one-way, so nothing confirms a neighbour: after ~30 s an
    entry is probed again, and an ARP reply lost in a full backlog stalls a
    hop for seconds. Testers use static ARP for this reason; the forwarding
    work per packet stays the same.
    """
    frozen = 0
    for ns in namespaces:
        with nsfs.entered(ns):
            ipr = IPRoute()
        try:
            for entry in ipr.get_neighbours(family=socket.AF_INET):
                mac, dst = entry.get_attr("NDA_LLADDR"), entry.get_attr("NDA_DST")
                if mac and dst and entry["state"] & NUD_LEARNED:
                    ipr.neigh(
                        "replace",
                        dst=dst,
                        lladdr=mac,
                        ifindex=entry["ifindex"],
                        state=NUD_PERMANENT,
                    )
                    frozen += 1
        finally:
            ipr.close()
    return frozen


# -- one measurement ---------------------------------------------------------------


@dataclass(frozen=True)
class PpsRun:
    pps: float  # received
    cpu: traffic.CpuTimes  # ticks of the sender's CPUs over the window
    seconds: float

    @property
    def packets(self) -> float:
        return self.pps * self.seconds

    def ns_per_packet(self, ticks: int) -> float:
        if self.packets <= 0:
            return 0.0
        return ticks / traffic.ticks_per_second() * 1e9 / self.packets


def measure_pps(
    path: ReadyPath,
    size: int,
    cores: int,
    duration: float,
    during: Callable[[], None] | None = None,
) -> PpsRun:
    """trafgen on `cores` CPUs for WARMUP + `duration` s; `during` replaces the plain wait."""
    packet = traffic.trafgen_packet(
        path.first_hop_mac, path.src_mac, path.src_ip, path.dst_ip, size
    )
    cpus = list(range(cores))  # trafgen pins its workers to CPUs 0..N-1
    src_if, dst_if = path.spec.src.ifname, path.spec.dst.ifname
    with traffic.Trafgen(path.src_ns, src_if, packet, cores) as gen:
        time.sleep(WARMUP)
        if not gen.running():
            raise traffic.ToolError("trafgen stopped right after starting")
        rx0 = traffic.interface_counters(path.dst_ns, dst_if)
        tx0 = traffic.interface_counters(path.src_ns, src_if)
        cpu0, t0 = traffic.cpu_times(cpus), time.monotonic()
        if during is None:
            time.sleep(duration)
        else:
            during()
        rx1 = traffic.interface_counters(path.dst_ns, dst_if)
        tx1 = traffic.interface_counters(path.src_ns, src_if)
        cpu1, t1 = traffic.cpu_times(cpus), time.monotonic()
    # What entered the first hop, whether it was dropped there or not.
    offered = (tx1.tx_packets + tx1.tx_dropped) - (tx0.tx_packets + tx0.tx_dropped)
    if offered <= 0:  # the sender failed: no property of the path
        raise traffic.ToolError(f"trafgen sent nothing ({gen.complaint() or 'no message'})")
    seconds = t1 - t0
    return PpsRun((rx1.rx_packets - rx0.rx_packets) / seconds, cpu1 - cpu0, seconds)


# -- profile: where the CPU goes ---------------------------------------------------

IDLE_PREFIXES: tuple[str, ...] = (
    "default_idle",
    "pv_native_safe_halt",
    "native_safe_halt",
    "cpuidle",
    "do_idle",
    "acpi_idle",
    "poll_idle",
    "mwait_idle",
    "intel_idle",
    "cpu_idle",
)
# First match wins; the names are the kernel's own prefixes.
FUNCTION_GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "sender",
        ("packet_", "tpacket_", "skb_set_owner_w", "sock_", "skb_copy_ubufs", "__sys_send"),
    ),
    (
        "locks",
        (
            "_raw_spin",
            "__raw_callee_save___pv_queued",
            "queued_spin",
            "__pv_queued",
            "__rcu_read_",
            "rcu_read_",
        ),
    ),
    # br_netfilter's hooks, and the netfilter core they call (no rules are loaded).
    (
        "netfilter",
        (
            "br_nf_",
            "nf_bridge",
            "brnf_",
            "setup_pre_routing",
            "br_validate",
            "nf_",
            "nft_",
            "__nf_",
        ),
    ),
    ("bridge", ("br_", "__br_", "nbp_", "fdb_")),
    ("veth", ("veth_",)),
    ("vxlan", ("vxlan", "udp_tunnel", "iptunnel")),
    ("tc+drop", ("cls_bpf", "tcf_", "bpf_prog", "tc_run", "sch_handle", "__tcf")),
    (
        "ip fwd",
        (
            "ip_",
            "__ip_",
            "fib",
            "neigh_",
            "__neigh",
            "arp_",
            "inet_",
            "dst_",
            "ipv4_",
            "rt_",
            "udp_v4_early_demux",
        ),
    ),
    (
        "memory",
        (
            "kmem_cache_",
            "kmalloc",
            "__kmalloc",
            "kfree",
            "__alloc_",
            "alloc_pages",
            "get_page_from_freelist",
            "__free_pages",
            "free_unref",
            "rmqueue",
            "__slab",
            "___slab",
            "skb_release",
            "__build_skb",
            "build_skb",
            "memcpy",
            "__memcpy",
            "__pi_memcpy",
            "memset",
            "__memset",
            "skb_copy_bits",
            "page_",
            "__page_",
            "kmalloc_reserve",
            "alloc_skb",
            "__alloc_skb",
            "skb_free",
            "__kfree_skb",
            "napi_skb_cache",
        ),
    ),
    (
        "net core",
        (
            "netif_",
            "__netif_",
            "net_rx_action",
            "process_backlog",
            "dev_",
            "__dev_",
            "skb_",
            "__skb",
            "eth_",
            "napi_",
            "__napi",
            "validate_xmit",
            "passthru_features",
            "enqueue_to_backlog",
            "consume_skb",
            "sch_direct_xmit",
            "do_softirq",
            "__do_softirq",
            "handle_softirqs",
            "__local_bh_enable",
            "net_",
            "netdev_",
            "__netdev_",
            "gro_",
        ),
    ),
)
OTHER_KERNEL = "kernel"
OTHER_PROCESSES = "others"
IDLE = "idle"
GROUP_NAMES = [*(name for name, _ in FUNCTION_GROUPS), OTHER_KERNEL, OTHER_PROCESSES]


SENDER = FUNCTION_GROUPS[0][0]


def function_group(comm: str, symbol: str, kernel: bool = True) -> str:
    """The group of one perf sample (IDLE when the CPU had nothing to do).

    Softirq work runs in whichever context it interrupts: trafgen's,
    ksoftirqd's or the idle task's (swapper), so those count as ours.
    """
    if kernel and symbol.startswith(IDLE_PREFIXES):
        return IDLE
    if not (comm == "trafgen" or comm.startswith(("ksoftirqd", "swapper"))):
        return OTHER_PROCESSES
    if not kernel:
        return SENDER if comm == "trafgen" else OTHER_KERNEL
    for name, prefixes in FUNCTION_GROUPS:
        if symbol.startswith(prefixes):
            return name
    return OTHER_KERNEL


PERF_LINE = re.compile(r"^\s*(?P<comm>.*?)\s+[0-9a-f]+\s+(?P<sym>.*?)\s*\((?P<dso>[^()]*)\)$")


def parse_perf_script(text: str) -> Counter[str]:
    """`perf script -F comm,ip,sym,dso` -> samples per function group, IDLE included.

    A line is the command name (which may hold spaces), the address in hex,
    the symbol ("[unknown]" when perf cannot name it) and the object in
    parentheses ("[kernel.kallsyms]" for the kernel).
    """
    groups: Counter[str] = Counter()
    for line in text.splitlines():
        match = PERF_LINE.match(line)
        if match is None:
            continue
        kernel = match["dso"] == "[kernel.kallsyms]"
        groups[function_group(match["comm"], match["sym"], kernel)] += 1
    return groups


def perf_works() -> bool:
    """perf is there and may sample the CPUs (root, or a permissive paranoid level)."""
    if shutil.which("perf") is None:
        return False
    try:
        done = subprocess.run(
            ["perf", "stat", "-e", "cpu-clock", "-C", "0", "--", "true"],
            capture_output=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def _perf(argv: list[str], timeout: float) -> str:
    """Run perf (in our own namespace: it samples CPUs, not namespaces); stdout."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.SubprocessError) as err:
        raise traffic.ToolError(f"{' '.join(argv[:2])}: {err}") from None
    if done.returncode != 0:
        raise traffic.ToolError(f"{' '.join(argv[:2])} failed: {done.stderr.strip()[:200]}")
    return done.stdout


def profile(cpus: Sequence[int], seconds: float) -> Counter[str]:
    """Samples per function group on `cpus` for `seconds`, with perf's cpu-clock."""
    with tempfile.TemporaryDirectory(prefix="vnet-perf-") as tmp:
        data = str(Path(tmp) / "perf.data")
        record = ["perf", "record", "-q", "-e", "cpu-clock", "-F", str(PERF_FREQUENCY)]
        record += ["-C", ",".join(map(str, cpus)), "-o", data, "--", "sleep", f"{seconds:.3f}"]
        _perf(record, seconds + 30)
        script = _perf(["perf", "script", "-i", data, "-F", "comm,ip,sym,dso"], 60)
        return parse_perf_script(script)


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


def pps_metric(size: int) -> str:
    return f"pps at {size} B"


def size_metric(cores: int) -> str:
    return f"pps by frame size, {cores} sender core" + ("s" if cores > 1 else "")


def cost_metric(kind: str, size: int) -> str:
    return f"{kind} per packet at {size} B"


PROFILE_METRIC = "cpu per packet by function group"


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
        raise traffic.ToolError("perf recorded no samples or nothing arrived")
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
            "receiver": "eBPF tc ingress program dropping IPv4, rx_packets of dst's interface",
            "neighbours": "ARP entries along the path made permanent before the runs",
            "profile": with_profile,
        },
        tools={
            "trafgen": tool_version(["trafgen", "--version"]),
            "perf": tool_version(["perf", "--version"]) if with_profile else None,
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
    with (
        BenchProgress("forwarding: bringing labs up", quiet=bench.quiet) as progress,
        path_labs("fw", kinds, noter(result, progress)) as paths,
    ):
        for p in paths:
            freeze_neighbours(nsfs.list_names(f"vnet-{p.spec.lab}-"))
            attach_ingress_drop(p.dst_ns, p.spec.dst.ifname)
        # A smoke run profiles once per kind; a real run in every repeat.
        profiled = 1 if bench.quick else bench.repeat
        plans = [
            plan_steps(result, paths, points, bench.duration, with_profile and r < profiled)
            for r in range(bench.repeat)
        ]
        progress.update(total=sum(len(steps) for steps in plans))
        for repeat, steps in enumerate(plans):
            for step in steps:
                progress.update(f"{step.label}, run {repeat + 1}/{bench.repeat}")
                try:
                    step.run()
                except traffic.ToolError as err:
                    result.note(f"{step.label}, run {repeat + 1}: not counted: {err}")
                progress.advance()
    result.description = lead_summary(result)
    return result


# -- the lead ----------------------------------------------------------------------


def _fmt_mean(s: Summary | None, scale: float = 1.0, digits: int = 0) -> str:
    if s is None:
        return "–"
    mean = s.mean / scale
    return (
        f"{mean:,.{digits}f}"
        if s.ci95 is None
        else f"{mean:,.{digits}f} ± {s.ci95 / scale:,.{digits}f}"
    )


# Each step adds one thing to the path before it.
OVERHEAD_STEPS = (
    ("physical", "native", "a native router hop (one forwarding namespace, one more veth)"),
    ("physical", "bridge", "a bridge and a second veth pair, no router"),
    ("native", "vr1", "a vnet VR instead of a native router: two bridges, two more veth pairs"),
    ("vr1", "vr2", "one more VR hop"),
    ("vr2", "vr4", "two more VR hops"),
)


def lead_summary(result: BenchResult) -> str:
    """Markdown leading the report: pps and CPU per packet per kind, ratio to native."""
    pps = [m for m in result.metric_names() if m.startswith("pps at ")]
    if not pps:
        return "No packet rates were measured; see the notes."
    metric = pps[0]
    size = metric.removeprefix("pps at ").removesuffix(" B")
    cores = sorted({m.x for m in result.measurements_of(metric) if isinstance(m.x, int | float)})
    base = result.baseline
    header = ["path kind"]
    for c in cores:
        header += [f"kpps, {c:g} core(s)"] + ([f"ratio to {base}"] if base else [])
    header += [f"CPU ns/packet, {cores[0]:g} core", "of it softirq"]
    lines = [
        f"## Forwarding rate at {size} B (thousands of packets/s, mean ± 95% CI)",
        "",
        "| " + " | ".join(header) + " |",
        "|---" + "|---:" * (len(header) - 1) + "|",
    ]
    for kind in result.series_names(metric):
        cells = [kind]
        for c in cores:
            s = summary_of(result, metric, kind, c)
            cells.append(_fmt_mean(s, 1000, 1))
            if base:
                b = summary_of(result, metric, base, c)
                cells.append(format_ratio(ratio(s, b)) if s and b and b.mean else "–")
        cells.append(_fmt_mean(summary_of(result, cost_metric("cpu", int(size)), kind, cores[0])))
        cells.append(
            _fmt_mean(summary_of(result, cost_metric("softirq", int(size)), kind, cores[0]))
        )
        lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        f"## Where the cost comes from ({size} B, {cores[0]:g} core)",
        "",
        "| step | what it adds | Δ CPU ns/packet | Δ softirq ns/packet | pps kept |",
        "|---|---|---:|---:|---:|",
    ]
    cpu, soft = cost_metric("cpu", int(size)), cost_metric("softirq", int(size))
    for before, after, what in OVERHEAD_STEPS:
        a, b = summary_of(result, cpu, before, cores[0]), summary_of(result, cpu, after, cores[0])
        sa, sb = (
            summary_of(result, soft, before, cores[0]),
            summary_of(result, soft, after, cores[0]),
        )
        pa, pb = (
            summary_of(result, metric, before, cores[0]),
            summary_of(result, metric, after, cores[0]),
        )
        if a is None or b is None or sa is None or sb is None or pa is None or pb is None:
            continue
        kept = format_ratio(ratio(pb, pa)) if pa.mean else "–"
        lines.append(
            f"| {before} → {after} | {what} | {b.mean - a.mean:+.0f} | {sb.mean - sa.mean:+.0f} "
            f"| {kept} |"
        )
    return "\n".join(lines + profile_table(result))


def profile_table(result: BenchResult) -> list[str]:
    """Mean CPU ns per packet by function group: one row per kind (paper 003's Fig. 1)."""
    measured = result.measurements_of(PROFILE_METRIC)
    if not any(m.samples for m in measured):
        return []
    groups = [g for g in GROUP_NAMES if any(m.x == g and any(m.samples) for m in measured)]
    lines = [
        "",
        "## CPU per packet by kernel function group (ns, mean of the profiled runs)",
        "",
        "| path kind | " + " | ".join(groups) + " |",
        "|---" + "|---:" * len(groups) + "|",
    ]
    for kind in result.series_names(PROFILE_METRIC):
        cells = [summary_of(result, PROFILE_METRIC, kind, g) for g in groups]
        lines.append(
            f"| {kind} | " + " | ".join("–" if c is None else f"{c.mean:.0f}" for c in cells) + " |"
        )
    return lines


# -- command line ------------------------------------------------------------------


@click.command("forwarding")
@bench_options(duration=2.0, repeat=4, quick_duration=0.5, quick_repeat=2)
@click.option(
    "--kinds",
    default=",".join(FORWARDING_KINDS),
    show_default=True,
    help="Path kinds, comma-separated (also: vxlan).",
)
@click.option(
    "--sizes",
    default=None,
    metavar="BYTES,...",
    help="Frame sizes with FCS; the first is also measured with every core count [default: "
    + ",".join(map(str, DEFAULT_SIZES))
    + "; with --quick: "
    + ",".join(map(str, QUICK_SIZES))
    + "].",
)
@click.option(
    "--cores",
    default=",".join(map(str, DEFAULT_CORES)),
    show_default=True,
    metavar="N,...",
    help="Sender core counts (trafgen --cpus).",
)
@click.option(
    "--profile/--no-profile",
    default=None,
    help="Split CPU per packet by kernel function group with perf [default: when perf works].",
)
def forwarding(
    bench: BenchOptions, kinds: str, sizes: str | None, cores: str, profile: bool | None
) -> None:
    """Packets per second through a native router, a vnet VR and chains of VRs."""
    chosen = parse_kinds(kinds, [k for k in PATH_BUILDERS if k != "srv6"])
    size_list = (
        parse_list(sizes, int, "frame sizes")
        if sizes is not None
        else list(QUICK_SIZES if bench.quick else DEFAULT_SIZES)
    )
    if any(s < 64 or s > 1518 for s in size_list):
        raise click.BadParameter("frame sizes must be within 64..1518", param_hint="--sizes")
    core_list = parse_list(cores, int, "core counts")
    usable = len(os.sched_getaffinity(0))
    if any(c < 1 or c > usable for c in core_list):
        raise click.BadParameter(f"core counts must be within 1..{usable}", param_hint="--cores")
    require_root()
    require_tools("trafgen", "fping")
    with_profile = perf_works() if profile is None else profile
    result = run_forwarding(bench, chosen, size_list, core_list, with_profile)
    finish_run(result, bench)
