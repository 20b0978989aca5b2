"""The data-plane lead: each kind as a ratio to the baseline, the overhead per step, goals."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from vnet.bench.contract import Goal
from vnet.bench.dataplane import BASELINE, maxrate
from vnet.bench.report import format_number
from vnet.bench.results import BenchResult
from vnet.bench.stats import Ratio, Summary, ratio

# A load the baseline "sustains": its mean loss stays at or below this.
SUSTAINED_LOSS_PERCENT = 0.1
GOAL_THROUGHPUT_RATIO = 0.95
GOAL_RTT_RATIO = 1.5


# -- the lead: ratios to the baseline and the goals ---------------------------------


def summary_of(result: BenchResult, metric: str, kind: str, x: Any = None) -> Summary | None:
    m = result.get(metric, kind, x)
    return m.summary() if m is not None and m.samples else None


def _ratio(result: BenchResult, metric: str, kind: str, x: Any = None) -> Ratio | None:
    value, base = summary_of(result, metric, kind, x), summary_of(result, metric, BASELINE, x)
    if value is None or base is None or base.mean == 0:
        return None
    return ratio(value, base)


def format_ratio(r: Ratio | None) -> str:
    if r is None:
        return "–"
    return f"{r.value:.3f}" if r.ci95 is None else f"{r.value:.3f} ± {r.ci95:.3f}"


def _loads(result: BenchResult) -> list[float]:
    return sorted(
        {m.x for m in result.measurements_of("udp throughput") if isinstance(m.x, int | float)}
    )


def sustained_loads(result: BenchResult) -> list[float]:
    """Offered loads at which the baseline's mean loss stays <= SUSTAINED_LOSS_PERCENT."""
    out = []
    for load in _loads(result):
        loss = summary_of(result, "udp loss", BASELINE, load)
        if loss is not None and loss.mean <= SUSTAINED_LOSS_PERCENT:
            out.append(load)
    return out


def _worst(
    result: BenchResult, metric: str, kind: str, xs: Sequence[Any], low_is_bad: bool
) -> tuple[Any, Ratio] | None:
    found = [(x, r) for x in xs if (r := _ratio(result, metric, kind, x)) is not None]
    if not found:
        return None
    pick = min if low_is_bad else max
    return pick(found, key=lambda item: item[1].value)


def _kinds(result: BenchResult) -> list[str]:
    return [k for k in result.series_names() if k != BASELINE]


def check_goals(result: BenchResult) -> list[Goal]:
    """The issue's goals, judged from the samples alone."""
    checks = []
    measured = result.series_names()
    wanted = list(result.parameters.get("kinds") or measured)
    missing = [k for k in wanted if k not in measured]
    checks.append(
        Goal(
            "every path kind against the baseline",
            BASELINE in measured and not missing,
            f"measured: {', '.join(measured) or 'none'}"
            + (f"; not measured: {', '.join(missing)} (see notes)" if missing else ""),
        )
    )
    sustained = sustained_loads(result)
    tput = _worst(result, "udp throughput", "bridge", sustained, low_is_bad=True)
    if tput is None:
        checks.append(
            Goal(
                f"bridge keeps >= {GOAL_THROUGHPUT_RATIO:.0%} of the baseline's UDP throughput",
                None,
                "no load the baseline sustains without loss, or no bridge samples",
            )
        )
    else:
        load, r = tput
        met = r.value >= GOAL_THROUGHPUT_RATIO
        gap = "" if met else f", {GOAL_THROUGHPUT_RATIO - r.value:.1%} short"
        checks.append(
            Goal(
                f"bridge keeps >= {GOAL_THROUGHPUT_RATIO:.0%} of the baseline's UDP throughput",
                met,
                f"worst ratio {format_ratio(r)} at {load:g} Mbit/s{gap}; loads the baseline "
                f"sustains (mean loss <= {SUSTAINED_LOSS_PERCENT:g} %): "
                + ", ".join(f"{x:g}" for x in sustained),
            )
        )
    xs = [0, *sustained]
    rtt = _worst(result, "rtt p50", "bridge", xs, low_is_bad=False)
    if rtt is None:
        checks.append(
            Goal(f"bridge p50 RTT within {GOAL_RTT_RATIO}x the baseline's", None, "no data")
        )
    else:
        load, r = rtt
        met = r.value <= GOAL_RTT_RATIO
        where = "idle" if load == 0 else f"at {load:g} Mbit/s"
        over = "" if met else f", {r.value - GOAL_RTT_RATIO:.2f}x over"
        checks.append(
            Goal(
                f"bridge p50 RTT within {GOAL_RTT_RATIO}x the baseline's",
                met,
                f"worst ratio {format_ratio(r)} {where}{over} (idle and every sustained load)",
            )
        )
    checks.append(rtt_per_hop_goal(result))
    return checks


