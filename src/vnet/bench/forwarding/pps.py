"""One packets-per-second run: trafgen at the sender, the receiver's counters."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from vnet.bench.dataplane.paths import ReadyPath
from vnet.tools import procfs, trafgen
from vnet.tools.errors import ToolError

WARMUP = 0.4  # s of traffic before counting: trafgen maps its ring, neighbours settle


# -- one measurement ---------------------------------------------------------------


@dataclass(frozen=True)
class PpsRun:
    pps: float  # received
    cpu: procfs.CpuTimes  # ticks of the sender's CPUs over the window
    seconds: float

    @property
    def packets(self) -> float:
        return self.pps * self.seconds

    def ns_per_packet(self, ticks: int) -> float:
        if self.packets <= 0:
            return 0.0
        return ticks / procfs.ticks_per_second() * 1e9 / self.packets


def measure_pps(
    path: ReadyPath,
    size: int,
    cores: int,
    duration: float,
    during: Callable[[], None] | None = None,
) -> PpsRun:
    """trafgen on `cores` CPUs for WARMUP + `duration` s; `during` replaces the plain wait."""
    packet = trafgen.trafgen_packet(
        path.first_hop_mac, path.src_mac, path.src_ip, path.dst_ip, size
    )
    cpus = list(range(cores))  # trafgen pins its workers to CPUs 0..N-1
    src_if, dst_if = path.spec.src.ifname, path.spec.dst.ifname
    with trafgen.Trafgen(path.src_ns, src_if, packet, cores) as gen:
        time.sleep(WARMUP)
        if not gen.running():
            raise ToolError("trafgen stopped right after starting")
        rx0 = procfs.interface_counters(path.dst_ns, dst_if)
        tx0 = procfs.interface_counters(path.src_ns, src_if)
        cpu0, t0 = procfs.cpu_times(cpus), time.monotonic()
        if during is None:
            time.sleep(duration)
        else:
            during()
        rx1 = procfs.interface_counters(path.dst_ns, dst_if)
        tx1 = procfs.interface_counters(path.src_ns, src_if)
        cpu1, t1 = procfs.cpu_times(cpus), time.monotonic()
    # What entered the first hop, whether it was dropped there or not.
    offered = (tx1.tx_packets + tx1.tx_dropped) - (tx0.tx_packets + tx0.tx_dropped)
    if offered <= 0:  # the sender failed: no property of the path
        raise ToolError(f"trafgen sent nothing ({gen.complaint() or 'no message'})")
    seconds = t1 - t0
    return PpsRun((rx1.rx_packets - rx0.rx_packets) / seconds, cpu1 - cpu0, seconds)
