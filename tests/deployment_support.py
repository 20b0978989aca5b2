"""Stand-ins for real machines, built the way an operator builds real ones (docs/deploy.md),
with nothing of `vnet lab`: each "machine" a bare network namespace with its own /etc and
/var folders, joined to the others by veth pairs as underlay NICs (named ul-<peer>), to a
management switch by one more, and the services started as their systemd units say:
ExecStart (the package's path mapped to the test's install, /etc to the machine's folder),
the unit's CapabilityBoundingSet and User applied with setpriv, readiness awaited on
$NOTIFY_SOCKET as systemd's Type=notify does."""

from __future__ import annotations

import configparser
import contextlib
import os
import shlex
import shutil
import socket
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from vnet.tools import processes

UNITS = Path(__file__).resolve().parents[1] / "src" / "vnet" / "deploy" / "systemd"
ETC_EXAMPLES = UNITS.parent / "etc"
INSTALLED = "/opt/vnet"  # the units' install prefix (docs/deploy.md)
START_TIMEOUT = 120.0


def ip(*argv: str) -> None:
    subprocess.run(["ip", *argv], check=True, capture_output=True, timeout=30)


def inside(ns: str, *argv: str) -> subprocess.CompletedProcess[str]:
    """Run a command on a machine, as its operator would in a shell there."""
    done = processes.run(ns, argv, timeout=60)
    if done.returncode != 0:
        raise AssertionError(f"{shlex.join(argv)} in {ns}: {done.returncode}\n{done.stderr}")
    return done


@dataclass
class Machine:
    """One machine: its namespace and its root folder (etc/vnet, var/lib/vnet)."""

    name: str
    ns: str
    root: Path

    @property
    def etc(self) -> Path:
        return self.root / "etc" / "vnet"

    @property
    def var(self) -> Path:
        return self.root / "var" / "lib" / "vnet"


@dataclass
class Site:
    """Every namespace of one test, by a prefix of its own; `close` removes exactly those."""

    tag: str
    root: Path
    machines: dict[str, Machine] = field(default_factory=dict)
    children: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def machine(self, name: str) -> Machine:
        m = Machine(name, f"{self.tag}-{name}", self.root / name)
        ip("netns", "add", m.ns)
        ip("-n", m.ns, "link", "set", "lo", "up")
        m.etc.mkdir(parents=True)
        m.var.mkdir(parents=True)
        self.machines[name] = m
        return m

    def cable(self, a: Machine, b: Machine, a_port: str, b_port: str, mtu: int = 1500) -> None:
        """A veth pair: `a_port` on a, `b_port` on b, both up."""
        ip("-n", a.ns, "link", "add", a_port, "mtu", str(mtu), "type", "veth",
           "peer", "name", b_port, "mtu", str(mtu), "netns", b.ns)  # fmt: skip
        ip("-n", a.ns, "link", "set", a_port, "up")
        ip("-n", b.ns, "link", "set", b_port, "up")

    def start(self, argv: list[str], ns: str, log: Path, notify: Path) -> subprocess.Popen[bytes]:
        with log.open("ab") as out:
            env = {**os.environ, "NOTIFY_SOCKET": str(notify)}
            env.pop("PYTHONPATH", None)  # the installed package only, not the checkout's
            proc = processes.spawn(ns, argv, stdout=out, stderr=subprocess.STDOUT, env=env)
        self.children.append(proc)
        return proc

    def close(self) -> None:
        for proc in reversed(self.children):
            processes.stop_child(proc, grace=15)
        listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        for line in listed.splitlines():
            name = line.split()[0] if line.split() else ""
            if name.startswith(self.tag + "-"):
                subprocess.run(["ip", "netns", "del", name], check=False)


def unit(name: str) -> configparser.SectionProxy:
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read_string((UNITS / name).read_text())
    return parser["Service"]


def service_argv(
    name: str, prefix: Path, etc: Path, run_as: tuple[str, str] | None = None
) -> list[str]:
    """The unit's ExecStart under its CapabilityBoundingSet (and User, as `run_as`)."""
    svc = unit(name)
    command = svc["ExecStart"].replace(INSTALLED, str(prefix)).replace("/etc/vnet", str(etc))
    caps = [c.removeprefix("CAP_").lower() for c in svc["CapabilityBoundingSet"].split()]
    bounding = ",".join(["-all", *(f"+{c}" for c in caps)])
    argv = ["setpriv", f"--bounding-set={bounding}"]
    if run_as is not None:
        user, group = run_as
        argv += [f"--reuid={user}", f"--regid={group}", "--clear-groups", "--inh-caps=-all"]
    return [*argv, "--", *shlex.split(command)]


@contextlib.contextmanager
def notify_socket(path: Path) -> Iterator[socket.socket]:
    """What systemd listens on for a Type=notify service's READY=1."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(str(path))
        os.chmod(path, 0o777)  # a service that dropped root may still tell it is ready
        yield sock


def wait_ready(sock: socket.socket, proc: subprocess.Popen[bytes], log: Path) -> str:
    """READY=1 from `proc` within START_TIMEOUT s; its log when it exits or stays silent."""
    sock.settimeout(1.0)
    for _ in range(int(START_TIMEOUT)):
        with contextlib.suppress(TimeoutError):
            message = sock.recv(4096).decode()
            if message.startswith("READY=1"):
                return message
        if proc.poll() is not None:
            break
    raise AssertionError(f"{proc.args} not ready (exit {proc.poll()}):\n{log.read_text()[-3000:]}")


def owned_by(path: Path, user: str, group: str) -> None:
    """chown -R, as an operator gives a service user its folders."""
    for p in [path, *path.rglob("*")]:
        shutil.chown(p, user, group)
