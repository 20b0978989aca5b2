"""The metrics of `vnet bench metrics`, and turning scrapes into samples."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from vnet.bench.metrics.scrape import Scrape, Target
from vnet.bench.results import BenchResult

WALL, CPU, TICKS, SIZE = "scrape time", "scrape cpu", "scrape cpu ticks", "scrape size"


def declare(result: BenchResult) -> None:
    result.declare(
        WALL,
        "ms",
        x_label="endpoint",
        plot="bar",
        description="One GET, request to the whole answer read, from an httpx client "
        "(keep-alive, HTTPS with the server's own certificate pinned) in the bench's process.",
    )
    result.declare(
        CPU,
        "ms",
        x_label="endpoint",
        plot="bar",
        description="The server's CPU time during that GET: the run time of all its threads "
        "(/proc/PID/task/*/schedstat), read before and after.",
    )
    result.declare(
        TICKS,
        "ms",
        x_label="endpoint",
        plot="bar",
        description="The same from /proc/PID/stat (utime + stime, all threads; 10 ms ticks).",
    )
    result.declare(
        SIZE, "kB", x_label="endpoint", plot="bar", description="The answer's body (1 kB = 1000 B)."
    )


def record(result: BenchResult, series: str, s: Scrape) -> None:
    result.record(WALL, series, s.wall_ms)
    result.record(CPU, series, s.cpu_ms)
    result.record(TICKS, series, s.cpu_ticks_ms)
    result.record(SIZE, series, s.size / 1000)


def scrape_all(
    result: BenchResult,
    targets: Sequence[Target],
    warmups: int,
    repeat: int,
    step: Callable[[str], None],
) -> None:
    """`warmups` unrecorded rounds, then `repeat` recorded ones; each round scrapes every
    target once, in turn, so a change in the machine's load falls on all of them alike."""
    for _ in range(warmups):
        for t in targets:
            t.get()
    for i in range(repeat):
        for t in targets:
            step(f"{t.name}, scrape {i + 1} of {repeat}")
            record(result, t.name, t.scrape())


def headline(result: BenchResult) -> str | None:
    """Per endpoint: median wall time, CPU time and size."""
    parts = []
    for series in dict.fromkeys(m.series for m in result.measurements if m.metric == WALL):
        p50 = {
            metric: m.summary().p50
            for metric in (WALL, CPU, SIZE)
            if (m := result.get(metric, series, None)) is not None and m.samples
        }
        if len(p50) == 3:
            parts.append(f"{series} {p50[WALL]:.0f} ms, {p50[CPU]:.0f} ms CPU, {p50[SIZE]:.0f} kB")
    return "median scrape: " + "; ".join(parts) if parts else None
