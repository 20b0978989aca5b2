"""Figures in the shape of the paper's Fig. 3 and 4, and the latency table."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from vnet.bench.contract import Goal
from vnet.bench.sdn.boxes import COLORS, cpu_points, draw_boxes, first_report
from vnet.bench.sdn.figures_hv import hypervisor_figures
from vnet.bench.sdn.perfbench import Setup
from vnet.bench.sdn.plan import PACKET_OUT_TOTAL
from vnet.bench.sdn.record import cpu_percent

# -- figures in the shape of the paper's Fig. 3 and 4 ------------------------------------


def plot_figures(runs: list[tuple[Setup, dict[str, Any]]], directory: Path) -> list[Path]:
    """fig3.png (single tenant: PACKET_IN, port stats) and fig4.png (PACKET_OUT vs tenants, CPU).

    Boxes: p25..p75 with the median, whiskers p1 and p99, triangle = mean (first repeat).
    """
    return [_fig3(runs, directory), _fig4(runs, directory), *hypervisor_figures(runs, directory)]


_SERIES = list(COLORS)


def _fig3(runs: list[tuple[Setup, dict[str, Any]]], directory: Path) -> Path:
    """Single tenant: (a) all series at the top PACKET_IN rate, (b) PACKET_IN, (c) port stats."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(13, 4.2))
    FigureCanvasAgg(fig)
    a, b, c = fig.subplots(1, 3)
    series = _SERIES
    top_in = max((s.rate for s, _ in runs if s.experiment == "packet-in"), default=40_000)
    grp_a = [
        (
            f"{top_in // 1000}k",
            [
                (se, r)
                for se in series
                if (r := first_report(runs, experiment="packet-in", rate=top_in, series=se))
            ],
        )
    ]
    draw_boxes(a, grp_a, f"(a) switch only, proxy, hypervisor: PACKET_IN {top_in // 1000}k/s", "")
    rates_in = sorted({s.rate for s, _ in runs if s.experiment == "packet-in"})
    grp_b = [
        (
            f"{r // 1000}k",
            [
                (se, rep)
                for se in ("ovs-AGG", "proxy-AGG", "hv-AGG")
                if (rep := first_report(runs, experiment="packet-in", rate=r, series=se))
            ],
        )
        for r in rates_in
    ]
    draw_boxes(b, grp_b, "(b) single tenant, PACKET_IN", "PACKET_IN rate (msgs/s)")
    rates_ps = sorted({s.rate for s, _ in runs if s.experiment == "port-stats"})
    grp_c = [
        (
            f"{r // 1000}k",
            [
                (se, rep)
                for se in ("ovs-AGG", "proxy-AGG", "hv-AGG")
                if (rep := first_report(runs, experiment="port-stats", rate=r, series=se))
            ],
        )
        for r in rates_ps
    ]
    draw_boxes(c, grp_c, "(c) single tenant, port statistics", "request rate (msgs/s)")
    fig.tight_layout()
    p = directory / "fig3.png"
    fig.savefig(p, dpi=120)
    return p


def _fig4(runs: list[tuple[Setup, dict[str, Any]]], directory: Path) -> Path:
    """Several tenants: PACKET_OUT latency boxes, and the CPU of OVS and the proxy."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    series = _SERIES
    fig = Figure(figsize=(12, 4.2))
    FigureCanvasAgg(fig)
    a, b = fig.subplots(1, 2, gridspec_kw={"width_ratios": [2, 1]})
    ns = sorted({s.tenants for s, _ in runs if s.experiment == "packet-out"})
    grp = [
        (
            str(n),
            [
                (se, rep)
                for se in series
                if (rep := first_report(runs, experiment="packet-out", tenants=n, series=se))
            ],
        )
        for n in ns
    ]
    draw_boxes(
        a, grp, f"multiple tenants, PACKET_OUT, {PACKET_OUT_TOTAL // 1000}k/s in total", "tenants"
    )
    for se in series:
        for who, key, style in (("OVS", "ovs-vswitchd", "o-"), ("proxy", "proxy", "s--")):
            pts = cpu_points(runs, ns, se, key)
            if pts:
                xs, ys = zip(*pts, strict=True)
                b.plot(xs, ys, style, color=COLORS[se], label=f"{who}, {se}")
    b.set_xlabel("tenants")
    b.set_ylabel("CPU (% of one core)")
    b.set_title("CPU over the measured window", fontsize=9)
    b.grid(True, alpha=0.3)
    b.legend(fontsize=7)
    fig.tight_layout()
    p = directory / "fig4.png"
    fig.savefig(p, dpi=120)
    return p


def latency_table(runs: list[tuple[Setup, dict[str, Any]]]) -> str:
    rows = [
        "| experiment | series | tenants | target msgs/s | achieved msgs/s | sent | lost | "
        "p50 µs | p90 µs | p99 µs | max µs | OVS CPU % | proxy/hv CPU % | kept up? | load avg |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for s, rep in runs:
        t, lat = rep["totals"], rep["totals"]["latency"]
        pids = rep.get("_pids", {})
        ovs = cpu_percent(rep, pids.get("ovs-vswitchd"))
        mid = cpu_percent(rep, pids.get("proxy") or pids.get("hypervisor"))
        over = rep.get("_overloaded") or []
        kept = f"**OVERLOADED**: {'; '.join(over)}" if over else "yes"
        rows.append(
            f"| {s.experiment} | {s.series} | {s.tenants} | {t['target_rate']:.0f} | "
            f"{t['achieved_rate']:.0f} | {t['sent']} | {t['lost']} | {lat['p50_us']:.1f} | "
            f"{lat['p90_us']:.1f} | {lat['p99_us']:.1f} | {lat['max_us']:.1f} | "
            f"{'' if ovs is None else f'{ovs:.0f}'} | {'' if mid is None else f'{mid:.0f}'} | "
            f"{kept} | {rep.get('_loadavg', '')} |"
        )
    return "\n".join(rows) + "\n"


def goals_table(goals: Sequence[Goal]) -> str:
    rows = ["| goal | verdict | measured |", "|---|---|---|"]
    rows += [f"| {g.goal} | {g.verdict} | {g.detail} |" for g in goals]
    return "\n".join(rows) + "\n"


def write_extras(
    runs: list[tuple[Setup, dict[str, Any]]], directory: Path, goals: Sequence[Goal] = ()
) -> None:
    """Figures, the raw perfbench reports, the latency table and the goals, next to the report."""
    markdown = directory / "report.md"
    figures = plot_figures(runs, directory) if runs else []
    (directory / "sdn-runs.json").write_text(
        json.dumps(
            [{"setup": s.__dict__, "series": s.series, "perfbench": rep} for s, rep in runs],
            indent=1,
        )
    )
    table = latency_table(runs)
    (directory / "sdn-latency.md").write_text(table, encoding="utf-8")
    with markdown.open("a", encoding="utf-8") as md:
        if goals:
            md.write("\n## Goals (issue 15)\n\n" + goals_table(goals))
        md.write("\n## perfbench runs (first repeat of each setup)\n\n" + table + "\n")
        for fig in figures:
            md.write(f"![{fig.stem}]({fig.name})\n\n")
        md.write(
            "Boxes: p25-p75 with the median, whiskers p1 and p99, triangle = mean. "
            "Series: ovs = switch only, proxy = through perfbench's pass-through proxy, "
            "hv = through the slicing hypervisor; AGG = TCP_NODELAY off, ND = on. "
            "OVERLOADED: the run fell behind its offered load (messages unanswered, "
            "rate not reached, a standing queue or latency growing from the first to the "
            "last third of the window): its latency is not a steady one.\n"
        )
