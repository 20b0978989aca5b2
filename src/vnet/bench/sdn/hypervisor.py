"""The slicing hypervisor (the Rust crate in ``hypervisor/``) as a series of `vnet bench sdn`.

The switch connects once, to 127.0.0.1:6753; the hypervisor makes one slice per
perfbench tenant (`--tenants N --upstream 127.0.0.1:6653`: slice i's controller
is perfbench's tenant i) and connects to them. With `--probe-macs` slice i owns
the frames whose source MAC is perfbench tenant i's probe MAC, so PACKET_INs go
to their own tenant. One hypervisor process per run: its CPU time and its
counters (stdout's last line when it stops) belong to that run alone.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vnet.bench.sdn import SdnBenchError
from vnet.bench.sdn.lab import OvsLab
from vnet.bench.sdn.native import native_binary
from vnet.bench.sdn.perfbench import CONTROLLER_PORT, HV_PORT, _wait_for_line
from vnet.tools import processes


def hypervisor_binary(build: bool = True) -> Path:
    """The hypervisor's release binary ($VNET_HYPERVISOR, else the workspace's), built if
    missing."""
    return native_binary("hypervisor", "VNET_HYPERVISOR", build)


@dataclass(frozen=True)
class HvConfig:
    """How the hypervisor is started for one run."""

    tenants: int
    probe_macs: bool = False  # route PACKET_IN per tenant by the probe's source MAC
    rate_limit: int = 0  # control messages/s per slice (0: none)
    nodelay: bool = True


@dataclass
class HvProcess:
    pid: int
    report: dict[str, Any] = field(default_factory=dict)  # filled in when it has stopped


def _command(lab: OvsLab, binary: Path, cfg: HvConfig, max_seconds: float) -> list[str]:
    cmd = [
        str(binary),
        "--listen",
        f"127.0.0.1:{HV_PORT}",
        "--tenants",
        str(cfg.tenants),
        "--upstream",
        f"127.0.0.1:{CONTROLLER_PORT}",
        "--nodelay",
        "1" if cfg.nodelay else "0",
        "--max-seconds",
        f"{max_seconds:.0f}",
    ]
    if cfg.probe_macs:
        cmd.append("--probe-macs")
    if cfg.rate_limit:
        cmd += ["--rate-limit", str(cfg.rate_limit)]
    return lab.in_ns(*cmd)


def last_json_line(text: str) -> dict[str, Any]:
    """The hypervisor's report: the last stdout line that is a JSON object ({} if none)."""
    for line in reversed(text.splitlines()):
        if line.startswith("{"):
            try:
                found: dict[str, Any] = json.loads(line)
            except ValueError:
                continue
            return found
    return {}


@contextmanager
def hypervisor(lab: OvsLab, binary: Path, cfg: HvConfig, max_seconds: float) -> Iterator[HvProcess]:
    """The hypervisor in the lab's namespace, ready for the switch; its report when it stops."""
    # stderr to a file: a pipe nobody reads could fill and stall the hypervisor
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(
            _command(lab, binary, cfg, max_seconds), stdout=subprocess.PIPE, stderr=err
        )
        hv = HvProcess(proc.pid)
        try:
            assert proc.stdout is not None
            if not _wait_for_line(proc.stdout, "ready", 10.0):
                err.seek(0)
                why = err.read().decode(errors="replace").strip()[-500:]
                raise SdnBenchError(f"the hypervisor did not get ready within 10 s: {why}")
            yield hv
        finally:
            processes.stop_child(proc, grace=5.0)
            out = proc.stdout.read().decode(errors="replace") if proc.stdout else ""
            hv.report = last_json_line(out)


def tenant_counters(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Per-tenant counters of the first switch session in a hypervisor report."""
    switches = report.get("switches") or [{}]
    tenants: list[dict[str, Any]] = switches[0].get("tenants", [])
    return tenants


def counter_sum(report: dict[str, Any], key: str) -> int:
    return sum(int(t.get(key, 0)) for t in tenant_counters(report))
