"""Child processes inside namespaces, recorded and stopped by PID only.

A PID is recorded with its start time (field 22 of /proc/PID/stat), so a
recycled PID belonging to someone else is never signalled.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from vnet.substrate import nsfs


@dataclass(frozen=True)
class ProcessRecord:
    pid: int
    start_time: int
    what: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def start_time(pid: int) -> int | None:
    """The process's start time in clock ticks, or None if it is gone (or a zombie)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return None
    # the command name (field 2) may contain spaces and parentheses
    fields = stat.rsplit(")", 1)[1].split()
    if fields[0] == "Z":  # exited; only its parent's wait() is missing
        return None
    return int(fields[19])


def spawn(ns: str | None, argv: Sequence[str], **popen: Any) -> subprocess.Popen[Any]:
    """Start `argv` inside namespace `ns`: fork inherits the calling thread's namespace."""
    with nsfs.entered(ns):
        return subprocess.Popen(list(argv), **popen)


def run(ns: str | None, argv: Sequence[str], timeout: float) -> subprocess.CompletedProcess[str]:
    """Run to completion inside `ns`, killing the child (by PID) on timeout."""
    proc = spawn(ns, argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    return subprocess.CompletedProcess(list(argv), proc.returncode, out, err)


def stop_child(proc: subprocess.Popen[Any], grace: float = 2.0) -> None:
    """Stop a child we still hold (its PID cannot be recycled before we reap it)."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def record(proc: subprocess.Popen[Any], what: str) -> ProcessRecord:
    return ProcessRecord(proc.pid, start_time(proc.pid) or 0, what)


def is_running(rec: ProcessRecord) -> bool:
    return start_time(rec.pid) == rec.start_time


def stop(rec: ProcessRecord, grace: float = 3.0) -> bool:
    """SIGTERM, then SIGKILL after `grace` seconds; False if it was already gone."""
    if not is_running(rec):
        return False
    os.kill(rec.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if not is_running(rec):
            _reap(rec.pid)
            return True
        _reap(rec.pid)
        time.sleep(0.02)
    if is_running(rec):
        os.kill(rec.pid, signal.SIGKILL)
    _reap(rec.pid)
    return True


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
