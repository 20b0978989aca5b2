"""vnet bench ...: one command per registered benchmark, all with the same common options.

Each command is built from its benchmark's contract (vnet.bench.contract):
the common options (--quick, --duration, --repeat, --out, --json, -q), then
the benchmark's own; running it checks root and tools, plans, runs, writes
the report and prints the headline. Nothing here measures anything.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path
from typing import Any

import click

from vnet.bench.contract import BenchError, Benchmark, Defaults, Option, OptionError
from vnet.bench.progress import BenchOptions
from vnet.bench.registry import BENCHMARKS
from vnet.cli import friendly_errors
from vnet.tools.errors import ToolError

BENCH_EXTRA = ("numpy", "scipy", "matplotlib")
EXTRA_HINT = "the benchmarks need numpy, scipy and matplotlib: pip install 'vnet[bench]'"


def common_options(defaults: Defaults) -> list[Any]:
    """--quick, [--duration], --repeat, --out, --json, --quiet/-q, in --help order."""
    quick_help = f"Short smoke run: {defaults.quick_repeat} run(s)"
    if defaults.duration is not None:
        quick_help += f" of {defaults.quick_duration:g} s"
    options = [
        click.option(
            "--quick", is_flag=True, help=quick_help + " unless other options say otherwise."
        )
    ]
    if defaults.duration is not None:
        options.append(
            click.option(
                "--duration",
                type=click.FloatRange(min=0, min_open=True),
                default=None,
                metavar="SECONDS",
                help=f"Length of one run [default: {defaults.duration:g}].",
            )
        )
    options += [
        click.option(
            "--repeat",
            type=click.IntRange(min=1),
            default=None,
            metavar="N",
            help=f"Runs per measurement point [default: {defaults.repeat}].",
        ),
        click.option(
            "--out",
            type=click.Path(file_okay=False, path_type=Path),
            default=None,
            metavar="DIR",
            help="Report directory [default: ./out/bench/<name>-<timestamp>].",
        ),
        click.option(
            "--json",
            "json_path",
            default=None,
            metavar="PATH",
            help="Also write the results JSON to PATH ('-' for stdout).",
        ),
        click.option("--quiet", "-q", is_flag=True, help="No progress bar and no log lines."),
    ]
    return options


def common_from(kwargs: dict[str, Any], defaults: Defaults) -> BenchOptions:
    """Pop the common options; explicit --duration/--repeat win over --quick's defaults."""
    quick = kwargs.pop("quick")
    duration = kwargs.pop("duration", None)
    repeat = kwargs.pop("repeat")
    if duration is None:
        duration = (defaults.quick_duration if quick else defaults.duration) or 0.0
    if repeat is None:
        repeat = defaults.quick_repeat if quick else defaults.repeat
    return BenchOptions(
        quick=quick,
        duration=duration,
        repeat=repeat,
        out=kwargs.pop("out"),
        json_path=kwargs.pop("json_path"),
        quiet=kwargs.pop("quiet"),
    )


def click_option(option: Option) -> Any:
    """One benchmark option as a click decorator."""
    if option.kind == "flag":
        if option.negative:  # --x/--no-x; may default to None: "not said, decide later"
            decls = f"{option.flag}/{option.negative}"
            return click.option(
                decls,
                option.dest,
                default=option.default,
                show_default=option.show_default,
                help=option.help,
            )
        return click.option(
            option.flag, option.dest, is_flag=True, default=bool(option.default), help=option.help
        )
    types: dict[str, Any] = {
        "int": click.IntRange(option.minimum, option.maximum),  # type: ignore[arg-type]
        "float": click.FloatRange(option.minimum, option.maximum),
        "choice": click.Choice(list(option.choices)),
        "str": click.Path(exists=True, dir_okay=False, path_type=Path) if option.path else str,
    }
    return click.option(
        option.flag,
        option.dest,
        type=types[option.kind],
        default=option.default,
        required=option.required,
        metavar=option.metavar,
        show_default=option.show_default,
        help=option.help,
    )


