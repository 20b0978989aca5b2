"""Child processes inside namespaces, recorded and stopped by PID only.

A PID is recorded with its start time (field 22 of /proc/PID/stat), so a
recycled PID belonging to someone else is never signalled. Nothing here
finds a process by name.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from vnet.tools import cgroupfs
from vnet.tools.netns import entered
from vnet.tools.procfs import start_time
from vnet.tools.wait import WaitTimeout, wait_until


@dataclass(frozen=True)
class ProcessRecord:
    pid: int
    start_time: int
    what: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def python_module(module: str) -> list[str]:
    """The argv of `python -m module` with this interpreter, without the current directory
    on sys.path (-P): vnet's processes run as root, and a file there named like a module
    (grp.py, json.py: anyone's scratch in /tmp) would run in place of that module."""
    return [sys.executable, "-P", "-m", module]


def spawn(ns: str | None, argv: Sequence[str], **popen: Any) -> subprocess.Popen[Any]:
    """Start `argv` inside namespace `ns`: fork inherits the calling thread's namespace.

    Where the node has resource limits (a cgroup), the child joins it before
    exec: this is the one place node processes start, so the limits govern
    everything the lab, the benches and the tests run inside a node.
    """
    join = cgroupfs.joiner(ns)
    if join is not None:
        popen["preexec_fn"] = join
    with entered(ns):
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


def record_pid(pid: int, what: str) -> ProcessRecord | None:
    """A record of a process we did not fork ourselves (a daemon's PID file); None if gone."""
    started = start_time(pid)
    return None if started is None else ProcessRecord(pid, started, what)


def is_running(rec: ProcessRecord) -> bool:
    return start_time(rec.pid) == rec.start_time


def stop(rec: ProcessRecord, grace: float = 3.0) -> bool:
    """SIGTERM, then SIGKILL after `grace` seconds; False if it was already gone."""
    if not is_running(rec):
        return False
    os.kill(rec.pid, signal.SIGTERM)

    def gone() -> bool:
        _reap(rec.pid)  # a child of ours stays a zombie (and "running") until reaped
        return not is_running(rec)

    try:
        wait_until(gone, grace, f"{rec.what} (PID {rec.pid}) to exit")
    except WaitTimeout:
        if is_running(rec):
            os.kill(rec.pid, signal.SIGKILL)
        _reap(rec.pid)
    return True


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def check_output(
    argv: Sequence[str], *, env: dict[str, str] | None = None, timeout: float = 30
) -> str:
    """Run a short command to completion; its stdout, or ToolError saying what failed."""
    from vnet.tools.errors import ToolError

    try:
        done = subprocess.run(list(argv), env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as err:
        raise ToolError(f"{' '.join(argv)}: no answer within {timeout:g} s") from err
    except FileNotFoundError as err:
        raise ToolError(f"{argv[0]}: not installed") from err
    if done.returncode != 0:
        raise ToolError(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.strip()}")
    return done.stdout
