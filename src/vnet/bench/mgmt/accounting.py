"""What one management operation cost the agent and the wire: pure arithmetic on readings.

A `Reading` is taken just before and just after each operation: the agent's
CPU counters (/proc/PID/stat ticks and per-thread schedstat nanoseconds, via
vnet.tools.procfs) and the loopback counters of the namespace the agent and
its clients share (/proc/net/dev). `cost()` turns two readings into one
operation's `Cost`; `CpuBatch` adds up the user/system ticks of many
operations, because one 10 ms tick is coarser than one operation.

Bytes on the wire are the loopback's transmitted bytes: every frame between
client and agent crosses `lo` once (its receive counter sees the same frame
again, so only one direction is counted). The frame length includes the
14-byte link header, as tcpdump's `length` sums do in paper 000. Nothing else
talks in that namespace while an operation runs (the baselines take turns).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from vnet.tools.procfs import IfCounters, ProcessCpu


@dataclass(frozen=True)
class Reading:
    cpu: ProcessCpu | None
    wire: IfCounters
    rss_mib: float | None = None


@dataclass(frozen=True)
class Cost:
    """One operation: the agent's CPU (ns precision), its ticks, and the bytes exchanged."""

    cpu_ms: float | None
    user_ticks: int
    system_ticks: int
    wire_bytes: int
    packets: int


def wire_delta(before: IfCounters, after: IfCounters) -> tuple[int, int]:
    """(bytes, packets) sent over loopback between two readings of its counters."""
    sent, packets = after.tx_bytes - before.tx_bytes, after.tx_packets - before.tx_packets
    if sent < 0 or packets < 0:
        raise ValueError(f"loopback counters went backwards: {before} -> {after}")
    return sent, packets


def cost(before: Reading, after: Reading) -> Cost:
    sent, packets = wire_delta(before.wire, after.wire)
    if before.cpu is None or after.cpu is None:
        return Cost(None, 0, 0, sent, packets)
    a, b = before.cpu, after.cpu
    # A thread that ended between the readings takes its schedstat time with it; the
    # ticks in /proc/PID/stat keep it. Never report negative time.
    ran = max(0, b.runtime_ns - a.runtime_ns)
    return Cost(
        ran / 1e6,
        b.user_ticks - a.user_ticks,
        b.system_ticks - a.system_ticks,
        sent,
        packets,
    )


@dataclass
class CpuBatch:
    """User and system ticks summed over the operations of one kind, per operation in ms."""

    ticks_per_second: int
    operations: int = 0
    user_ticks: int = 0
    system_ticks: int = 0
    schedstat_ms: list[float] = field(default_factory=list)

    def add(self, c: Cost) -> None:
        self.operations += 1
        self.user_ticks += c.user_ticks
        self.system_ticks += c.system_ticks
        if c.cpu_ms is not None:
            self.schedstat_ms.append(c.cpu_ms)

    def per_operation_ms(self) -> tuple[float, float] | None:
        """(user, system) ms per operation, or None before the first operation."""
        if not self.operations:
            return None
        scale = 1000.0 / self.ticks_per_second / self.operations
        return self.user_ticks * scale, self.system_ticks * scale

    def agreement(self) -> float | None:
        """Ticks' total over schedstat's total: near 1 when both saw the same work."""
        ns_total = sum(self.schedstat_ms)
        per_op = self.per_operation_ms()
        if per_op is None or ns_total <= 0:
            return None
        return (per_op[0] + per_op[1]) * self.operations / ns_total