GOAL_RTT_PER_HOP_US = 1.5


def rtt_per_hop_goal(result: BenchResult) -> Goal:
    """Idle p50 RTT added per VR hop over the physical baseline, on the longest chain."""
    goal = f"RTT per VR hop <= +{GOAL_RTT_PER_HOP_US:g} µs over the physical baseline"
    chains = [(int(k[2:]), k) for k in result.series_names("rtt p50") if k[2:].isdigit()]
    base = summary_of(result, "rtt p50", BASELINE, 0)
    if not chains or base is None:
        return Goal(goal, None, "no vrN kind or no baseline RTT")
    hops, kind = max(chains)
    s = summary_of(result, "rtt p50", kind, 0)
    if s is None:
        return Goal(goal, None, f"no idle RTT of {kind}")
    per_hop = (s.mean - base.mean) / hops
    return Goal(
        goal,
        per_hop <= GOAL_RTT_PER_HOP_US,
        f"{kind}: {s.mean:.1f} µs, physical {base.mean:.1f} µs idle p50: {per_hop:+.2f} µs per "
        "hop (fping counts whole µs)",
    )


# Each step adds one thing to the path before it; their differences locate the overhead.
OVERHEAD_STEPS = (
    ("physical", "bridge", "a bridge and a second veth pair"),
    ("bridge", "vxlan", "VXLAN encapsulation (tenant MTU 1450), the underlay veth, a 2nd bridge"),
    ("bridge", "vr1", "one VR hop: a router namespace, two veth pairs, a second network"),
    ("vr1-bridged", "vr1", "bridge shortcuts instead of the bridges"),
    ("vr4", "srv6", "an SRv6 connection over three of the hops instead of plain routing"),
    ("vr1", "vr2", "one more VR hop"),
    ("vr2", "vr4", "two more VR hops"),
)


def overhead_rows(result: BenchResult) -> list[list[str]]:
    """Per step: added idle p50 RTT (µs) and the throughput kept (UDP unlimited, TCP)."""
    rows = []
    for before, after, what in OVERHEAD_STEPS:
        a, b = summary_of(result, "rtt p50", before, 0), summary_of(result, "rtt p50", after, 0)
        if a is None or b is None:
            continue
        cells = [f"{before} → {after}", what, f"{b.mean - a.mean:+.1f}"]
        for metric in ("udp max throughput", "tcp throughput"):
            x, y = summary_of(result, metric, before), summary_of(result, metric, after)
            cells.append(
                "–" if x is None or y is None or x.mean == 0 else format_ratio(ratio(y, x))
            )
        rows.append(cells)
    return rows


def baseline_row(result: BenchResult) -> str:
    """The baseline's own means, so that the ratios below have a scale."""

    def mean(metric: str, x: Any = None, unit: str = "") -> str:
        s = summary_of(result, metric, BASELINE, x)
        return "–" if s is None else f"{format_number(s.mean)} {unit}".strip()

    cells = [
        f"{BASELINE} (absolute)",
        "offered load",
        mean("udp max throughput", unit="Mbit/s"),
        mean("tcp throughput", unit="Mbit/s"),
        mean("rtt p50", 0, "µs"),
        mean("rtt p99", 0, "µs"),
        "–",
        "–",
        mean("tcp rtt p50", unit="µs"),
    ]
    return "| " + " | ".join(cells) + " |"


