"""One perfbench run's figures into the BenchResult: latency, loss, overload, CPU, fairness.

Everything the goals are judged from is recorded here as samples, so a report
regenerated from results.json judges the same.
"""

from __future__ import annotations

from statistics import fmean
from typing import Any

from vnet.bench.results import BenchResult
from vnet.bench.sdn.analysis import jain_index, others_p99
from vnet.bench.sdn.hypervisor import counter_sum, tenant_counters
from vnet.bench.sdn.perfbench import Setup
from vnet.bench.sdn.plan import PACKET_OUT_TOTAL, is_noisy, x_of

EXPERIMENTS = {
    "packet-in": "PACKET_IN rate (msgs/s)",
    "port-stats": "port stats request rate (msgs/s)",
    "packet-out": f"tenants ({PACKET_OUT_TOTAL // 1000}k PACKET_OUT/s in total)",
    "packet-out-rate": "PACKET_OUT/s in total over the most tenants",
    "flow-mod": "FLOW_MOD+BARRIER rate (msgs/s)",
    "noisy": "noisy tenant",
}
NOISY_P99 = "noisy: other tenants' p99 latency"
NOISY_DELIVERED = "noisy: noisy tenant's delivered rate"
CPU_PER_10K = "hypervisor CPU per 10k msgs/s"
# The hypervisor's counters (summed over tenants) that say it held back or refused something.
HV_COUNTERS = (
    "rate_limited_waits",
    "packet_ins_limited",
    "dropped_to_tenant",
    "denied",
    "quota_refusals",
)


def cpu_percent(report: dict[str, Any], pid: int | None) -> float | None:
    for c in report.get("cpu", []):
        if c.get("pid") == pid and not c.get("error"):
            return float(c["percent_of_core"])
    return None


def declare_metrics(result: BenchResult) -> None:
    for exp, x_label in EXPERIMENTS.items():
        for stat in ("p50", "mean", "p99"):
            result.declare(f"{exp} {stat} latency", "µs", x_label=x_label)
        result.declare(f"{exp} loss", "%", x_label=x_label)
        result.declare(
            f"{exp} overloaded",
            "1 = fell behind",
            x_label=x_label,
            description="1 when the run fell behind its offered load (see the notes)",
        )
        result.declare(f"{exp} Jain index", "", x_label=x_label, description="per-tenant mean")
        result.declare(f"{exp} {CPU_PER_10K}", "% of a core", x_label=x_label)
    for who in ("OVS", "proxy", "hypervisor"):
        result.declare(f"packet-out {who} CPU", "% of a core", x_label="tenants")
    result.declare(NOISY_P99, "µs", x_label="noisy tenant", plot="bar")
    result.declare(NOISY_DELIVERED, "msgs/s", x_label="noisy tenant", plot="bar")


def tenant_means(report: dict[str, Any], skip: int | None = None) -> list[float]:
    """Mean latency (µs) of each tenant that had answers, leaving out tenant `skip`."""
    return [
        t["latency"]["mean_us"]
        for t in report["tenants"]
        if t["latency"]["count"] > 0 and t["tenant"] != skip
    ]


def _record_latency(result: BenchResult, setup: Setup, report: dict[str, Any]) -> None:
    exp, series, x = setup.experiment, setup.series, x_of(setup)
    t = report["totals"]
    lat = t["latency"]
    if lat["count"] > 0:
        for stat in ("p50", "mean", "p99"):
            result.record(f"{exp} {stat} latency", series, lat[f"{stat}_us"], x=x)
    sent = t["sent"]
    result.record(f"{exp} loss", series, 100.0 * t["lost"] / sent if sent else 100.0, x=x)
    result.record(f"{exp} overloaded", series, 1.0 if report["_overloaded"] else 0.0, x=x)
    means = tenant_means(report, skip=0 if exp == "noisy" else None)
    if setup.tenants > 1 and means:
        result.record(f"{exp} Jain index", series, jain_index(means), x=x)


def _record_cpu(result: BenchResult, setup: Setup, report: dict[str, Any]) -> None:
    pids = report.get("_pids", {})
    exp, series, x = setup.experiment, setup.series, x_of(setup)
    hv = cpu_percent(report, pids.get("hypervisor"))
    achieved = report["totals"]["achieved_rate"]
    if hv is not None and achieved > 0:
        result.record(f"{exp} {CPU_PER_10K}", series, hv / (achieved / 10_000), x=x)
    if exp != "packet-out":
        return
    for who, key in (("OVS", "ovs-vswitchd"), ("proxy", "proxy"), ("hypervisor", "hypervisor")):
        cpu = cpu_percent(report, pids.get(key))
        if cpu is not None:
            result.record(f"packet-out {who} CPU", series, cpu, x=x)


def _record_noisy(result: BenchResult, setup: Setup, report: dict[str, Any]) -> None:
    x = x_of(setup)
    p99s = others_p99(report["tenants"], noisy=0)
    if p99s:
        result.record(NOISY_P99, setup.series, fmean(p99s), x=x)
    # What the hypervisor let through from the noisy tenant over the whole run: perfbench's
    # own count misses it, as what the tenant sends in the window waits behind its backlog.
    hv = tenant_counters(report.get("_hypervisor", {}))
    seconds = report.get("_duration") or 0
    if hv and seconds > 0:
        result.record(NOISY_DELIVERED, setup.series, hv[0]["to_switch_msgs"] / seconds, x=x)


def record_run(result: BenchResult, setup: Setup, report: dict[str, Any]) -> None:
    """All figures of one run; perfbench's problems and overload reasons become notes."""
    _record_latency(result, setup, report)
    _record_cpu(result, setup, report)
    if setup.experiment == "noisy":
        _record_noisy(result, setup, report)
    label = f"{setup.experiment} {setup.series} x={x_of(setup)}"
    for p in report.get("problems", []):
        if not (is_noisy(setup) and "tenant 0" in p):  # the noisy tenant is held back on purpose
            result.note(f"{label}: {p}")
    if report["_overloaded"]:
        result.note(f"{label}: OVERLOADED ({'; '.join(report['_overloaded'])})")
    counted = {k: counter_sum(report.get("_hypervisor", {}), k) for k in HV_COUNTERS}
    if any(counted.values()):
        result.note(f"{label}: hypervisor " + ", ".join(f"{k} {v}" for k, v in counted.items()))
