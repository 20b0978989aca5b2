"""Timing one operation and charging its cost: response time, server CPU, memory, bytes."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from vnet.bench.mgmt.accounting import Cost, CpuBatch, Reading, cost
from vnet.bench.results import BenchResult
from vnet.tools.procfs import interface_counters, memory_of, process_cpu, ticks_per_second

SETTLE = 0.02  # s after a session's close, so its last segments (FIN, ACK) are counted


class Meter:
    """Readings around operations, in the namespace all clients and servers share."""

    def __init__(self, result: BenchResult, namespace: str):
        self.result, self.namespace = result, namespace
        self.batches: dict[tuple[str, str], CpuBatch] = {}
        self.hz = ticks_per_second()

    def reading(self, pid: int) -> Reading:
        return Reading(process_cpu(pid), interface_counters(self.namespace, "lo"))

    def rss(self, pid: int) -> float | None:
        return memory_of(pid).get("VmRSS")

    def run(self, pid: int, call: Callable[[], Any], settle: float = 0.0) -> tuple[float, Cost]:
        """Seconds `call` took, and what it cost server `pid` and the wire."""
        before = self.reading(pid)
        start = time.perf_counter()
        call()
        took = time.perf_counter() - start
        if settle:
            time.sleep(settle)
        return took, cost(before, self.reading(pid))

    def charge(self, series: str, op: str, c: Cost) -> None:
        """Add the operation's ticks to its batch (user/system per operation at the end)."""
        key = (series, op)
        if key not in self.batches:
            self.batches[key] = CpuBatch(self.hz)
        self.batches[key].add(c)

    def record_batches(self) -> None:
        """cpu_user_ms / cpu_system_ms: ticks per operation over each whole batch."""
        for (series, op), batch in self.batches.items():
            per_op = batch.per_operation_ms()
            if per_op is None:
                continue
            self.result.record("cpu_user_ms", series, per_op[0], x=op)
            self.result.record("cpu_system_ms", series, per_op[1], x=op)
