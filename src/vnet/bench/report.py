"""Turn a BenchResult into a report directory: results.json, report.md and one PNG per metric.

Layout of ``./out/bench/<name>-<timestamp>/`` (see docs/benchmarks.md)::

    results.json      raw samples, parameters, environment (BenchResult.to_json)
    report.md         tables of mean ± 95% CI (and ratio to the baseline series)
    <metric>.png      line plot against a numeric x, else a grouped bar chart

Everything here is derived from the raw samples, so ``vnet bench report FILE.json``
(vnet.cli.bench_report) regenerates the same report later.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from rich.console import Console
from rich.table import Table

from .progress import BenchOptions
from .results import BenchResult, Measurement, X
from .stats import Summary, ratio

DEFAULT_ROOT = Path("out/bench")
JSON_NAME = "results.json"
MARKDOWN_NAME = "report.md"
FIGURE_SIZE = (6.4, 4.0)  # inches; at FIGURE_DPI this is 960 x 600 px
FIGURE_DPI = 150
SIGNIFICANT_DIGITS = 4

METHOD_NOTES = (
    "Mean ± half-width of the two-sided 95% confidence interval of the mean, "
    "Student t with n − 1 degrees of freedom; stdev is the sample standard deviation "
    "(n − 1).",
    "Percentiles interpolate linearly between order statistics (Hyndman & Fan type 7, "
    "numpy's default); with fewer than 100 runs p99 lies between the two largest samples.",
    "Rows with n = 1 have no standard deviation and no confidence interval "
    '(shown as "n = 1, no CI" / n/a): at least 2 runs are needed.',
    "Ratios divide by the baseline mean at the same x; their CI is a first-order "
    "(delta-method) approximation assuming independent runs, adequate when both "
    "relative CIs are small.",
)


@dataclass
class ReportPaths:
    """Where write_report put things."""

    directory: Path
    markdown: Path
    json: Path | None
    plots: dict[str, Path] = field(default_factory=dict)  # metric name -> PNG


# -- number formatting -----------------------------------------------------------


def _decimals(magnitude: float, digits: int = SIGNIFICANT_DIGITS) -> int:
    if magnitude == 0 or not math.isfinite(magnitude):
        return 0
    return max(0, min(9, digits - 1 - math.floor(math.log10(abs(magnitude)))))


def format_number(value: float, digits: int = SIGNIFICANT_DIGITS) -> str:
    """About ``digits`` significant digits, never in exponent form: 5.5 -> "5.500"."""
    return f"{value:.{_decimals(value, digits)}f}"


def format_mean_ci(summary: Summary) -> str:
    """ "5.500 ± 2.166"; both numbers with the decimals the larger of them needs."""
    if summary.ci95 is None:
        return f"{format_number(summary.mean)} (n = 1, no CI)"
    places = _decimals(max(abs(summary.mean), summary.ci95))
    return f"{summary.mean:.{places}f} ± {summary.ci95:.{places}f}"


def _format_optional(value: float | None) -> str:
    return "n/a" if value is None else format_number(value)


# -- output directory ------------------------------------------------------------


def default_out_dir(result: BenchResult, root: Path = DEFAULT_ROOT) -> Path:
    """``<root>/<name>-<start time as 20250102T030405Z>``; same for a regenerated report."""
    try:
        started = datetime.strptime(result.started, "%Y-%m-%dT%H:%M:%SZ")
        stamp = started.strftime("%Y%m%dT%H%M%SZ")
    except ValueError:
        stamp = re.sub(r"[^0-9A-Za-z]", "", result.started) or datetime.now(UTC).strftime(
            "%Y%m%dT%H%M%SZ"
        )
    return root / f"{_slug(result.name)}-{stamp}"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.") or "metric"


# -- grouping --------------------------------------------------------------------


def _is_number(x: X) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def x_values(measurements: list[Measurement]) -> list[X]:
    """Distinct x: numbers ascending when all are numbers, else order of appearance."""
    seen: list[X] = []
    for m in measurements:
        if m.x not in seen:
            seen.append(m.x)
    if all(_is_number(x) for x in seen):
        seen.sort(key=lambda x: float(x))  # type: ignore[arg-type]
    return seen


def plot_kind(result: BenchResult, metric: str) -> Literal["line", "bar"]:
    """Line when every x is a number (and there are several), else grouped bars.

    A metric declared ``plot="bar"`` always gets bars; ``"line"`` needs numeric x.
    """
    xs = x_values(result.measurements_of(metric))
    numeric = all(_is_number(x) for x in xs)
    declared = result.metric_info(metric).plot
    if declared == "bar":
        return "bar"
    if declared == "line":
        return "line" if numeric else "bar"
    return "line" if numeric and len(xs) > 1 else "bar"


def _summaries(result: BenchResult, metric: str) -> dict[tuple[str, X], Summary]:
    """Summary per (series, x) for measurements that have samples."""
    out: dict[tuple[str, X], Summary] = {}
    for m in result.measurements_of(metric):
        if m.samples:
            out[(m.series, m.x)] = m.summary()
    return out


# -- plots -----------------------------------------------------------------------


def _series_colors(result: BenchResult) -> dict[str, str]:
    # One colour per series across all figures of a report, so "vr" is always orange.
    palette = [f"C{i}" for i in range(10)]
    return {name: palette[i % len(palette)] for i, name in enumerate(result.series_names())}


def _y_label(result: BenchResult, metric: str) -> str:
    unit = result.metric_info(metric).unit
    return f"{metric} ({unit})" if unit else metric


def plot_metric(result: BenchResult, metric: str, path: str | os.PathLike[str]) -> Path:
    """Draw one metric (one line or bar colour per series, 95% CI error bars) to a PNG."""
    info = result.metric_info(metric)
    summaries = _summaries(result, metric)
    if not summaries:
        raise ValueError(f"metric {metric!r} has no samples to plot")
    series = [s for s in result.series_names(metric) if any(k[0] == s for k in summaries)]
    colors = _series_colors(result)
    xs = [x for x in x_values(result.measurements_of(metric)) if any(k[1] == x for k in summaries)]

    # matplotlib only when a figure is drawn: it doubles the import of this module (0.6 s),
    # which every benchmark, `vnet bench report` and the tests' collection pay
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import StrMethodFormatter

    fig = Figure(figsize=FIGURE_SIZE, layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    if plot_kind(result, metric) == "line":
        for name in series:
            points = [(x, summaries[(name, x)]) for x in xs if (name, x) in summaries]
            ax.errorbar(
                [float(x) for x, _ in points],  # type: ignore[arg-type]
                [s.mean for _, s in points],
                yerr=[s.ci95 or 0.0 for _, s in points],
                label=name,
                color=colors[name],
                marker="o",
                markersize=4,
                capsize=3,
            )
        ax.set_xlabel(info.x_label or "")
        ax.legend()
    else:
        _draw_bars(ax, series, xs, summaries, colors)
        if xs != [None]:
            ax.set_xlabel(info.x_label or "")
    lows = [s.mean - (s.ci95 or 0.0) for s in summaries.values()]
    if min(lows) >= 0:
        ax.set_ylim(bottom=0)  # non-negative quantities: do not exaggerate differences
    if max(abs(s.mean) for s in summaries.values()) >= 1e4:
        # pps and the like read better as 1,000,000 than as 1.0 with a "1e6" offset.
        ax.yaxis.set_major_formatter(StrMethodFormatter("{x:,.0f}"))
    ax.set_ylabel(_y_label(result, metric))
    ax.set_title(f"{result.name}: {metric}")
    ax.grid(True, axis="y", alpha=0.3)

    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(target, dpi=FIGURE_DPI, format="png")
    return target


def _draw_bars(
    ax: Any,
    series: list[str],
    xs: list[X],
    summaries: Mapping[tuple[str, X], Summary],
    colors: Mapping[str, str],
) -> None:
    if xs == [None]:
        # One value per series (e.g. pps per path kind): one bar each, named on the axis.
        values = [summaries[(name, None)] for name in series]
        ax.bar(
            range(len(series)),
            [s.mean for s in values],
            yerr=[s.ci95 or 0.0 for s in values],
            capsize=4,
            color=[colors[name] for name in series],
        )
        ax.set_xticks(range(len(series)), series)
        return
    width = 0.8 / len(series)
    for i, name in enumerate(series):
        positions, heights, errors = [], [], []
        for group, x in enumerate(xs):
            if (name, x) in summaries:
                s = summaries[(name, x)]
                positions.append(group - 0.4 + width * (i + 0.5))
                heights.append(s.mean)
                errors.append(s.ci95 or 0.0)
        ax.bar(
            positions, heights, width=width, yerr=errors, capsize=3, label=name, color=colors[name]
        )
    ax.set_xticks(range(len(xs)), ["—" if x is None else str(x) for x in xs])
    ax.legend()


# -- Markdown --------------------------------------------------------------------


def _cell(value: Any) -> str:
    text = "unknown" if value is None else str(value)
    return text.replace("|", "\\|").replace("\n", " ")


def _table(header: list[str], rows: list[list[str]], align: list[str]) -> list[str]:
    lines = ["| " + " | ".join(_cell(h) for h in header) + " |", "|" + "|".join(align) + "|"]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return lines


def _ratio_cell(
    result: BenchResult, summaries: Mapping[tuple[str, X], Summary], series: str, x: X
) -> str:
    base = summaries.get((result.baseline or "", x))
    if base is None:
        return "–"
    if series == result.baseline:
        return "1 (baseline)"
    try:
        r = ratio(summaries[(series, x)], base)
    except ZeroDivisionError:
        return "n/a (baseline mean 0)"
    if r.ci95 is None:
        return f"{r.value:.3f} (no CI)"
    return f"{r.value:.3f} ± {r.ci95:.3f}"


def metric_table(result: BenchResult, metric: str) -> list[str]:
    """Markdown table lines: one row per (x, series)."""
    info = result.metric_info(metric)
    measurements = result.measurements_of(metric)
    summaries = _summaries(result, metric)
    xs = x_values(measurements)
    has_x = xs != [None]
    with_ratio = result.baseline is not None and any(k[0] == result.baseline for k in summaries)
    unit = f" ({info.unit})" if info.unit else ""

    header = ([info.x_label or "x"] if has_x else []) + [
        "series",
        "n",
        f"mean ± 95% CI{unit}",
        "stdev",
        "min",
        "p50",
        "p90",
        "p99",
        "max",
    ]
    align = (["---:"] if has_x else []) + ["---", "---:"] + ["---:"] * 7
    if with_ratio:
        header.append(f"ratio to {result.baseline}")
        align.append("---:")

    rows: list[list[str]] = []
    for x in xs:
        for name in result.series_names(metric):
            m = result.get(metric, name, x)
            if m is None:
                continue
            row = [str(x)] if has_x else []
            if not m.samples:
                row += [name, "0", "no samples"] + ["–"] * 6
            else:
                s = summaries[(name, x)]
                row += [name, str(s.n), format_mean_ci(s), _format_optional(s.stdev)]
                row += [format_number(v) for v in (s.min, s.p50, s.p90, s.p99, s.max)]
            if with_ratio:
                row.append(_ratio_cell(result, summaries, name, x) if m.samples else "–")
            rows.append(row)
    return _table(header, rows, align)


def _format_env_value(key: str, value: Any) -> str:
    if key == "memory_total_bytes" and isinstance(value, int):
        return f"{value / 2**30:.1f} GiB ({value} bytes)"
    if isinstance(value, dict | list):
        return "`" + json.dumps(value, default=str) + "`"
    return "unknown" if value is None else str(value)


def render_markdown(
    result: BenchResult,
    plots: Mapping[str, str] | None = None,
    *,
    json_name: str | None = JSON_NAME,
) -> str:
    """The report as Markdown; ``plots`` maps metric names to image paths to embed."""
    plots = plots or {}
    lines = [f"# vnet bench {result.name}", ""]
    if result.description:
        lines += [result.description, ""]
    lines.append(
        f"- Started: {result.started or 'unknown'}; finished: {result.finished or 'unknown'}"
    )
    if result.command:
        lines.append("- Command: `" + " ".join(result.command) + "`")
    if result.baseline:
        lines.append(
            f"- Baseline: `{result.baseline}` (ratio = mean / baseline mean at the same x)"
        )
    if json_name:
        lines.append(f"- Raw samples: [{json_name}]({json_name})")
    lines.append("")

    for metric in result.metric_names():
        info = result.metric_info(metric)
        lines += [f"## {_y_label(result, metric)}", ""]
        if info.description:
            lines += [info.description, ""]
        if metric in plots:
            lines += [f"![{metric}]({plots[metric]})", ""]
        lines += [*metric_table(result, metric), ""]

    lines += ["## Parameters", ""]
    if result.parameters:
        rows = [[k, _format_env_value(k, v)] for k, v in result.parameters.items()]
        lines += [*_table(["parameter", "value"], rows, ["---", "---"]), ""]
    else:
        lines += ["none recorded", ""]

    lines += ["## Environment", ""]
    env = dict(result.environment)
    tools = env.pop("tools", None) or {}
    rows = [[k, _format_env_value(k, v)] for k, v in env.items()]
    rows += [[f"tool: {k}", _format_env_value(k, v)] for k, v in tools.items()]
    lines += [*(_table(["item", "value"], rows, ["---", "---"]) if rows else ["none recorded"]), ""]

    if result.notes:
        lines += ["## Notes", "", *(f"- {_cell(n)}" for n in result.notes), ""]
    lines += ["## Method", "", *(f"- {n}" for n in METHOD_NOTES), ""]
    return "\n".join(lines)


# -- writing ---------------------------------------------------------------------


def write_report(
    result: BenchResult,
    out_dir: str | os.PathLike[str] | None = None,
    *,
    write_json: bool = True,
) -> ReportPaths:
    """Write results.json (unless told not to), one PNG per metric and report.md."""
    directory = Path(out_dir) if out_dir is not None else default_out_dir(result)
    directory.mkdir(parents=True, exist_ok=True)
    json_path = directory / JSON_NAME
    if write_json:
        result.save(json_path)

    plots: dict[str, Path] = {}
    used: set[str] = set()
    for metric in result.metric_names():
        if not any(m.samples for m in result.measurements_of(metric)):
            continue
        stem, k = _slug(metric), 2
        while stem in used:  # distinct metrics may slug alike ("rtt ms" / "rtt/ms")
            stem, k = f"{_slug(metric)}-{k}", k + 1
        used.add(stem)
        plots[metric] = plot_metric(result, metric, directory / f"{stem}.png")

    has_json = json_path.exists()
    markdown = directory / MARKDOWN_NAME
    markdown.write_text(
        render_markdown(
            result, {m: p.name for m, p in plots.items()}, json_name=JSON_NAME if has_json else None
        ),
        encoding="utf-8",
    )
    return ReportPaths(
        directory=directory, markdown=markdown, json=json_path if has_json else None, plots=plots
    )


def summary_table(result: BenchResult) -> Table:
    """A compact terminal table of mean ± CI, for the end of a bench run."""
    table = Table(title=f"vnet bench {result.name}")
    for column in ("metric", "x", "series", "n", "mean ± 95% CI"):
        table.add_column(column, justify="right" if column in ("n", "x") else "left")
    for metric in result.metric_names():
        unit = result.metric_info(metric).unit
        for m in result.measurements_of(metric):
            value = format_mean_ci(m.summary()) if m.samples else "no samples"
            table.add_row(
                metric,
                "" if m.x is None else str(m.x),
                m.series,
                str(len(m.samples)),
                f"{value} {unit}".strip(),
            )
    return table


def finish_run(
    result: BenchResult,
    options: BenchOptions,
    console: Console | None = None,
    json_document: Mapping[str, Any] | None = None,
) -> ReportPaths:
    """End of every bench command: stamp, write the report, honour --json and --quiet.

    --json writes the results JSON, or `json_document` when the benchmark has its own.
    """
    result.finish()
    paths = write_report(result, options.out)
    text = result.to_json() if json_document is None else json.dumps(json_document, indent=2)
    if options.json_path == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
    elif options.json_path:
        target = Path(options.json_path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    if not options.quiet:
        # stderr: stdout may be carrying --json -.
        console = console or Console(stderr=True)
        console.print(summary_table(result))
        console.print(f"report: {paths.markdown}", highlight=False)
    return paths
