"""The forwarding lead: packets per second against the native router, CPU per packet."""

from __future__ import annotations

from vnet.bench.contract import Goal
from vnet.bench.dataplane.summary import format_ratio, max_rate_table, summary_of
from vnet.bench.forwarding.profile import GROUP_NAMES
from vnet.bench.results import BenchResult
from vnet.bench.stats import Summary, ratio


def pps_metric(size: int) -> str:
    return f"pps at {size} B"


def size_metric(cores: int) -> str:
    return f"pps by frame size, {cores} sender core" + ("s" if cores > 1 else "")


def cost_metric(kind: str, size: int) -> str:
    return f"{kind} per packet at {size} B"


PROFILE_METRIC = "cpu per packet by function group"


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
    ("native", "vr1", "a vnet VR instead of a native router (bridge shortcuts: no bridge)"),
    ("native", "vr1-bridged", "a vnet VR through its two bridges: two more veth pairs"),
    ("vr1-bridged", "vr1", "bridge shortcuts instead of the bridges"),
    ("vr1", "vr2", "one more VR hop"),
    ("vr2", "vr4", "two more VR hops"),
    ("native4", "vr4", "four vnet VRs instead of four native routers"),
    ("vr4-bridged", "vr4", "bridge shortcuts on a chain of four VRs"),
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
    goals = ["", "## Goals", ""] + [
        f"- **{g.verdict}**: {g.goal}: {g.detail}" for g in check_goals(result)
    ]
    return "\n".join(lines + profile_table(result) + max_rate_table(result) + goals)


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


# Issue 14's goals: (kind, compared with, at least this ratio of its packet rate)
GOALS = (("vr1", "native", 0.95), ("vr4", "native4", 0.8))


def check_goals(result: BenchResult) -> list[Goal]:
    """At the first frame size with the fewest sender cores: VR pps against native."""
    pps = [m for m in result.metric_names() if m.startswith("pps at ")]
    out = []
    for kind, base, least in GOALS:
        goal = f"{kind} forwards >= {least:g}x the packets/s of {base}"
        if not pps:
            out.append(Goal(goal, None, "no packet rates"))
            continue
        cores = min(
            (m.x for m in result.measurements_of(pps[0]) if isinstance(m.x, int | float)),
            default=1,
        )
        s, b = summary_of(result, pps[0], kind, cores), summary_of(result, pps[0], base, cores)
        if s is None or b is None or not b.mean:
            out.append(Goal(goal, None, f"{kind} or {base} not measured"))
            continue
        r = ratio(s, b)
        where = f"{pps[0]}, {cores:g} core(s)"
        out.append(Goal(goal, r.value >= least, f"{format_ratio(r)} ({where}, one run)"))
    return out