def lead_summary(result: BenchResult) -> str:
    """Markdown that leads the report: every kind as a ratio to the baseline, then goals."""
    sustained = sustained_loads(result)
    lines = [
        "## Against the physical baseline (same run)",
        "",
        "Ratio = kind / physical (mean ± 95% CI). Throughput: higher is better; RTT and "
        "jitter: lower is better. fping reports RTTs in whole microseconds, so RTT ratios "
        "of paths a few µs long are coarse. Full tables per metric follow below.",
        "",
    ]
    header = [
        "path kind",
        "UDP throughput, worst over sustained loads",
        "UDP unlimited",
        "TCP",
        "RTT p50 idle",
        "RTT p99 idle",
        "RTT p50 under load, worst",
        "UDP jitter, worst over sustained loads",
        "TCP RTT p50",
    ]
    lines += ["| " + " | ".join(header) + " |", "|---" + "|---:" * (len(header) - 1) + "|"]
    lines.append(baseline_row(result))
    loads = _loads(result)
    for kind in _kinds(result):
        tput = _worst(result, "udp throughput", kind, sustained, low_is_bad=True)
        rtt_load = _worst(result, "rtt p50", kind, loads, low_is_bad=False)
        jitter = _worst(result, "udp jitter", kind, sustained, low_is_bad=False)
        cells = [
            kind,
            "–" if tput is None else f"{format_ratio(tput[1])} @ {tput[0]:g}",
            format_ratio(_ratio(result, "udp max throughput", kind)),
            format_ratio(_ratio(result, "tcp throughput", kind)),
            format_ratio(_ratio(result, "rtt p50", kind, 0)),
            format_ratio(_ratio(result, "rtt p99", kind, 0)),
            "–" if rtt_load is None else f"{format_ratio(rtt_load[1])} @ {rtt_load[0]:g}",
            "–" if jitter is None else f"{format_ratio(jitter[1])} @ {jitter[0]:g}",
            format_ratio(_ratio(result, "tcp rtt p50", kind)),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        f"Sustained loads (baseline mean loss <= {SUSTAINED_LOSS_PERCENT:g} %): "
        + (", ".join(f"{x:g}" for x in sustained) + " Mbit/s." if sustained else "none."),
        "",
        "## Where the overhead comes from",
        "",
        "| step | what it adds | Δ RTT p50 idle (µs) | UDP unlimited kept | TCP kept |",
        "|---|---|---:|---:|---:|",
    ]
    lines += ["| " + " | ".join(row) + " |" for row in overhead_rows(result)]
    lines += max_rate_table(result)
    lines += ["", "## Goals", ""]
    for check in check_goals(result):
        lines.append(f"- **{check.verdict}**: {check.goal}: {check.detail}")
    return "\n".join(lines)


def max_rate_table(result: BenchResult) -> list[str]:
    """Paper 001's Table 1 layout: loss-bounded rate and RTT per size and direction."""
    modes = [m for m in maxrate.MODES if maxrate.metric(m) in result.metrics]
    if not modes:
        return []
    sizes = sorted(
        {m.x for mode in modes for m in result.measurements_of(maxrate.metric(mode))}, reverse=True
    )
    base = result.baseline
    lines = [
        "",
        f"## Loss-bounded maximum rate (<= {maxrate.LOSS_BOUND:g}% loss; Mbit/s of IP packets, "
        "per direction; RTT min / p50 / max in µs next to it)",
        "",
        "| path kind | size (B) | direction | Mbit/s | ratio to " + (base or "–") + " | RTT |",
        "|---|---:|---|---:|---:|---|",
    ]
    for kind in result.series_names(maxrate.metric(modes[0])):
        for size in sizes:
            for mode in modes:
                s = summary_of(result, maxrate.metric(mode), kind, size)
                b = summary_of(result, maxrate.metric(mode), base, size) if base else None
                rtt = [
                    summary_of(result, maxrate.rtt_metric(x, mode), kind, size)
                    for x in ("min", "p50", "max")
                ]
                rtt_text = " / ".join("–" if r is None else f"{r.mean:.0f}" for r in rtt)
                kept = format_ratio(ratio(s, b)) if s and b and b.mean else "–"
                rate = "–" if s is None else format_number(s.mean)
                lines.append(f"| {kind} | {size} | {mode} | {rate} | {kept} | {rtt_text} |")
    return lines
