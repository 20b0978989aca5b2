"""One scrape and what it cost the server: wall time, the server's CPU time, bytes.

The server's CPU is read from /proc just before and just after the request
(vnet.tools.procfs): the nanoseconds all its threads ran (schedstat) and the
user + system ticks of /proc/PID/stat. Everything the server did between the
readings counts, its background work too, so a quiet server is what makes the
figure the scrape's. The client is httpx, keep-alive, in this process: a thread
that entered the server's namespace opens the connection and keeps it.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

import httpx

from vnet.bench.contract import BenchError
from vnet.tools.netns import entered
from vnet.tools.procfs import ProcessCpu, process_cpu

TICK_MS = 1000 / os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Scrape:
    wall_ms: float
    cpu_ms: float  # schedstat: all threads, nanosecond resolution
    cpu_ticks_ms: float  # /proc/PID/stat utime + stime: all threads, 10 ms ticks
    size: int  # the answer's body, bytes


def scrape_cost(
    before: ProcessCpu, after: ProcessCpu, wall_s: float, size: int, tick_ms: float = TICK_MS
) -> Scrape:
    """One scrape from the server's CPU readings around it; a thread that ended between
    the readings takes its schedstat time with it, so that figure is never negative."""
    ticks = (after.user_ticks - before.user_ticks) + (after.system_ticks - before.system_ticks)
    if ticks < 0:
        raise ValueError(f"CPU ticks went backwards: {before} -> {after}")
    ran_ns = max(0, after.runtime_ns - before.runtime_ns)
    return Scrape(wall_s * 1000, ran_ns / 1e6, ticks * tick_ms, size)


@dataclass
class Target:
    """One endpoint of one server: where to GET, and the server's process to watch."""

    name: str  # the series, e.g. "agent /metrics"
    client: httpx.Client
    path: str
    pid: int
    namespace: str | None = None
    headers: dict[str, str] | None = None

    def get(self) -> httpx.Response:
        with entered(self.namespace):
            r = self.client.get(self.path, headers=self.headers)
        if r.status_code != 200:
            raise BenchError(f"{self.name}: HTTP {r.status_code}: {r.text[:200]}")
        return r

    def scrape(self) -> Scrape:
        before = process_cpu(self.pid)
        start = time.perf_counter()
        r = self.get()
        wall = time.perf_counter() - start
        after = process_cpu(self.pid)
        if before is None or after is None:
            raise BenchError(f"{self.name}: the server (PID {self.pid}) is gone")
        return scrape_cost(before, after, wall, len(r.content))
