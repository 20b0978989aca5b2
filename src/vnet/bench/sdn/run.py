"""One SDN benchmark run: every setup against one OVS lab, the proxy and the hypervisor."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vnet.bench.progress import BenchOptions, BenchProgress
from vnet.bench.results import BenchResult
from vnet.bench.sdn import DESCRIPTION, SdnBenchError
from vnet.bench.sdn.analysis import overload_reasons, read_records, thirds_of
from vnet.bench.sdn.hypervisor import HvConfig, HvProcess, hypervisor, hypervisor_binary
from vnet.bench.sdn.lab import OvsLab
from vnet.bench.sdn.perfbench import Setup, perfbench_binary, proxy, run_perfbench
from vnet.bench.sdn.plan import (
    LADDER_RATES,
    NOISY_FACTOR,
    NORMAL_RATE,
    PACKET_OUT_TOTAL,
    RATE_LIMIT,
    plan,
)
from vnet.bench.sdn.record import declare_metrics, record_run


def _loadavg() -> str:
    """The machine's load average after a run: other work on a shared machine shows here."""
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return ""


@dataclass
class Context:
    """What every run shares: the lab, the binaries, the proxy, the timing."""

    lab: OvsLab
    perfbench: Path
    hypervisor: Path
    proxy_pid: int
    bench: BenchOptions
    trim: float
    version: str


# -- overload: from the counters and the records' thirds ---------------------------------


def _others_totals(report: dict[str, Any], skip: int) -> dict[str, Any]:
    """perfbench's totals over every tenant but `skip` (the noisy one)."""
    others = [t for t in report["tenants"] if t["tenant"] != skip]
    return {
        "sent": sum(t["sent"] for t in others),
        "lost": sum(t["lost"] for t in others),
        "target_rate": sum(t["target_rate"] for t in others),
        "achieved_rate": sum(t["achieved_rate"] for t in others),
        "latency": {"p50_us": max((t["latency"]["p50_us"] for t in others), default=0.0)},
    }


def judge_overload(setup: Setup, report: dict[str, Any], records: Path) -> list[str]:
    """Why the run fell behind (empty: it kept up); the noisy tenant itself is not judged."""
    skip = 0 if setup.experiment == "noisy" else None
    tenants = [t for t in report["tenants"] if t["tenant"] != skip]
    totals = report["totals"] if skip is None else _others_totals(report, skip)
    backlog = max((t.get("max_send_backlog_bytes", 0) for t in tenants), default=0)
    csv = records / "records.csv"
    thirds = None
    if csv.is_file():
        window = report["window"]
        thirds = thirds_of(read_records(csv, skip), window["start_ns"], window["end_ns"])
        report["_thirds_p50_us"] = list(thirds.p50_us)
    return overload_reasons(totals, thirds, backlog)


# -- one run of a setup ------------------------------------------------------------------


@dataclass
class SystemUnderTest:
    pids: dict[str, int]  # whose CPU perfbench measures: "ovs-vswitchd", "proxy", "hypervisor"
    hv: HvProcess | None = None  # its report is there once it has stopped


@contextmanager
def _system_under_test(ctx: Context, setup: Setup) -> Iterator[SystemUnderTest]:
    """The hypervisor for an "hv" run (one per run, so its CPU and counters are that run's)."""
    sut = SystemUnderTest({"ovs-vswitchd": ctx.lab.pids["ovs-vswitchd"]})
    if setup.via == "proxy":
        sut.pids["proxy"] = ctx.proxy_pid
    if setup.via != "hv":
        yield sut
        return
    cfg = HvConfig(setup.tenants, probe_macs=setup.kind == "packet-in", rate_limit=setup.rate_limit)
    with hypervisor(ctx.lab, ctx.hypervisor, cfg, ctx.bench.duration + 90) as sut.hv:
        sut.pids["hypervisor"] = sut.hv.pid
        yield sut


