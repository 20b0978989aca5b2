"""Figures in the shape of paper 001's Figs. 2-4: one per operation, time per request split.

Each figure has one group of bars per number of simultaneous requests and in it one
stacked bar per database: the mean milliseconds of api, db, path, devices and the client's
rest (other) per request, so the bar's height is the mean end-to-end time.
"""

from __future__ import annotations

from pathlib import Path

from vnet.bench.controller import record
from vnet.bench.controller.plan import OPERATIONS
from vnet.bench.controller.timing import SPLIT
from vnet.bench.results import BenchResult
from vnet.bench.stats import summarize

COLORS = {"api": "C0", "db": "C3", "path": "C2", "devices": "C1", "other": "0.75"}
HATCHES = ("", "//", "..", "xx")  # one per database, so the series tell apart in grey too


def mean_split(result: BenchResult, op: str, database: str, x: int) -> dict[str, float] | None:
    """Mean milliseconds of each part of `op` at `x`; None when not measured."""
    found = {}
    for part in SPLIT:
        m = result.get(record.split_metric(op), f"{database} {part}", x)
        if m is None or not m.samples:
            return None
        found[part] = summarize(m.samples).mean
    return found


def draw(result: BenchResult, op: str, target: Path) -> Path | None:
    databases = list(result.parameters.get("databases") or [])
    xs = list(result.parameters.get("concurrency") or [])
    bars = {(d, x): mean_split(result, op, d, x) for d in databases for x in xs}
    if not any(bars.values()):
        return None
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # only when drawing (0.6 s)
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, 4.0), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    width = 0.8 / max(len(databases), 1)
    for i, database in enumerate(databases):
        for group, x in enumerate(xs):
            parts = bars[(database, x)]
            if parts is None:
                continue
            position, bottom = group - 0.4 + width * (i + 0.5), 0.0
            for part in SPLIT:
                ax.bar(
                    position, parts[part], width, bottom=bottom, color=COLORS[part],
                    hatch=HATCHES[i % len(HATCHES)], edgecolor="black", linewidth=0.4,
                    label=part if i == 0 and group == 0 else None,
                )  # fmt: skip
                bottom += parts[part]
            ax.text(position, bottom, database, ha="center", va="bottom", fontsize=7)
    ax.set_xticks(range(len(xs)), [str(x) for x in xs])
    ax.set_xlabel(record.X_LABEL)
    ax.set_ylabel("mean time per request (ms)")
    ax.set_title(f"{op}: time per request by part (paper 001 Figs. 2-4)")
    ax.legend(fontsize=8)
    ax.grid(True, axis="y", alpha=0.3)
    fig.savefig(target, dpi=150, format="png")
    return target


def write_figures(result: BenchResult, directory: Path) -> list[Path]:
    """`split-<op>.png` for every operation measured."""
    made = [draw(result, op, directory / f"split-{op}.png") for op in OPERATIONS]
    return [p for p in made if p is not None]
