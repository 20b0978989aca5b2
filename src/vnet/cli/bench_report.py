"""vnet bench report FILE.json: regenerate a report from recorded samples."""

from __future__ import annotations

from pathlib import Path

import click

from vnet.bench.report import JSON_NAME, default_out_dir, write_report
from vnet.bench.results import BenchResult, ResultFormatError


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
