"""Measurements between lab nodes with standard tools (fping, ping, iperf3).

Each probe runs the tool inside a namespace as a child process with a
timeout and stops it by PID; traffic only goes to addresses inside the lab.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import time
from dataclasses import dataclass

from vnet.lab import processes


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
    """`fping -C`: one RTT per probe, '-' for a lost one."""
    argv = ["fping", "-C", str(count), "-p", str(interval_ms), "-t", str(timeout_ms), "-q", address]
    done = processes.run(ns, argv, timeout=5 + count * (interval_ms + timeout_ms) / 1000)
    rtts: list[float] = []
    sent = count
    for line in done.stderr.splitlines():
        if " : " in line:
            samples = line.split(" : ", 1)[1].split()
            sent = len(samples)
            rtts = [float(s) for s in samples if s != "-"]
    return PingResult(sent, len(rtts), rtts)


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
    server = processes.spawn(
        server_ns,
        ["iperf3", "-s", "-1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(50):  # the server needs a moment to listen
            done = processes.run(
                client_ns,
                ["iperf3", "-c", address, "-p", str(port), "-t", str(seconds), "-J"],
                timeout=seconds + 10,
            )
            data = json.loads(done.stdout or "{}")
            if "error" not in data and done.returncode == 0:
                end = data["end"]
                return TcpResult(
                    end["sum_received"]["bits_per_second"],
                    end["sum_sent"].get("retransmits", 0),
                    end["sum_received"]["seconds"],
                )
            if "connect" not in str(data.get("error", "")):
                raise RuntimeError(f"iperf3 to {address} failed: {data.get('error', done.stderr)}")
            time.sleep(0.05)
        raise RuntimeError(f"iperf3 server in {server_ns} never started listening")
    finally:
        processes.stop_child(server)
