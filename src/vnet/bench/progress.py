"""What every benchmark shares while running: the common options and a progress bar.

Usage in a benchmark's run (vnet.bench.contract)::

    with BenchProgress("dataplane", total=len(kinds) * common.repeat,
                       quiet=common.quiet) as progress:
        for kind in kinds:
            for run in range(common.repeat):
                progress.update(f"{kind} run {run + 1}/{common.repeat}")
                result.record("throughput", kind, measure(kind, common.duration))
                progress.advance()
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

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
