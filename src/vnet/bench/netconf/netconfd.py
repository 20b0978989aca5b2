"""yuma123 netconfd behind a private sshd, in the bench namespace: the reference server."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import vnet
from vnet.bench.client import connect
from vnet.bench.netconf import NetconfBenchError
from vnet.lab.sandbox import (
    HostSandbox,
    log_tail,
)
from vnet.tools.wait import WaitTimeout, wait_until

YANG_FILE = Path(vnet.__file__).resolve().parent / "model" / "yang" / "vnet-router@2026-11-22.yang"
NETCONFD_PORT = 1830  # sshd's port and netconfd's --port (they must match)
ADDRESS = "127.0.0.1"
START_TIMEOUT = 60.0


def _run(cmd: list[str], timeout: float = 30) -> str:
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError as err:
        raise NetconfBenchError(f"{cmd[0]}: not installed") from err
    except subprocess.TimeoutExpired as err:
        raise NetconfBenchError(f"{' '.join(cmd)}: no answer within {timeout:g} s") from err
    if done.returncode != 0:
        raise NetconfBenchError(
            f"{' '.join(cmd)} failed ({done.returncode}): {done.stderr.strip()}"
        )
    return done.stdout


# -- the two servers -------------------------------------------------------------------------------


SSHD_CONFIG = """\
Port {port}
ListenAddress {address}
HostKey {dir}/ssh_host_ed25519_key
PidFile {dir}/sshd.pid
AuthorizedKeysFile {dir}/authorized_keys
PermitRootLogin prohibit-password
AllowUsers root
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PermitTTY no
X11Forwarding no
AllowTcpForwarding no
AllowAgentForwarding no
PrintMotd no
LogLevel INFO
Subsystem netconf "/usr/sbin/netconf-subsystem --ncxserver-sockname={port}@{sock}"
"""


def netconfd_missing() -> str | None:
    """Why the netconfd comparison cannot run here, or None."""
    missing = [
        tool
        for tool in ("/usr/sbin/netconfd", "/usr/sbin/netconf-subsystem", "/usr/sbin/sshd")
        if not os.access(tool, os.X_OK)
    ]
    missing += [t for t in ("ssh-keygen", "unshare", "mount") if shutil.which(t) is None]
    if missing:
        return (
            f"not installed: {', '.join(missing)} "
            "(apt-get install netconfd openssh-server openssh-client)"
        )
    return None


@dataclass
class Netconfd:
    """yuma123 netconfd behind a private sshd, both in the bench namespace."""

    host: HostSandbox
    module: Path = YANG_FILE
    sshd: subprocess.Popen[bytes] | None = None
    server: subprocess.Popen[bytes] | None = None

    @property
    def dir(self) -> Path:
        return self.host.dir / "netconfd"

    @property
    def sock(self) -> Path:
        return self.dir / "ncxserver.sock"

    def command(self) -> list[str]:
        return [
            "/usr/sbin/netconfd",
            "--no-startup",
            "--target=running",
            f"--port={NETCONFD_PORT}",
            f"--ncxserver-sockname={self.sock}",
            "--superuser=root",
            f"--module={self.module}",
            f"--log={self.dir / 'netconfd.log'}",
        ]

    def start(self) -> None:
        import shlex

        d = self.dir
        d.mkdir()
        home = d / "root"  # netconfd's ~/.yuma lands here, not in the real /root
        home.mkdir(mode=0o700)
        for key in ("ssh_host_ed25519_key", "client_key"):
            _run(
                [
                    "ssh-keygen",
                    "-q",
                    "-t",
                    "ed25519",
                    "-N",
                    "",
                    "-C",
                    "vnet-bench",
                    "-f",
                    str(d / key),
                ]
            )
        shutil.copy(d / "client_key.pub", d / "authorized_keys")
        (d / "sshd_config").write_text(
            SSHD_CONFIG.format(port=NETCONFD_PORT, address=ADDRESS, dir=d, sock=self.sock)
        )
        log = d / "netconfd.out"
        script = f"mount --bind {shlex.quote(str(home))} /root && exec {shlex.join(self.command())}"
        self.server = self.host.spawn(
            ["unshare", "--mount", "--propagation", "private", "sh", "-c", script], log
        )
        self.host.wait("netconfd", self.sock.exists, self.server, d / "netconfd.log")
        # sshd insists on /run/sshd; a private tmpfs on /run gives it one without
        # touching the machine's /run.
        config = str(d / "sshd_config")
        check = shlex.join(["/usr/sbin/sshd", "-t", "-f", config])
        sshd = shlex.join(["/usr/sbin/sshd", "-D", "-f", config, "-E", str(d / "sshd.log")])
        script = (
            "mount -t tmpfs -o mode=0755,size=1m vnet-bench /run && mkdir -m 0755 /run/sshd "
            f"&& {check} && exec {sshd}"
        )
        self.sshd = self.host.spawn(
            ["unshare", "--mount", "--propagation", "private", "sh", "-c", script], log
        )
        self.host.wait("sshd", (d / "sshd.pid").exists, self.sshd, d / "sshd.log")

    def connect(self) -> Any:
        """A session, as soon as sshd and netconfd accept one (they take a moment)."""
        errors: list[Exception] = []

        def session() -> Any:
            try:
                return connect(
                    self.host.namespace,
                    port=NETCONFD_PORT,
                    username="root",
                    key_filename=str(self.dir / "client_key"),
                )
            except Exception as err:
                errors.append(err)
                return None

        try:
            return wait_until(session, START_TIMEOUT, "a NETCONF session with netconfd", 0.2)
        except WaitTimeout:
            raise NetconfBenchError(
                f"cannot open a NETCONF session with netconfd: {errors[-1]}\n"
                f"sshd: {log_tail(self.dir / 'sshd.log')}\n"
                f"netconfd: {log_tail(self.dir / 'netconfd.log')}"
            ) from errors[-1]

    def stop(self) -> None:
        for proc in (self.sshd, self.server):
            if proc is not None:
                self.host.stop(proc)

    def log_warnings(self) -> list[str]:
        path = self.dir / "netconfd.log"
        text = path.read_text(errors="replace") if path.exists() else ""
        return [line.strip() for line in text.splitlines() if line.startswith(("Warning", "Error"))]
