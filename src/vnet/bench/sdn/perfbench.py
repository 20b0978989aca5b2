"""perfbench, the Rust load generator: its binary, its pass-through proxy, one control-plane run."""

from __future__ import annotations

import json
import os
import queue
import select
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from vnet.bench.sdn import SdnBenchError
from vnet.bench.sdn.lab import OVS_PORT, OvsLab
from vnet.bench.sdn.native import native_binary
from vnet.tools import processes
from vnet.tools.wait import WaitTimeout, wait_until

CONTROLLER_PORT = 6653  # tenant i listens on 6653 + i
PROXY_PORT = 6753  # the proxy listens on 6753 + i and relays to 6653 + i
HV_PORT = 6853  # the hypervisor's one listening port, above the proxy's (at most 100 tenants)


# -- the perfbench binary ----------------------------------------------------------------


def perfbench_binary(build: bool = True) -> Path:
    """perfbench's release binary ($PERFBENCH, else the workspace's), built if missing."""
    return native_binary("perfbench", "PERFBENCH", build)


class LineWatch:
    """Lines read from a pipe (unbuffered) a bit at a time, for wait_until."""

    def __init__(self, stream: IO[bytes]) -> None:
        self.fd = stream.fileno()
        self.buf = b""
        self.eof = False

    def saw(self, want: str) -> bool:
        """Read what is there (waiting briefly); whether a line equals `want` so far."""
        ready, _, _ = select.select([self.fd], [], [], 0.05)
        if ready:
            chunk = os.read(self.fd, 4096)
            self.eof = not chunk
            self.buf += chunk
        return want.encode() in (line.strip() for line in self.buf.split(b"\n"))


def _wait_for_line(stream: IO[bytes], want: str, timeout: float) -> bool:
    """Read a pipe until a line equals `want` (True), or EOF/timeout (False)."""
    watch = LineWatch(stream)
    try:
        wait_until(
            lambda: watch.saw(want),
            timeout,
            f"a line {want!r}",
            0.0,
            lambda: "end of output" if watch.eof else None,
        )
    except WaitTimeout:
        return False
    return True


@contextmanager
def proxy(lab: OvsLab, binary: Path, ports: int, max_seconds: float) -> Iterator[int]:
    """perfbench's pass-through proxy in the lab's namespace; yields its PID."""
    cmd = lab.in_ns(
        str(binary),
        "proxy",
        "--listen",
        f"127.0.0.1:{PROXY_PORT}",
        "--upstream",
        f"127.0.0.1:{CONTROLLER_PORT}",
        "--ports",
        str(ports),
        "--nodelay",
        "1",
        "--max-seconds",
        f"{max_seconds:.0f}",
    )
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert proc.stdout is not None
        if not _wait_for_line(proc.stdout, "ready", 10.0):
            err = proc.stderr.read().decode() if proc.poll() is not None and proc.stderr else ""
            raise SdnBenchError(f"the proxy did not get ready within 10 s: {err.strip()}")
        yield proc.pid
    finally:
        processes.stop_child(proc, grace=5.0)


# -- one perfbench run --------------------------------------------------------------------


@dataclass(frozen=True)
class Setup:
    # "packet-in", "port-stats", "packet-out", "packet-out-rate" (20 tenants, rate steps),
    # "noisy" (PACKET_OUT through a rate-limited hypervisor), "flow-mod"
    experiment: str
    via: str  # "ovs" (switch only), "proxy" (pass-through) or "hv" (the hypervisor)
    nodelay: bool
    tenants: int
    rate: int  # messages/s in total over all tenants
    rates: tuple[int, ...] = ()  # per tenant, instead of `rate` spread evenly
    rate_limit: int = 0  # the hypervisor's per-slice limit (messages/s; 0: none)

    @property
    def series(self) -> str:
        return f"{self.via}-{'ND' if self.nodelay else 'AGG'}"

    @property
    def kind(self) -> str:
        """perfbench's message type."""
        return "packet-out" if self.experiment in ("packet-out-rate", "noisy") else self.experiment

    def controller_ports(self) -> list[int]:
        """The switch's controllers: the tenants, the proxy's ports, or the hypervisor's one."""
        if self.via == "hv":
            return [HV_PORT]
        base = PROXY_PORT if self.via == "proxy" else CONTROLLER_PORT
        return [base + i for i in range(self.tenants)]


