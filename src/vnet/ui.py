"""Terminal output shared by commands: tables and a progress bar that
appears only when an operation runs longer than a moment."""

from __future__ import annotations

import sys
import time
from types import TracebackType

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

# Tables are wide; without a terminal (pipes, CI logs) do not wrap them at 80.
console = Console(width=None if sys.stdout.isatty() else 140)
err_console = Console(stderr=True)


class DelayedProgress:
    """A progress bar on stderr that shows up only after `delay` seconds."""

    def __init__(self, description: str, delay: float = 0.7, enabled: bool | None = None):
        self.description = description
        self.delay = delay
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self.started = time.monotonic()
        self.progress: Progress | None = None
        self.task = None

    def __enter__(self) -> DelayedProgress:
        self.started = time.monotonic()
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.progress is not None:
            self.progress.stop()

    def update(self, done: int, total: int, text: str = "") -> None:
        if not self.enabled or time.monotonic() - self.started < self.delay:
            return
        if self.progress is None:
            self.progress = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TextColumn("[dim]{task.fields[detail]}"),
                console=err_console,
                transient=True,
            )
            self.progress.start()
            self.task = self.progress.add_task(self.description, total=total, detail="")
        assert self.task is not None
        self.progress.update(self.task, completed=done, total=total, detail=text[:60])
