"""What the SDN bench's figures share: a perfbench report's latency as a box, the series'
colours, side-by-side boxes, and the first repeat's report or CPU share of a setup."""

from __future__ import annotations

from typing import Any

from vnet.bench.sdn.perfbench import Setup
from vnet.bench.sdn.record import cpu_percent

Runs = list[tuple[Setup, dict[str, Any]]]


def box_stats(report: dict[str, Any], label: str) -> dict[str, Any]:
    lat = report["totals"]["latency"]
    ms = 1e-3
    return {
        "label": label,
        "whislo": lat["p1_us"] * ms,
        "q1": lat["p25_us"] * ms,
        "med": lat["p50_us"] * ms,
        "q3": lat["p75_us"] * ms,
        "whishi": lat["p99_us"] * ms,
        "mean": lat["mean_us"] * ms,
        "fliers": [],
    }


COLORS = {
    "ovs-AGG": "#1f77b4",
    "ovs-ND": "#aec7e8",
    "proxy-AGG": "#d62728",
    "proxy-ND": "#ff9896",
    "hv-AGG": "#2ca02c",
    "hv-ND": "#98df8a",
}


def draw_boxes(
    ax: Any, groups: list[tuple[str, list[tuple[str, dict[str, Any]]]]], title: str, xlabel: str
) -> None:
    """Side-by-side boxes: one group per x value, one box per series."""
    from matplotlib.patches import Patch

    stats, pos, colors, ticks = [], [], [], []
    x = 0.0
    series_seen: list[str] = []
    for name, boxes in groups:
        start = x
        for series, rep in boxes:
            if rep["totals"]["latency"]["count"] == 0:
                x += 1
                continue
            stats.append(box_stats(rep, series))
            pos.append(x)
            colors.append(COLORS.get(series, "#777777"))
            if series not in series_seen:
                series_seen.append(series)
            x += 1
        ticks.append(((start + x - 1) / 2, name))
        x += 0.8
    if stats:
        art = ax.bxp(
            stats, positions=pos, widths=0.7, showmeans=True, patch_artist=True, manage_ticks=False
        )
        for patch, c in zip(art["boxes"], colors, strict=True):
            patch.set_facecolor(c)
    ax.set_xticks([t for t, _ in ticks], [n for _, n in ticks])
    ax.set_yscale("log")
    ax.set_ylabel("control latency (ms)")
    ax.set_xlabel(xlabel)
    ax.set_title(title, fontsize=9)
    ax.grid(True, axis="y", which="both", alpha=0.3)
    ax.legend(
        handles=[Patch(color=COLORS.get(s, "#777"), label=s) for s in series_seen], fontsize=7
    )


def first_report(runs: list[tuple[Setup, dict[str, Any]]], **want: Any) -> dict[str, Any] | None:
    for s, rep in runs:
        if all(getattr(s, k) == v for k, v in want.items()):
            return rep
    return None


def cpu_points(
    runs: list[tuple[Setup, dict[str, Any]]], ns: list[int], series: str, key: str
) -> list[tuple[int, float]]:
    """(tenants, CPU % of a core of process `key`) of the Table 1 PACKET_OUT runs of a series."""
    return [
        (n, cpu)
        for n in ns
        if (rep := first_report(runs, experiment="packet-out", tenants=n, series=series))
        and (cpu := cpu_percent(rep, rep.get("_pids", {}).get(key))) is not None
    ]
