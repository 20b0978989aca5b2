"""Measurements between lab nodes with standard tools (fping, ping, iperf3).

Each probe runs the tool inside a namespace as a child process with a
timeout and stops it by PID; traffic only goes to addresses inside the lab.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from vnet.tools import fping as tools_fping
from vnet.tools import iperf3, processes
from vnet.tools.errors import ToolError


@dataclass
class PingResult:
    sent: int
    received: int
    rtts_ms: list[float]

    @property
    def ok(self) -> bool:
        return self.received > 0

    @property
    def loss(self) -> float:
        return 1 - self.received / self.sent if self.sent else 1.0

    def stat(self, name: str) -> float | None:
        if not self.rtts_ms:
            return None
        if name == "min":
            return min(self.rtts_ms)
        if name == "max":
            return max(self.rtts_ms)
        if name == "p50":
            return statistics.median(self.rtts_ms)
        return statistics.fmean(self.rtts_ms)


def fping(
    ns: str, address: str, count: int = 3, interval_ms: int = 10, timeout_ms: int = 300
) -> PingResult:
    """`fping -C`: one RTT per probe; nothing read back counts as all lost."""
    try:
        probes = tools_fping.fping(
            ns, address, count, interval_ms=interval_ms, timeout_ms=timeout_ms
        )
    except ToolError:
        return PingResult(count, 0, [])
    rtts = [r for r in probes if r is not None]
    return PingResult(len(probes), len(rtts), rtts)


def df_ping(ns: str, address: str, payload: int) -> bool:
    """One ping that may not be fragmented (DF), `payload` bytes of ICMP data."""
    family = "-6" if ":" in address else "-4"
    argv = ["ping", family, "-c", "1", "-W", "1", "-M", "do", "-s", str(payload), address]
    return processes.run(ns, argv, timeout=5).returncode == 0


@dataclass
class TcpResult:
    bits_per_second: float
    retransmits: int
    seconds: float


def iperf3_tcp(
    client_ns: str, server_ns: str, address: str, seconds: float = 2.0, port: int = 5201
) -> TcpResult:
    try:
        with iperf3.Iperf3Server(server_ns, port, one_off=True, json=False):
            argv = iperf3.client_argv(address, float(seconds), port=port)
            out, _ = iperf3.run_client(client_ns, argv, seconds)
    except ToolError as err:
        raise RuntimeError(f"iperf3 to {address} failed: {err}") from err
    end = iperf3.parse_json(out)["end"]
    return TcpResult(
        end["sum_received"]["bits_per_second"],
        end["sum_sent"].get("retransmits", 0),
        end["sum_received"]["seconds"],
    )
