"""A throwaway PostgreSQL server from Debian's `postgresql` package, for tests and benches.

`running()` makes a cluster with initdb in a new temporary directory, starts `postgres` in
the foreground as our child, and on exit stops it by PID (fast shutdown, then SIGKILL) and
deletes the directory; a failure halfway cleans up the same way. The system's own cluster
(/var/lib/postgresql, the `postgres` user, port 5432 on the host) is never touched.

It runs as the unprivileged user `nobody` (present on every Debian system; PostgreSQL refuses
to run as root and the tool creates no user). It listens on no TCP port at all: only on a
unix socket inside the private directory (mode 0700, owned by nobody), so no port can collide
with another server and only root and nobody can connect. Authentication is `trust` for the
superuser `vnet`: the socket's directory is the access control.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vnet.tools.errors import ToolError
from vnet.tools.processes import ProcessRecord, record, spawn, stop_child
from vnet.tools.wait import WaitTimeout, wait_until

PG_ROOT = Path("/usr/lib/postgresql")
RUN_AS = "nobody"
SUPERUSER = "vnet"
PORT = 5432  # only names the socket file (.s.PGSQL.5432) in our private directory
SETTINGS = {
    "listen_addresses": "",  # no TCP
    "unix_socket_permissions": "0700",
    "fsync": "off",  # a test cluster: durability is not what is measured
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "max_connections": "200",
}


@dataclass(frozen=True)
class Postgres:
    directory: Path
    socket_dir: Path
    bindir: Path
    process: ProcessRecord

    def url(self, database: str = "postgres") -> str:
        """SQLAlchemy URL (psycopg 3) of `database` on this server."""
        return f"postgresql+psycopg://{SUPERUSER}@/{database}?host={self.socket_dir}&port={PORT}"

    def create_database(self, name: str, template: str | None = None) -> str:
        """A new database, empty or (`template`) a copy of that one (CREATE DATABASE ...
        TEMPLATE: a file copy, much faster than migrating again; the template must have
        no open connection while it is copied); its URL."""
        client = [str(self.bindir / "createdb"), "-h", str(self.socket_dir), "-p", str(PORT)]
        copy = ["--template", template] if template else []
        _run([*client, "-U", SUPERUSER, *copy, name], None)
        return self.url(name)


def bindir() -> Path:
    """The newest installed server's bin directory (Debian: /usr/lib/postgresql/<ver>/bin)."""
    found = sorted(PG_ROOT.glob("*/bin/initdb"), key=lambda p: _version(p.parent.parent.name))
    if not found:
        raise ToolError(f"no PostgreSQL server under {PG_ROOT} (Debian package `postgresql`)")
    return found[-1].parent


@contextlib.contextmanager
def running(timeout: float = 30.0) -> Iterator[Postgres]:
    """A fresh server for the duration of the block; stopped and deleted afterwards."""
    bin_path = bindir()
    user = pwd.getpwnam(RUN_AS)
    directory = Path(tempfile.mkdtemp(prefix="vnet-pg-"))
    proc: subprocess.Popen[Any] | None = None
    try:
        if os.geteuid() == 0:
            os.chown(directory, user.pw_uid, user.pw_gid)  # mkdtemp made it 0700
        data = directory / "data"
        _run(_initdb(bin_path, data), user, cwd=directory)
        proc = _start(bin_path, directory, user)
        server = Postgres(directory, directory, bin_path, record(proc, "postgres"))
        _wait_ready(proc, data, directory / "postgres.log", timeout)
        yield server
    finally:
        if proc is not None:
            _stop(proc)
        shutil.rmtree(directory, ignore_errors=True)


def _initdb(bin_path: Path, data: Path) -> list[str]:
    return [
        str(bin_path / "initdb"),
        *("-D", str(data), "-U", SUPERUSER, "--auth=trust"),
        *("-E", "UTF8", "--locale=C.UTF-8", "--no-sync", "--no-instructions"),
    ]


def _start(bin_path: Path, directory: Path, user: pwd.struct_passwd) -> subprocess.Popen[Any]:
    argv = [str(bin_path / "postgres"), "-D", str(directory / "data")]
    argv += ["-k", str(directory), "-p", str(PORT)]
    for name, value in SETTINGS.items():
        argv += ["-c", f"{name}={value}"]
    with open(directory / "postgres.log", "ab") as log:
        return spawn(None, argv, stdout=log, stderr=log, cwd=directory, **_as_user(user))


def _wait_ready(proc: subprocess.Popen[Any], data: Path, log: Path, timeout: float) -> None:
    """postmaster.pid's eighth line says `ready` once connections are accepted (PG >= 10)."""

    def ready() -> bool:
        lines = _read(data / "postmaster.pid").splitlines()
        return len(lines) >= 8 and lines[7].strip() == "ready"

    def died() -> str | None:
        if proc.poll() is None:
            return None
        return f"postgres exited ({proc.returncode})"

    try:
        wait_until(ready, timeout, "PostgreSQL to accept connections", give_up=died)
    except WaitTimeout as err:
        raise ToolError(f"{err}; log: {_read(log)[-2000:]}") from err


def _stop(proc: subprocess.Popen[Any]) -> None:
    """SIGINT is PostgreSQL's fast shutdown (SIGTERM would wait for every client to leave).
    We hold the child, so its PID cannot be recycled before we reap it."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(15)
    stop_child(proc)  # SIGTERM, then SIGKILL, if fast shutdown did not finish


def _run(
    argv: Sequence[str], user: pwd.struct_passwd | None, timeout: float = 60, **popen: Any
) -> str:
    if user is not None:
        popen.update(_as_user(user))
    proc = spawn(None, argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        stop_child(proc)
        raise ToolError(f"{argv[0]}: no answer within {timeout:g} s") from exc
    if proc.returncode != 0:
        raise ToolError(f"{' '.join(argv)} failed ({proc.returncode}): {err.strip()}")
    return out


def _as_user(user: pwd.struct_passwd) -> dict[str, Any]:
    """Switch to `user` in the child; without root we already are unprivileged and stay so."""
    if os.geteuid() != 0:
        return {}
    return {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}


def _version(name: str) -> tuple[int, ...]:
    return tuple(int(part) for part in name.split(".") if part.isdigit())


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""
