"""The one contract every benchmark fulfils, so that one piece of code can run them all.

A benchmark names its own options (plain data; the command line turns them
into flags), turns them and the common options into a plan, runs the plan
into a BenchResult (samples per metric and series), and judges its goals
from those samples alone. The shared parts (statistics, results, report,
progress) do the rest. A benchmark's module imports numpy, scipy and
matplotlib only inside `run`, so listing the benchmarks costs nothing.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from vnet.bench.progress import BenchOptions
    from vnet.bench.results import BenchResult


class BenchError(RuntimeError):
    """A benchmark could not run (missing tool, failed set-up); the message says why."""


class OptionError(ValueError):
    """An option's value is not usable; `option` is its flag, e.g. "--loads"."""

    def __init__(self, option: str, message: str):
        super().__init__(message)
        self.option = option


@dataclass(frozen=True)
class Defaults:
    """The common options' defaults; --quick swaps in the quick ones."""

    repeat: int
    quick_repeat: int
    duration: float | None = None  # None: the benchmark has no --duration
    quick_duration: float | None = None


@dataclass(frozen=True)
class Option:
    """One benchmark-specific flag, as data.

    `kind` is "int", "float", "str", "flag" (`--x/--no-x` when `negative` is
    given), or "choice" (from `choices`). `dest` is the run keyword.
    """

    flag: str
    dest: str
    kind: str = "str"
    default: Any = None
    help: str = ""
    metavar: str | None = None
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] = ()
    negative: str | None = None
    required: bool = False
    show_default: bool = False
    path: bool = False  # str option naming an existing file


@dataclass(frozen=True)
class Goal:
    """One goal judged from the samples: met, missed, or None when it could not be judged."""

    goal: str
    met: bool | None
    detail: str

    @property
    def verdict(self) -> str:
        return {True: "met", False: "MISSED", None: "not judged"}[self.met]


class Benchmark(ABC):
    """A benchmark: options -> plan -> run -> samples and metrics -> goals."""

    name: ClassVar[str]
    help: ClassVar[str]  # first line: the one-line summary `vnet bench --help` shows
    defaults: ClassVar[Defaults]
    options: ClassVar[tuple[Option, ...]] = ()
    needs_root: ClassVar[bool] = True
    tools: ClassVar[tuple[str, ...]] = ()  # programs that must be on PATH

    def plan(self, common: BenchOptions, **options: Any) -> Any:
        """Check the options and decide what to measure; OptionError names a bad one."""
        return options

    @abstractmethod
    def run(self, plan: Any, common: BenchOptions) -> BenchResult:
        """Measure: every sample goes into the result, with its metric declared."""

    def goals(self, result: BenchResult) -> Sequence[Goal]:
        """The benchmark's goals, judged from `result` alone (also when re-reported)."""
        return ()

    def finish(self, result: BenchResult, plan: Any, directory: Path) -> str | None:
        """After the report is written into `directory`: add what only this benchmark has.

        Returns a text for the user's terminal (stderr; not with --quiet), or None.
        """
        return None

    def headline(self, result: BenchResult) -> str | None:
        """One line with the figures that matter, printed after the run."""
        return None

    def json_document(self, result: BenchResult) -> dict[str, Any] | None:
        """What --json writes when it is not the results JSON itself (None: the results)."""
        return None
