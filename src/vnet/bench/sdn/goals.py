"""Issue 15's goals for the hypervisor, judged from the recorded samples alone.

The hypervisor ("hv-ND": tenants with TCP_NODELAY on, so Nagle's waits are
not counted as the hypervisor's) against the switch alone ("ovs-ND"). A point
where either fell behind its offered load has no steady latency: a goal there
is "not judged" when the switch alone is overloaded (nothing to add to) and
MISSED when only the hypervisor is. Goals are judged twice where it matters:
at the issue's 60k PACKET_OUT/s over 20 tenants, and at the highest rate of
the rate steps at which the switch alone kept up.
"""

from __future__ import annotations

from statistics import fmean

from vnet.bench.contract import Goal
from vnet.bench.results import BenchResult
from vnet.bench.sdn.analysis import noisy_rise
from vnet.bench.sdn.record import CPU_PER_10K, NOISY_DELIVERED, NOISY_P99
from vnet.bench.stats import summarize

HV, SWITCH = "hv-ND", "ovs-ND"
ADDED_P50_US, ADDED_P99_US = 20.0, 50.0
MIN_JAIN = 0.99
MAX_NOISY_RISE = 0.10

X = int | float | str


def _mean(result: BenchResult, metric: str, series: str, x: X) -> float | None:
    m = result.get(metric, series, x)
    return fmean(m.samples) if m is not None and m.samples else None


def _shown(result: BenchResult, metric: str, series: str, x: X) -> str:
    """The mean over the repeats, with "± the 95% CI of the mean" when there are several."""
    m = result.get(metric, series, x)
    if m is None or not m.samples:
        return "-"
    s = summarize(m.samples)
    return f"{s.mean:.1f}" + (f" ± {s.ci95:.1f}" if s.ci95 is not None else "")


def _repeats(result: BenchResult, metric: str, series: str, x: X) -> int:
    m = result.get(metric, series, x)
    return len(m.samples) if m is not None else 0


def _overloaded(result: BenchResult, exp: str, series: str, x: X) -> bool | None:
    """Whether any repeat of the point fell behind (None: not measured)."""
    m = result.get(f"{exp} overloaded", series, x)
    return None if m is None or not m.samples else max(m.samples) > 0


def keep_up_point(result: BenchResult, series: tuple[str, ...] = (SWITCH,)) -> tuple[str, X] | None:
    """(experiment, x) of the highest total PACKET_OUT rate at which every series kept up."""
    tenants = result.parameters.get("ladder_tenants", 20)
    total = result.parameters.get("packet_out_total_rate", 60_000)
    points: list[tuple[float, str, X]] = [
        (float(r), "packet-out-rate", r) for r in result.parameters.get("ladder_rates", [])
    ]
    points.append((float(total), "packet-out", tenants))
    fine = [
        (rate, exp, x)
        for rate, exp, x in points
        if all(_overloaded(result, exp, se, x) is False for se in series)
    ]
    if not fine:
        return None
    _, exp, x = max(fine, key=lambda p: p[0])
    return exp, x


def _where(result: BenchResult, exp: str, x: X) -> str:
    if exp == "packet-out":
        total = result.parameters.get("packet_out_total_rate", 60_000)
        return f"{total // 1000}k PACKET_OUT/s over {x} tenants"
    return (
        f"{float(x) / 1000:g}k PACKET_OUT/s over {result.parameters.get('ladder_tenants')} tenants"
    )


def _overload_verdict(result: BenchResult, exp: str, x: X, where: str) -> Goal | None:
    """The goal's verdict when a side fell behind (None: both kept up, judge the numbers)."""
    switch, hv = _overloaded(result, exp, SWITCH, x), _overloaded(result, exp, HV, x)
    if switch is None or hv is None:
        return Goal(where, None, "not measured")
    p50 = _mean(result, f"{exp} p50 latency", SWITCH, x)
    if switch:
        shown = f" (p50 {p50 / 1000:.1f} ms)" if p50 is not None else ""
        return Goal(where, None, f"switch alone OVERLOADED{shown}: no steady latency to add to")
    if hv:
        return Goal(where, False, "hypervisor OVERLOADED while the switch alone kept up")
    return None