def check_can_run(bench: Benchmark) -> None:
    if bench.needs_root and os.geteuid() != 0:
        raise click.ClickException(
            f"vnet bench {bench.name} creates network namespaces and needs root; run it with sudo"
        )
    missing = [t for t in bench.tools if shutil.which(t) is None]
    if missing:
        raise click.ClickException(
            f"not installed: {', '.join(missing)} (scripts/bootstrap.sh installs them)"
        )


def run_bench(bench: Benchmark, common: BenchOptions, options: dict[str, Any]) -> None:
    """Plan, check, run, report: the same for every benchmark."""
    # Checked, not imported: a benchmark's figures (say, peak RSS) should not carry the
    # plotting library before it is needed.
    missing = [m for m in BENCH_EXTRA if importlib.util.find_spec(m) is None]
    if missing:
        raise click.ClickException(f"{EXTRA_HINT} (missing: {', '.join(missing)})")
    try:
        plan = bench.plan(common, **options)
    except OptionError as err:
        raise click.BadParameter(str(err), param_hint=err.option) from err
    check_can_run(bench)
    try:
        result = bench.run(plan, common)
    except (BenchError, ToolError) as err:
        raise click.ClickException(str(err)) from err
    from vnet.bench.report import finish_run

    document = bench.json_document(result)
    paths = finish_run(result, common, json_document=document)
    try:  # a benchmark may fail the run on what it found, its report already written
        shown = bench.finish(result, plan, paths.directory)
    except BenchError as err:
        raise click.ClickException(str(err)) from err
    if shown and not common.quiet:
        click.echo(shown, err=True)
    if (line := bench.headline(result)) is not None:
        click.echo(line, err=common.json_path == "-")
    if document is not None and common.json_path not in (None, "-"):
        click.echo(f"wrote {common.json_path}", err=True)


def make_command(cls: type[Benchmark]) -> click.Command:
    """`vnet bench NAME` with the common options and then the benchmark's own."""
    bench = cls()

    @friendly_errors
    def callback(**kwargs: Any) -> None:
        common = common_from(kwargs, cls.defaults)
        run_bench(bench, common, kwargs)

    for option in reversed([*common_options(cls.defaults), *map(click_option, cls.options)]):
        callback = option(callback)
    return click.command(cls.name, help=cls.help)(callback)


@click.command("report")
@click.argument("results_json", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    metavar="DIR",
    help="Output directory [default: ./out/bench/<name>-<start timestamp>].",
)
@click.option(
    "--baseline",
    default=None,
    metavar="SERIES",
    help="Divide by this series instead of the one recorded.",
)
def report_cmd(results_json: Path, out: Path | None, baseline: str | None) -> None:
    """Regenerate report.md and the PNG plots from a recorded results JSON."""
    # Here, not at the top: listing the commands must not load the plotting libraries.
    from vnet.bench.report import JSON_NAME, default_out_dir, write_report
    from vnet.bench.results import BenchResult, ResultFormatError

    try:
        result = BenchResult.load(results_json)
    except (ResultFormatError, OSError, UnicodeDecodeError) as err:
        raise click.ClickException(f"{results_json}: {err}") from err
    if baseline is not None:
        if baseline not in result.series_names():
            known = ", ".join(result.series_names()) or "none"
            raise click.BadParameter(
                f"no series {baseline!r} (known: {known})", param_hint="--baseline"
            )
        result.baseline = baseline
    directory = out if out is not None else default_out_dir(result)
    target = directory / JSON_NAME
    # Never rewrite the file we were given: it is the record.
    same_file = target.exists() and target.samefile(results_json)
    paths = write_report(result, directory, write_json=not same_file)
    click.echo(str(paths.markdown))
    for png in paths.plots.values():
        click.echo(str(png))


class BenchGroup(click.Group):
    """The benchmarks from the registry, made into commands when asked for, and `report`."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *BENCHMARKS})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in BENCHMARKS:
            return make_command(BENCHMARKS[name])
        return super().get_command(ctx, name)


@click.group(cls=BenchGroup)
def bench() -> None:
    """Measure vnet: build times, data plane, forwarding, QoS, NETCONF, SNMP, SDN control plane."""


bench.add_command(report_cmd)
