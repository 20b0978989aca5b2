"""Open vSwitch with the userspace datapath, private to one network namespace.

ovsdb-server and ovs-vswitchd run from a run directory of their own (never
the system's), inside a namespace the caller made, and are stopped by PID
with the start-time check. Bridge br0 has a port per interface given.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from vnet.tools import processes
from vnet.tools.errors import ToolError
from vnet.tools.wait import WaitTimeout, wait_until

OVS_SCHEMA = Path("/usr/share/openvswitch/vswitch.ovsschema")
DAEMONS = ("ovsdb-server", "ovs-vswitchd")
TOOLS = ("ovsdb-tool", "ovsdb-server", "ovs-vswitchd", "ovs-vsctl", "ip")
BRIDGE = "br0"


def ovs_missing() -> str | None:
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing:
        return f"{', '.join(missing)} not installed (apt-get install openvswitch-switch iproute2)"
    return None


@dataclass
class OvsSwitch:
    """ovsdb-server + ovs-vswitchd in namespace `ns`, state in `dir` (which it does not own)."""

    ns: str
    dir: Path
    daemons: dict[str, processes.ProcessRecord] = field(default_factory=dict)

    @property
    def env(self) -> dict[str, str]:
        d = str(self.dir)
        private = {f"OVS_{key}": d for key in ("RUNDIR", "DBDIR", "LOGDIR", "SYSCONFDIR")}
        return {**os.environ, **private}

    def in_ns(self, *cmd: str) -> list[str]:
        """`cmd` run inside the namespace (as iproute2 does it: /sys is the namespace's too)."""
        return ["ip", "netns", "exec", self.ns, *cmd]

    @property
    def pids(self) -> dict[str, int]:
        return {name: rec.pid for name, rec in self.daemons.items()}

    def vsctl(self, *args: str, timeout: float = 20) -> str:
        argv = ["ovs-vsctl", f"--db=unix:{self.dir}/db.sock", f"--timeout={int(timeout)}", *args]
        return processes.check_output(argv, env=self.env, timeout=timeout + 5)

    def _start_daemon(self, name: str, *args: str) -> None:
        d = self.dir
        argv = [name, *args, f"--pidfile={d}/{name}.pid", f"--log-file={d}/{name}.log", "--detach"]
        processes.check_output(self.in_ns(*argv), env=self.env)
        pid = self._read_pid(d / f"{name}.pid")
        rec = processes.record_pid(pid, name)
        if rec is None:
            raise ToolError(f"{name} (PID {pid}) exited right after starting; see {d}/{name}.log")
        self.daemons[name] = rec

    @staticmethod
    def _read_pid(path: Path, timeout: float = 10) -> int:
        def read() -> int | None:
            try:
                return int(path.read_text().strip())
            except (FileNotFoundError, ValueError):
                return None

        try:
            return wait_until(read, timeout, f"PID file {path}")
        except WaitTimeout as err:
            raise ToolError(str(err)) from None

    def start(self, ports: dict[str, int]) -> None:
        """Both daemons, then bridge br0 with each interface at its OpenFlow port number."""
        if problem := ovs_missing():
            raise ToolError(problem)
        d = self.dir
        processes.check_output(
            ["ovsdb-tool", "create", f"{d}/conf.db", str(OVS_SCHEMA)], env=self.env
        )
        self._start_daemon("ovsdb-server", f"{d}/conf.db", f"--remote=punix:{d}/db.sock")
        self.vsctl("--no-wait", "init")
        self._start_daemon("ovs-vswitchd", f"unix:{d}/db.sock")
        bridge = ["add-br", BRIDGE, "--", "set", "bridge", BRIDGE, "datapath_type=netdev"]
        bridge += ["fail_mode=secure", "protocols=OpenFlow10,OpenFlow13"]
        bridge += ["other-config:disable-in-band=true"]
        for iface, ofport in ports.items():
            bridge += ["--", "add-port", BRIDGE, iface]
            bridge += ["--", "set", "Interface", iface, f"ofport_request={ofport}"]
        self.vsctl(*bridge)

    def set_controllers(self, ports: list[int]) -> None:
        """Point br0 at tcp:127.0.0.1:PORT for each port (one connection each)."""
        args: list[str] = []
        ids = []
        for i, port in enumerate(ports):
            ids.append(f"@c{i}")
            args += ["--", f"--id=@c{i}", "create", "Controller", f'target="tcp:127.0.0.1:{port}"']
            args += ["max_backoff=1000", "inactivity_probe=0", "connection_mode=out-of-band"]
        self.vsctl(*args, "--", "set", "bridge", BRIDGE, f"controller=[{','.join(ids)}]")

    def clear_controllers(self) -> None:
        self.vsctl("del-controller", BRIDGE)

    def stop(self) -> None:
        """Stop the daemons this switch started, by PID; never any other OVS on the machine."""
        for name in reversed(DAEMONS):
            rec = self.daemons.pop(name, None)
            if rec is not None:
                processes.stop(rec, grace=5.0)