def added_latency(result: BenchResult, exp: str, x: X) -> Goal:
    where = _where(result, exp, x)
    name = f"added latency p50 <= {ADDED_P50_US:g} µs, p99 <= {ADDED_P99_US:g} µs at {where}"
    verdict = _overload_verdict(result, exp, x, name)
    if verdict is not None:
        return verdict
    got = {
        (s, st): _mean(result, f"{exp} {st} latency", s, x)
        for s in (HV, SWITCH)
        for st in ("p50", "p99")
    }
    if any(v is None for v in got.values()):
        return Goal(name, None, "no latency measured")
    d50 = got[HV, "p50"] - got[SWITCH, "p50"]  # type: ignore[operator]
    d99 = got[HV, "p99"] - got[SWITCH, "p99"]  # type: ignore[operator]
    shown = {
        (s, st): _shown(result, f"{exp} {st} latency", s, x)
        for s in (HV, SWITCH)
        for st in ("p50", "p99")
    }
    detail = (
        f"p50 {shown[HV, 'p50']} vs {shown[SWITCH, 'p50']} µs ({d50:+.1f}), "
        f"p99 {shown[HV, 'p99']} vs {shown[SWITCH, 'p99']} µs ({d99:+.1f})"
    )
    n = min(_repeats(result, f"{exp} p50 latency", s, x) for s in (HV, SWITCH))
    if n > 1:
        detail += f"; means of {n} repeats, ± = 95% CI of the mean"
    return Goal(name, d50 <= ADDED_P50_US and d99 <= ADDED_P99_US, detail)


def fairness(result: BenchResult, exp: str, x: X) -> Goal:
    where = _where(result, exp, x)
    name = f"Jain's index >= {MIN_JAIN} over the tenants' mean latency at {where}"
    jain = _mean(result, f"{exp} Jain index", HV, x)
    if jain is None:
        return Goal(name, None, "not measured")
    if _overloaded(result, exp, HV, x):
        return Goal(name, None, f"{jain:.4f}, but the hypervisor run was OVERLOADED")
    return Goal(name, jain >= MIN_JAIN, f"{jain:.4f}")


def noisy_tenant(result: BenchResult) -> Goal:
    name = f"noisy tenant at 10x its limit: the others' p99 rises <= {MAX_NOISY_RISE:.0%}"
    quiet = result.get(NOISY_P99, HV, "without")
    loud = result.get(NOISY_P99, HV, "with noisy tenant")
    if quiet is None or loud is None or not quiet.samples or not loud.samples:
        return Goal(name, None, "not measured")
    rise = noisy_rise(quiet.samples, loud.samples)
    delivered = _mean(result, NOISY_DELIVERED, HV, "with noisy tenant")
    limit = result.parameters.get("noisy", {}).get("rate_limit")
    detail = (
        f"others' mean p99 {fmean(quiet.samples):.0f} -> {fmean(loud.samples):.0f} µs "
        f"({rise:+.1%}); noisy tenant delivered {delivered or 0:.0f}/s of its limit {limit}/s"
    )
    overloaded = [
        x for x in ("without", "with noisy tenant") if _overloaded(result, "noisy", HV, x)
    ]
    if overloaded:
        return Goal(name, None, f"{detail}; OVERLOADED ({', '.join(overloaded)})")
    return Goal(name, rise <= MAX_NOISY_RISE, detail)


def cpu_reported(result: BenchResult) -> Goal:
    metric = f"packet-out {CPU_PER_10K}"
    parts = [
        f"{m.series} {m.x} tenants: {fmean(m.samples):.1f} %"
        for m in result.measurements_of(metric)
        if m.samples
    ]
    name = "hypervisor CPU per 10k msgs/s reported (PACKET_OUT, % of one core)"
    return Goal(name, bool(parts) or None, "; ".join(parts) or "not measured")


def check_goals(result: BenchResult) -> list[Goal]:
    """At 60k/s; at the switch alone's highest rate; at the highest both kept up (if lower)."""
    tenants = result.parameters.get("ladder_tenants", 20)
    points: list[tuple[str, X]] = [("packet-out", tenants)]
    goals = []
    point = keep_up_point(result)
    if point is None:
        goals.append(Goal("the switch alone keeps up at some rate step", False, "at none"))
    for extra in (point, keep_up_point(result, (SWITCH, HV))):
        if extra is not None and extra not in points:
            points.append(extra)
    goals += [added_latency(result, *p) for p in points]
    goals += [fairness(result, *p) for p in points]
    goals += [noisy_tenant(result), cpu_reported(result)]
    return goals
