"""The hypervisor's figures: CPU (the paper's Fig. 5), per-tenant latency with Jain's index
(Fig. 6), the noisy tenant, PACKET_OUT at rising rates and FLOW_MOD+BARRIER.

Every figure is drawn from the first repeat's perfbench reports; a run that fell
behind its load is drawn hatched or crossed and labelled OVERLOADED.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from vnet.bench.sdn.analysis import jain_index
from vnet.bench.sdn.boxes import (
    COLORS,
    Runs,
    box_stats,
    cpu_points,
    draw_boxes,
    first_report,
)
from vnet.bench.sdn.plan import PACKET_OUT_TOTAL
from vnet.bench.sdn.record import cpu_percent, tenant_means


def _figure(width: float, panels: int) -> tuple[Any, list[Any]]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, 4.2))
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, panels, squeeze=False)[0]
    return fig, list(axes)


def _save(fig: Any, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return path


def _over(rep: dict[str, Any]) -> str:
    return " OVERLOADED" if rep.get("_overloaded") else ""


# -- Fig. 5: the hypervisor's CPU ---------------------------------------------------------


def _per_10k(rep: dict[str, Any]) -> float | None:
    cpu = cpu_percent(rep, rep.get("_pids", {}).get("hypervisor"))
    achieved = rep["totals"]["achieved_rate"]
    return None if cpu is None or achieved <= 0 else cpu / (achieved / 10_000)


def fig5(runs: Runs, directory: Path) -> Path:
    """(a) hypervisor CPU against tenants at 60k PACKET_OUT/s, (b) CPU per 10k msgs/s."""
    fig, (a, b) = _figure(11, 2)
    ns = sorted({s.tenants for s, _ in runs if s.experiment == "packet-out"})
    for se in ("hv-AGG", "hv-ND"):
        pts = cpu_points(runs, ns, se, "hypervisor")
        if pts:
            xs, ys = zip(*pts, strict=True)
            a.plot(xs, ys, "o-", color=COLORS[se], label=se)
        per = [
            (s.tenants, v)
            for s, r in runs
            if s.experiment == "packet-out" and s.series == se
            if (v := _per_10k(r)) is not None
        ]
        if per:
            xs, ys = zip(*sorted(per), strict=True)
            b.plot(xs, ys, "o-", color=COLORS[se], label=f"{se}, {PACKET_OUT_TOTAL // 1000}k/s")
    a.set_title(f"hypervisor CPU, PACKET_OUT {PACKET_OUT_TOTAL // 1000}k/s in total", fontsize=9)
    a.set_ylabel("CPU (% of one core)")
    b.set_title("hypervisor CPU per 10k messages/s", fontsize=9)
    b.set_ylabel("% of one core per 10k msgs/s")
    for ax in (a, b):
        ax.set_ylim(bottom=0)
        ax.set_xlabel("tenants")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    return _save(fig, directory / "fig5.png")


# -- Fig. 6: per-tenant latency and Jain's index ---------------------------------------------


def _fig6_panels(runs: Runs) -> list[tuple[str, dict[str, Any]]]:
    """(title, report) of the most-tenant PACKET_OUT runs through the hypervisor and alone."""
    n = max((s.tenants for s, _ in runs if s.experiment == "packet-out"), default=0)
    out = []
    for se in ("ovs-ND", "hv-AGG", "hv-ND"):
        rep = first_report(runs, experiment="packet-out", tenants=n, series=se)
        if rep is not None:
            out.append((f"{se}, {n} tenants, {PACKET_OUT_TOTAL // 1000}k/s", rep))
    ladder = [(s, r) for s, r in runs if s.experiment == "packet-out-rate" and s.series == "hv-ND"]
    kept = [(s, r) for s, r in ladder if not r.get("_overloaded")]
    if kept:
        s, r = max(kept, key=lambda p: p[0].rate)
        out.append((f"hv-ND, {s.tenants} tenants, {s.rate // 1000}k/s", r))
    return out


def fig6(runs: Runs, directory: Path) -> Path:
    """One box per tenant (p1, p25, p50, p75, p99, mean), Jain's index of the means in the title."""
    panels = _fig6_panels(runs)
    fig, axes = _figure(5 * max(1, len(panels)), max(1, len(panels)))
    for ax, (title, rep) in zip(axes, panels, strict=False):
        stats = [
            {
                **box_stats({"totals": {"latency": t["latency"]}}, str(t["tenant"])),
                "label": str(t["tenant"]),
            }
            for t in rep["tenants"]
            if t["latency"]["count"] > 0
        ]
        if stats:
            ax.bxp(stats, showmeans=True, widths=0.6)
        means = tenant_means(rep)
        jain = f"Jain {jain_index(means):.4f}" if means else "no answers"
        ax.set_title(f"{title}: {jain}{_over(rep)}", fontsize=8)
        ax.set_yscale("log")
        ax.set_xlabel("tenant")
        ax.set_ylabel("control latency (ms)")
        ax.tick_params(axis="x", labelsize=6)
        ax.grid(True, axis="y", which="both", alpha=0.3)
    return _save(fig, directory / "fig6.png")


