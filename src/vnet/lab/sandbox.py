"""A physical host of its own for tests and benchmarks: a namespace, a folder,
and a real `vnet agent` (or other servers) running inside.

Everything started here is a child stopped by PID; cleanup removes what the
agent made (objects marked with the sandbox's scope), the namespace and the
folder, and reports anything it could not remove.
"""

from __future__ import annotations

import contextlib
import dataclasses
import secrets
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vnet.model.agent_config import AgentConfig
from vnet.substrate import Kernel, KernelState, Placement, converge, nsfs
from vnet.tools import processes
from vnet.tools.wait import WaitTimeout, wait_until

ADDRESS = "127.0.0.1"
START_TIMEOUT = 60.0


class SandboxError(RuntimeError):
    pass


def log_tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


@dataclass
class HostSandbox:
    """A namespace standing for one physical host, and a temporary folder."""

    scope: str = field(default_factory=lambda: "sbx" + secrets.token_hex(3))
    dir: Path = field(init=False)
    children: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix=f"vnet-{self.scope}-"))

    @property
    def prefix(self) -> str:
        return f"vnet-{self.scope}-"

    @property
    def namespace(self) -> str:
        return f"vnet-{self.scope}-host"

    def create(self) -> None:
        nsfs.create(self.namespace)
        subprocess.run(["ip", "-n", self.namespace, "link", "set", "lo", "up"], check=True)

    def vr_namespaces(self) -> list[str]:
        return [n for n in nsfs.list_names(self.prefix) if n != self.namespace]

    def spawn(self, argv: list[str], log: Path) -> subprocess.Popen[bytes]:
        with log.open("ab") as out:
            proc = processes.spawn(
                self.namespace, argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )
        self.children.append(proc)
        return proc

    def stop(self, proc: subprocess.Popen[bytes], grace: float = 10) -> None:
        processes.stop_child(proc, grace=grace)

    def wait(
        self,
        what: str,
        ready: Any,
        proc: subprocess.Popen[bytes],
        log: Path,
        timeout: float = START_TIMEOUT,
    ) -> None:
        def exited() -> str | None:
            return None if proc.poll() is None else f"exited with {proc.returncode}"

        try:
            wait_until(ready, timeout, what, interval=0.05, give_up=exited)
        except WaitTimeout:
            if reason := exited():
                raise SandboxError(f"{what} {reason}:\n{log_tail(log)}") from None
            raise SandboxError(f"{what} not ready within {timeout:g} s:\n{log_tail(log)}") from None

    def cleanup(self) -> list[str]:
        """Stop what we started, remove what the agent made, the namespace and the folder."""
        problems: list[str] = []
        for proc in reversed(self.children):
            try:
                processes.stop_child(proc, grace=10)
            except OSError as err:
                problems.append(f"stopping PID {proc.pid}: {err}")
        # Whatever still runs in our namespace was started by us (say, sshd's session
        # children): stop it by PID, its start time checked.
        for pid in nsfs.pids_inside_many([self.namespace]).get(self.namespace, []):
            record = processes.ProcessRecord(pid, processes.start_time(pid) or 0, "leftover")
            if processes.stop(record, grace=3):
                problems.append(f"PID {pid} was still running in {self.namespace}; stopped it")
        try:
            with Kernel() as k:
                converge(k, KernelState(), Placement(self.scope, self.prefix))
        except Exception as err:  # cleanup goes on; the caller reports what was left
            problems.append(f"removing the agent's VRs: {err}")
        if nsfs.exists(self.namespace):
            nsfs.remove(self.namespace)
        for name in nsfs.list_names(self.prefix):
            with contextlib.suppress(OSError):
                nsfs.remove(name)
        if nsfs.list_names(self.prefix):
            problems.append(f"namespaces left behind: {nsfs.list_names(self.prefix)}")
        shutil.rmtree(self.dir, ignore_errors=True)
        return problems


@dataclass
class SandboxAgent:
    """`vnet agent run` inside a HostSandbox; `settings` merge into its configuration."""

    host: HostSandbox
    settings: dict[str, Any] = field(default_factory=dict)
    user: str = "admin"
    password: str = field(default_factory=lambda: secrets.token_hex(8))
    proc: subprocess.Popen[bytes] | None = None

    @property
    def state_dir(self) -> Path:
        return self.host.dir / "agent"

    @property
    def log(self) -> Path:
        return self.state_dir / "agent.log"

    @property
    def config(self) -> AgentConfig:
        return AgentConfig.model_validate(
            {
                "host": "h1",
                "address": ADDRESS,
                "state_dir": str(self.state_dir),
                "scope": self.host.scope,
                "namespace_prefix": self.host.prefix,
                "users": [{"name": self.user, "password": self.password}],
                **self.settings,
            }
        )

    @property
    def ports(self) -> dict[str, int]:
        return self.config.ports.model_dump()

    def start(self, frontends: str | None = None) -> None:
        self.state_dir.mkdir(exist_ok=True)
        path = self.state_dir / "agent.yaml"
        path.write_text(self.config.model_dump_json())  # JSON is YAML
        ready = self.config.ready_path
        ready.unlink(missing_ok=True)  # a killed agent leaves it behind
        argv = [*processes.python_module("vnet"), "agent", "run", "--config", str(path)]
        if frontends:
            argv += ["--frontends", frontends]
        self.proc = self.host.spawn(argv, self.log)
        self.host.wait("vnet agent", ready.exists, self.proc, self.log)

    def stop(self, grace: float = 10) -> None:
        if self.proc is not None:
            processes.stop_child(self.proc, grace=grace)
            self.config.ready_path.unlink(missing_ok=True)

    def frontends(self) -> list[str]:
        """The front-ends the agent says it serves (its ready file); none unless ready."""
        ready = self.config.ready()
        return ready.frontends if ready else []

    def rss_mb(self, field_name: str = "VmRSS") -> float | None:
        if self.proc is None:
            return None
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
                if line.startswith(field_name + ":"):
                    return int(line.split()[1]) / 1024
        return None

    def netconf(self, timeout: float = 30) -> Any:
        return connect_netconf(
            self.host.namespace,
            port=self.ports["netconf"],
            username=self.user,
            password=self.password,
            timeout=timeout,
        )


def connect_netconf(
    namespace: str,
    port: int,
    username: str,
    password: str | None = None,
    timeout: float = 30,
    key_filename: str | None = None,
) -> Any:
    """An ncclient session opened from inside `namespace` (its socket stays there)."""
    from vnet.client import Endpoint, connect_manager

    ep = Endpoint(ADDRESS, port, username, password, namespace, timeout=timeout)
    return connect_manager(dataclasses.replace(ep, key_file=key_filename))
