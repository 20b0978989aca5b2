"""One SDN benchmark run: Table 1's setups against one OVS lab and one proxy."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from vnet.bench.progress import BenchOptions, BenchProgress
from vnet.bench.results import BenchResult
from vnet.bench.sdn import DESCRIPTION, SdnBenchError
from vnet.bench.sdn.lab import OvsLab
from vnet.bench.sdn.perfbench import Setup, perfbench_binary, proxy, run_perfbench

# The paper's Table 1 (rates in messages/s).
PACKET_IN_RATES = [10_000, 20_000, 30_000, 40_000]
PORT_STATS_RATES = [5_000, 6_000, 7_000, 8_000]
PACKET_OUT_TOTAL = 60_000


# -- the experiment plan ---------------------------------------------------------------


def plan(quick: bool, tenants: list[int]) -> list[Setup]:
    """Table 1 of the paper, each setup switch-only and through the proxy."""
    setups: list[Setup] = []
    for via in ("ovs", "proxy"):
        for rate in [40_000] if quick else PACKET_IN_RATES:
            setups.append(Setup("packet-in", via, False, 1, rate))
        if not quick:
            setups.append(Setup("packet-in", via, True, 1, 40_000))
        for rate in [8_000] if quick else PORT_STATS_RATES:
            setups.append(Setup("port-stats", via, False, 1, rate))
        for n in tenants:
            for nd in (False, True):
                setups.append(Setup("packet-out", via, nd, n, PACKET_OUT_TOTAL))
    return setups


def _loadavg() -> str:
    """The machine's load average after a run: other work on a shared machine shows here."""
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return ""


def cpu_percent(report: dict[str, Any], pid: int | None) -> float | None:
    for c in report.get("cpu", []):
        if c.get("pid") == pid and not c.get("error"):
            return float(c["percent_of_core"])
    return None


def record_run(
    result: BenchResult, setup: Setup, report: dict[str, Any], pids: dict[str, int | None]
) -> None:
    t = report["totals"]
    lat = t["latency"]
    x: float = setup.tenants if setup.experiment == "packet-out" else setup.rate
    if lat["count"] > 0:
        result.record(f"{setup.experiment} mean latency", setup.series, lat["mean_us"], x=x)
        result.record(f"{setup.experiment} p99 latency", setup.series, lat["p99_us"], x=x)
    sent = t["sent"]
    result.record(
        f"{setup.experiment} loss", setup.series, 100.0 * t["lost"] / sent if sent else 100.0, x=x
    )
    if setup.experiment == "packet-out":
        ovs = cpu_percent(report, pids.get("ovs-vswitchd"))
        if ovs is not None:
            result.record("packet-out OVS CPU", setup.series, ovs, x=x)
        prx = cpu_percent(report, pids.get("proxy"))
        if prx is not None:
            result.record("packet-out proxy CPU", setup.series, prx, x=x)
    for p in report.get("problems", []):
        result.note(f"{setup.experiment} {setup.series} x={x}: {p}")


def declare_metrics(result: BenchResult) -> None:
    for exp, x_label in (
        ("packet-in", "PACKET_IN rate (msgs/s)"),
        ("port-stats", "port stats request rate (msgs/s)"),
        ("packet-out", "tenants (60k PACKET_OUT/s in total)"),
    ):
        result.declare(f"{exp} mean latency", "µs", x_label=x_label)
        result.declare(f"{exp} p99 latency", "µs", x_label=x_label)
        result.declare(f"{exp} loss", "%", x_label=x_label)
    result.declare("packet-out OVS CPU", "% of a core", x_label="tenants")
    result.declare("packet-out proxy CPU", "% of a core", x_label="tenants")


# -- one run of a setup, and the whole run -----------------------------------------------


def _one_run(
    lab: OvsLab,
    binary: Path,
    setup: Setup,
    k: int,
    bench: BenchOptions,
    trim: float,
    version: str,
    proxy_pid: int,
    result: BenchResult,
    progress: BenchProgress,
) -> dict[str, Any] | None:
    """Run repeat `k` of `setup`, record it; a failed run becomes a note, not an abort."""
    label = f"{setup.experiment} {setup.series} tenants={setup.tenants} rate={setup.rate}"
    progress.update(f"{label} run {k + 1}/{bench.repeat}")
    vswitchd = lab.pids["ovs-vswitchd"]
    via_proxy = setup.via == "proxy"
    try:
        rep = run_perfbench(
            lab,
            binary,
            setup,
            duration=bench.duration,
            trim=trim,
            version=version,
            cpu_pids=[vswitchd, proxy_pid] if via_proxy else [vswitchd],
        )
    except SdnBenchError as err:
        result.note(f"{label} run {k + 1}: {err}")
        progress.log(f"failed: {label}: {err}")
        progress.advance()
        return None
    rep["_loadavg"] = _loadavg()
    rep["_pids"] = {"ovs-vswitchd": vswitchd, "proxy": proxy_pid if via_proxy else None}
    record_run(result, setup, rep, rep["_pids"])
    lat, t = rep["totals"]["latency"], rep["totals"]
    progress.log(
        f"{label}: p50 {lat['p50_us']:.0f} µs, p99 {lat['p99_us']:.0f} µs, "
        f"lost {t['lost']}/{t['sent']}, load {rep['_loadavg']}"
    )
    progress.advance()
    return rep


def run_sdn(
    bench: BenchOptions, tenants: list[int], version: str, runs: list[tuple[Setup, dict[str, Any]]]
) -> BenchResult:
    """Every setup against one OVS lab and one proxy; `runs` gets each setup's first report."""
    duration = bench.duration
    trim = min(5.0, duration / 6)
    binary = perfbench_binary()
    setups = plan(bench.quick, tenants)
    result = BenchResult.start(
        "sdn",
        parameters={
            **bench.as_parameters(),
            "tenants": tenants,
            "openflow": version,
            "trim_seconds": trim,
            "packet_in_rates": sorted({s.rate for s in setups if s.experiment == "packet-in"}),
            "port_stats_rates": sorted({s.rate for s in setups if s.experiment == "port-stats"}),
            "packet_out_total_rate": PACKET_OUT_TOTAL,
        },
        tools={"ovs-vswitchd": "ovs-vswitchd", "perfbench": str(binary)},
        baseline="ovs-AGG",
        description=DESCRIPTION,
    )
    declare_metrics(result)
    total_time = len(setups) * bench.repeat * (duration + 1.5) + 60
    with (
        OvsLab() as lab,
        proxy(lab, binary, max(tenants), total_time) as proxy_pid,
        BenchProgress("sdn", total=len(setups) * bench.repeat, quiet=bench.quiet) as progress,
    ):
        for setup in setups:
            for k in range(bench.repeat):
                rep = _one_run(
                    lab, binary, setup, k, bench, trim, version, proxy_pid, result, progress
                )
                if rep is not None and k == 0:
                    runs.append((setup, rep))
    return result