# -- the noisy tenant ------------------------------------------------------------------------


def noisy_figure(runs: Runs, directory: Path) -> Path:
    """Each other tenant's p99 without and with the noisy tenant (tenant 0 left out)."""
    fig, (ax,) = _figure(9, 1)
    reps = [(s, r) for s, r in runs if s.experiment == "noisy"]
    width = 0.4
    for k, (s, rep) in enumerate(reps):
        loud = bool(s.rates) and s.rates[0] > s.rates[-1]
        others = [t for t in rep["tenants"] if t["tenant"] != 0 and t["latency"]["count"] > 0]
        xs = [t["tenant"] + (k - 0.5) * width for t in others]
        ys = [t["latency"]["p99_us"] for t in others]
        label = f"{'with' if loud else 'without'} the noisy tenant ({s.rates[0]}/s){_over(rep)}"
        ax.bar(xs, ys, width, color="#d62728" if loud else "#2ca02c", label=label)
    limit = reps[0][0].rate_limit if reps else 0
    ax.set_title(
        f"other tenants' p99 through the hypervisor, every slice limited to {limit}/s",
        fontsize=9,
    )
    ax.set_xticks(sorted({t["tenant"] for _, r in reps for t in r["tenants"]} - {0}))
    ax.set_xlabel("tenant (tenant 0 is the noisy one)")
    ax.set_ylabel("p99 PACKET_OUT latency (µs)")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=7)
    return _save(fig, directory / "noisy.png")


# -- PACKET_OUT at rising rates, FLOW_MOD+BARRIER ------------------------------------------------


def _rate_points(runs: Runs, series: str) -> list[tuple[int, dict[str, Any]]]:
    """(total rate, report) of the rate steps, with Table 1's PACKET_OUT run at as many tenants."""
    n = next((s.tenants for s, _ in runs if s.experiment == "packet-out-rate"), 0)
    return sorted(
        (
            (s.rate, r)
            for s, r in runs
            if s.series == series and s.tenants == n
            if s.experiment in ("packet-out-rate", "packet-out")
        ),
        key=lambda p: p[0],
    )


def _rate_panel(ax: Any, runs: Runs) -> None:
    for se, color in (("ovs-ND", COLORS["ovs-AGG"]), ("hv-ND", COLORS["hv-AGG"])):
        pts = _rate_points(runs, se)
        for stat, style in (("p50_us", "o-"), ("p99_us", "^--")):
            xs = [rate for rate, _ in pts]
            ys = [r["totals"]["latency"][stat] / 1000 for _, r in pts]
            ax.plot(xs, ys, style, color=color, label=f"{se} {stat[:3]}")
        bad = [
            (rate, r["totals"]["latency"]["p50_us"] / 1000) for rate, r in pts if r["_overloaded"]
        ]
        if bad:
            ax.plot(*zip(*bad, strict=True), "kx", markersize=12, label=f"{se} OVERLOADED")
    ax.set_yscale("log")
    ax.set_xlabel("PACKET_OUT/s in total")
    ax.set_ylabel("control latency (ms)")
    n = next((s.tenants for s, _ in runs if s.experiment == "packet-out-rate"), 0)
    ax.set_title(f"PACKET_OUT over {n} tenants (TCP_NODELAY on)", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)


def rate_and_flow_mod(runs: Runs, directory: Path) -> Path:
    """(a) p50/p99 against the total rate, (b) FLOW_MOD+BARRIER: switch alone vs hypervisor."""
    fig, (a, b) = _figure(11, 2)
    _rate_panel(a, runs)
    rates = sorted({s.rate for s, _ in runs if s.experiment == "flow-mod"})
    grp = [
        (
            f"{r // 1000}k/s" if r >= 1000 else f"{r}/s",
            [
                (se, rep)
                for se in ("ovs-ND", "hv-ND")
                if (rep := first_report(runs, experiment="flow-mod", rate=r, series=se))
            ],
        )
        for r in rates
    ]
    draw_boxes(b, grp, "FLOW_MOD + BARRIER, one tenant", "rate")
    return _save(fig, directory / "rate-flowmod.png")


def hypervisor_figures(runs: Runs, directory: Path) -> list[Path]:
    return [
        fig5(runs, directory),
        fig6(runs, directory),
        noisy_figure(runs, directory),
        rate_and_flow_mod(runs, directory),
    ]