def _measure(ctx: Context, setup: Setup) -> dict[str, Any]:
    """perfbench against the switch, directly or through the proxy or the hypervisor."""
    with tempfile.TemporaryDirectory(prefix="vnet-sdn-") as tmp:
        with _system_under_test(ctx, setup) as sut:
            rep = run_perfbench(
                ctx.lab,
                ctx.perfbench,
                setup,
                duration=ctx.bench.duration,
                trim=ctx.trim,
                version=ctx.version,
                cpu_pids=list(sut.pids.values()),
                records=Path(tmp),
            )
        rep["_pids"] = sut.pids
        rep["_overloaded"] = judge_overload(setup, rep, Path(tmp))
    rep["_hypervisor"] = sut.hv.report if sut.hv else {}
    rep["_loadavg"] = _loadavg()
    rep["_duration"] = ctx.bench.duration
    return rep


def _one_run(
    ctx: Context, setup: Setup, k: int, result: BenchResult, progress: BenchProgress
) -> dict[str, Any] | None:
    """Run repeat `k` of `setup`, record it; a failed run becomes a note, not an abort."""
    label = f"{setup.experiment} {setup.series} tenants={setup.tenants} rate={setup.rate}"
    progress.update(f"{label} run {k + 1}/{ctx.bench.repeat}")
    try:
        rep = _measure(ctx, setup)
    except SdnBenchError as err:
        result.note(f"{label} run {k + 1}: {err}")
        progress.log(f"failed: {label}: {err}")
        progress.advance()
        return None
    record_run(result, setup, rep)
    lat, t = rep["totals"]["latency"], rep["totals"]
    over = f", OVERLOADED: {'; '.join(rep['_overloaded'])}" if rep["_overloaded"] else ""
    progress.log(
        f"{label}: p50 {lat['p50_us']:.0f} µs, p99 {lat['p99_us']:.0f} µs, "
        f"lost {t['lost']}/{t['sent']}, load {rep['_loadavg']}{over}"
    )
    progress.advance()
    return rep


# -- the whole run -----------------------------------------------------------------------


def _start(
    bench: BenchOptions, tenants: list[int], version: str, setups: list[Setup]
) -> BenchResult:
    binaries = {"perfbench": str(perfbench_binary()), "hypervisor": str(hypervisor_binary())}
    result = BenchResult.start(
        "sdn",
        parameters={
            **bench.as_parameters(),
            "tenants": tenants,
            "openflow": version,
            "trim_seconds": min(5.0, bench.duration / 6),
            "packet_in_rates": sorted({s.rate for s in setups if s.experiment == "packet-in"}),
            "port_stats_rates": sorted({s.rate for s in setups if s.experiment == "port-stats"}),
            "packet_out_total_rate": PACKET_OUT_TOTAL,
            "ladder_tenants": max(tenants),
            "ladder_rates": sorted({s.rate for s in setups if s.experiment == "packet-out-rate"})
            or LADDER_RATES,
            "noisy": {
                "tenants": next((s.tenants for s in setups if s.experiment == "noisy"), 0),
                "normal_rate": NORMAL_RATE,
                "rate_limit": RATE_LIMIT,
                "noisy_rate": NOISY_FACTOR * RATE_LIMIT,
            },
        },
        tools={"ovs-vswitchd": "ovs-vswitchd", **binaries},
        baseline="ovs-AGG",
        description=DESCRIPTION,
    )
    declare_metrics(result)
    return result


def run_sdn(
    bench: BenchOptions, tenants: list[int], version: str, runs: list[tuple[Setup, dict[str, Any]]]
) -> BenchResult:
    """Every setup against one OVS lab; `runs` gets each setup's first report."""
    duration = bench.duration
    setups = plan(bench.quick, tenants)
    result = _start(bench, tenants, version, setups)
    binary = perfbench_binary()
    total_time = len(setups) * bench.repeat * (duration + 3) + 120
    with ExitStack() as stack:
        lab = stack.enter_context(OvsLab())
        proxy_pid = stack.enter_context(proxy(lab, binary, max(tenants), total_time))
        progress = stack.enter_context(
            BenchProgress("sdn", total=len(setups) * bench.repeat, quiet=bench.quiet)
        )
        trim = min(5.0, duration / 6)
        ctx = Context(lab, binary, hypervisor_binary(), proxy_pid, bench, trim, version)
        for setup in setups:
            for k in range(bench.repeat):
                rep = _one_run(ctx, setup, k, result, progress)
                if rep is not None and k == 0:
                    runs.append((setup, rep))
    return result