def _count_listening(lines: queue.Queue[str | None], tenants: int, timeout: float = 15) -> int:
    """How many tenant controllers said "listening on" (all of them, or fewer at EOF)."""
    seen = {"listening": 0, "eof": False}

    def all_listening() -> bool:
        try:
            line = lines.get(timeout=0.05)
        except queue.Empty:
            return False
        if line is None:
            seen["eof"] = True
        else:
            seen["listening"] += "listening on" in line
        return seen["listening"] >= tenants

    try:
        wait_until(
            all_listening,
            timeout,
            "perfbench listening",
            0.0,
            lambda: "it exited" if seen["eof"] else None,
        )
    except WaitTimeout as err:
        if not seen["eof"]:
            raise SdnBenchError(f"perfbench did not start listening within {timeout:g} s") from err
    return seen["listening"]


def run_perfbench(
    lab: OvsLab,
    binary: Path,
    setup: Setup,
    *,
    duration: float,
    trim: float,
    version: str,
    cpu_pids: list[int],
    spin_us: int = 0,
    records: Path | None = None,
) -> dict[str, Any]:
    """One `perfbench cp` run against the lab's OVS; returns perfbench's JSON report.

    With `records`, perfbench writes every message's record (records.csv) there.
    """
    kind = setup.kind
    rate = (
        ["--rate", ",".join(str(r) for r in setup.rates)]
        if setup.rates
        else ["--total-rate", str(setup.rate)]
    )
    cmd = [
        str(binary),
        "cp",
        "--listen",
        f"127.0.0.1:{CONTROLLER_PORT}",
        "--tenants",
        str(setup.tenants),
        "--type",
        kind,
        *rate,
        "--nodelay",
        "1" if setup.nodelay else "0",
        "--of",
        version,
        "--duration",
        f"{duration}",
        "--warmup",
        f"{trim}",
        "--cooldown",
        f"{trim}",
        "--drain",
        "0.5",
        "--setup-timeout",
        "15",
        "--spin-us",
        str(spin_us),
        *(["--out", str(records)] if records else ["--no-records"]),
    ]
    if kind == "packet-in":
        cmd += ["--inject-iface", lab.dp_iface, "--install-table-miss"]
    elif kind == "packet-out":
        cmd += ["--capture-iface", lab.dp_iface, "--out-port", str(OVS_PORT)]
    elif kind == "flow-mod":
        cmd += ["--out-port", str(OVS_PORT)]
    for pid in cpu_pids:
        cmd += ["--cpu-pid", str(pid)]
    with tempfile.TemporaryFile("w+") as out:
        proc = subprocess.Popen(lab.in_ns(*cmd), stdout=out, stderr=subprocess.PIPE, text=True)
        lines: queue.Queue[str | None] = queue.Queue()
        err: list[str] = []

        def pump() -> None:
            assert proc.stderr is not None
            for line in proc.stderr:
                err.append(line)
                lines.put(line)
            lines.put(None)

        reader = threading.Thread(target=pump, daemon=True)
        reader.start()
        try:
            listening = _count_listening(lines, setup.tenants)
            if listening == setup.tenants:
                lab.set_controllers(setup.controller_ports())
            proc.wait(timeout=duration + 60)
        finally:
            processes.stop_child(proc, grace=5.0)
            reader.join(timeout=5)
            lab.clear_controllers()
        if proc.returncode != 0:
            tail = "".join(err).strip().splitlines()[-3:]
            raise SdnBenchError(f"perfbench cp exited {proc.returncode}: {' | '.join(tail)}")
        out.seek(0)
        report: dict[str, Any] = json.load(out)
    return report
