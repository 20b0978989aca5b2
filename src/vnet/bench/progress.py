"""What every ``vnet bench ...`` command shares while running: options and a progress bar.

Usage in a bench command::

    @click.command("dataplane")
    @bench_options(duration=10.0, repeat=5)
    def dataplane(bench: BenchOptions) -> None:
        result = BenchResult.start("dataplane", parameters=bench.as_parameters(), ...)
        with BenchProgress("dataplane", total=len(kinds) * bench.repeat,
                           quiet=bench.quiet) as progress:
            for kind in kinds:
                for run in range(bench.repeat):
                    progress.update(f"{kind} run {run + 1}/{bench.repeat}")
                    result.record("throughput", kind, measure(kind, bench.duration))
                    progress.advance()
        finish_run(result, bench)   # from vnet.bench.report
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

import click
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class BenchOptions:
    """The shared command-line options, with --quick already applied to the defaults."""

    quick: bool
    duration: float  # seconds per run
    repeat: int  # runs per measurement point
    out: Path | None  # report directory; None: ./out/bench/<name>-<timestamp>/
    json_path: str | None  # extra copy of the results JSON; "-" for stdout
    quiet: bool

    def as_parameters(self) -> dict[str, Any]:
        """The options that shape the measurement, for BenchResult.parameters."""
        return {"quick": self.quick, "duration": self.duration, "repeat": self.repeat}


def bench_options(
    duration: float | Callable[..., Any] = 10.0,
    repeat: int = 5,
    *,
    quick_duration: float = 2.0,
    quick_repeat: int = 2,
) -> Any:
    """Click decorator adding --quick/--duration/--repeat/--out/--json/--quiet.

    Use as ``@bench_options(duration=30, repeat=10)`` or bare ``@bench_options``.
    The command receives them as one keyword argument ``bench: BenchOptions``.
    Explicit --duration/--repeat win over --quick, which only changes the defaults.
    """
    if callable(duration):  # used bare, without parentheses
        return bench_options()(duration)
    default_duration = float(duration)

    def decorate(command: F) -> F:
        @functools.wraps(command)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            quick = kwargs.pop("quick")
            given_duration = kwargs.pop("duration")
            given_repeat = kwargs.pop("repeat")
            kwargs["bench"] = BenchOptions(
                quick=quick,
                duration=given_duration
                if given_duration is not None
                else (quick_duration if quick else default_duration),
                repeat=given_repeat
                if given_repeat is not None
                else (quick_repeat if quick else repeat),
                out=kwargs.pop("out"),
                json_path=kwargs.pop("json_path"),
                quiet=kwargs.pop("quiet"),
            )
            return command(*args, **kwargs)

        options = [
            click.option(
                "--quick",
                is_flag=True,
                help=f"Short smoke run: {quick_duration:g} s x {quick_repeat} "
                "unless --duration/--repeat say otherwise.",
            ),
            click.option(
                "--duration",
                type=click.FloatRange(min=0, min_open=True),
                default=None,
                metavar="SECONDS",
                help=f"Length of one run [default: {default_duration:g}].",
            ),
            click.option(
                "--repeat",
                type=click.IntRange(min=1),
                default=None,
                metavar="N",
                help=f"Runs per measurement point [default: {repeat}].",
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
        # Applied in reverse so --help lists them in the order above.
        for option in reversed(options):
            wrapper = option(wrapper)
        return wrapper  # type: ignore[return-value]

    return decorate


def stdout_is_terminal() -> bool:
    return sys.stdout.isatty()


class BenchProgress:
    """A rich progress bar on stderr, as a context manager.

    The bar shows only when stdout is a terminal (so piping ``--json -`` stays clean
    and CI logs are not flooded with redraws) and ``quiet`` is false. ``log`` lines
    still go to stderr without a terminal, and are dropped only when ``quiet``.
    """

    def __init__(
        self,
        description: str,
        total: int | None = None,
        *,
        quiet: bool = False,
        console: Console | None = None,
        show_bar: bool | None = None,  # None: decide from the terminal
    ) -> None:
        self.quiet = quiet
        self.console = console or Console(stderr=True)
        if show_bar is None:
            show_bar = stdout_is_terminal() and self.console.is_terminal
        self.show_bar = show_bar and not quiet
        self._progress = Progress(
            SpinnerColumn(),
            TextColumn("[progress.description]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=self.console,
            disable=not self.show_bar,
            # Benchmarks print nothing to stdout while running, and redirecting would
            # swallow a bench's own --json - output into the live display.
            redirect_stdout=False,
            redirect_stderr=False,
        )
        self._task: TaskID = self._progress.add_task(description, total=total)

    def __enter__(self) -> BenchProgress:
        self._progress.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._progress.stop()

    def advance(self, steps: float = 1) -> None:
        self._progress.advance(self._task, steps)

    def update(self, description: str | None = None, *, total: int | None = None) -> None:
        """Change what the bar says (e.g. "vr @ 500 Mbit/s, run 2/5") or its total."""
        changes: dict[str, Any] = {}
        if description is not None:
            changes["description"] = description
        if total is not None:
            changes["total"] = total
        self._progress.update(self._task, **changes)

    def log(self, message: str) -> None:
        """A line above the bar (or plain on stderr without a terminal); none when quiet."""
        if not self.quiet:
            self.console.print(message, highlight=False, markup=False)

    @property
    def completed(self) -> float:
        return self._progress.tasks[0].completed
