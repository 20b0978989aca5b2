"""fping: RTT probes from inside a namespace, parsed from `fping -C N -q`.

One RTT per probe (None for a lost one). Runs as a child process with a
timeout and is stopped by PID; probes only go to addresses inside the lab.
"""

from __future__ import annotations

import math
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass

from vnet.tools import processes
from vnet.tools.errors import ToolError

PING_INTERVAL_MS = 10  # fping -p: 100 probes a second, light next to any load
TIMEOUT_MS = 500  # fping -t: a probe's answer later than this counts as lost


def parse_fping(stderr: str) -> list[float | None]:
    """`fping -C N -q` output -> one RTT in ms per probe, None for a lost one."""
    for line in stderr.splitlines():
        if " : " not in line:
            continue
        fields = line.split(" : ", 1)[1].split()
        try:
            return [None if f == "-" else float(f) for f in fields]
        except ValueError as err:
            raise ToolError(f"unexpected fping line {line!r}") from err
    raise ToolError(f"fping printed no result line: {stderr[:200]!r}")


def fping_argv(
    address: str,
    count: int,
    source: str | None = None,
    interval_ms: int = PING_INTERVAL_MS,
    timeout_ms: int = TIMEOUT_MS,
) -> list[str]:
    argv = ["fping", "-C", str(count), "-p", str(interval_ms), "-t", str(timeout_ms), "-q"]
    return [*argv, *(["-S", source] if source else []), address]


def fping_timeout(
    count: int, interval_ms: int = PING_INTERVAL_MS, timeout_ms: int = TIMEOUT_MS
) -> float:
    """How long a run may take before it counts as hung (generous: a bound, not a goal)."""
    return 5 + count * (interval_ms + timeout_ms) / 1000


def fping(
    ns: str,
    address: str,
    count: int,
    source: str | None = None,
    interval_ms: int = PING_INTERVAL_MS,
    timeout_ms: int = TIMEOUT_MS,
) -> list[float | None]:
    """`count` probes every `interval_ms` from `ns` (from address `source`, if given)."""
    argv = fping_argv(address, count, source, interval_ms, timeout_ms)
    done = processes.run(ns, argv, timeout=fping_timeout(count, interval_ms, timeout_ms))
    return parse_fping(done.stderr)


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100) by linear interpolation (Hyndman & Fan type 7, numpy's)."""
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100
    low, high = math.floor(pos), math.ceil(pos)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


@dataclass(frozen=True)
class RttStats:
    """The distribution of one fping run's RTTs (ms); None when nothing came back."""

    sent: int
    received: int
    min: float | None
    p50: float | None
    p99: float | None
    max: float | None

    @classmethod
    def of(cls, probes: Sequence[float | None]) -> RttStats:
        rtts = [r for r in probes if r is not None]
        if not rtts:
            return cls(len(probes), 0, None, None, None, None)
        return cls(
            len(probes),
            len(rtts),
            min(rtts),
            percentile(rtts, 50),
            percentile(rtts, 99),
            max(rtts),
        )


def ping_rtts(ns: str, address: str, count: int, source: str | None = None) -> RttStats:
    """`count` pings every PING_INTERVAL_MS from `ns`, as a distribution."""
    return RttStats.of(fping(ns, address, count, source))


@dataclass(frozen=True)
class Probe:
    """fping next to a load: `count` probes every PING_INTERVAL_MS, from `delay` s on."""

    address: str
    source: str | None
    count: int
    delay: float = 0.3


class BackgroundPing:
    """fping running next to a load; `result()` waits for it and parses the RTTs."""

    def __init__(self, ns: str, probe: Probe) -> None:
        self.count = probe.count
        self._proc = processes.spawn(
            ns,
            fping_argv(probe.address, probe.count, probe.source),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def result(self) -> RttStats:
        try:
            _, err = self._proc.communicate(timeout=fping_timeout(self.count))
        except subprocess.TimeoutExpired:
            processes.stop_child(self._proc)
            raise ToolError("fping did not finish in time") from None
        return RttStats.of(parse_fping(err))

    def cancel(self) -> None:
        processes.stop_child(self._proc)
