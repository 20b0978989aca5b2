"""vnet bench netconf: NETCONF latency and memory of the agent, against yuma123's netconfd.

Everything runs inside one network namespace made for the run
(``vnet-nb<hex>-host``, the agent's "physical host"): a real ``vnet agent run``
serving its default front-ends, and, for comparison, yuma123's ``netconfd``
behind a private ``sshd`` (own configuration, host key, port, PID file and a
client key pair, all in a temporary folder). The client is ncclient (TICK
lowered to 1 ms), one open session per server, connected from inside the
namespace; all traffic stays on that namespace's loopback.

Measured (paper 000, Table I gives 1.08 s / 0.04 s / 3.48 s for NETCONF):

- one VR (2 interfaces) created, retrieved (``get``, subtree filter on the
  router, state included) and deleted, one edit-config or get each;
- one edit-config creating ``--bulk`` VRs (and one deleting them);
- ``--vrs`` VRs loaded into both servers, then ``get-config`` of all of them,
  alternating between the two servers so that machine load hits both alike;
- VmRSS and VmHWM (``/proc/PID/status``) of the agent and of netconfd.

netconfd is started with ``--no-startup --target=running --superuser=root
--module=<vnet-router YANG>``; both netconfd and sshd run in a private mount
namespace (netconfd writes ``~/.yuma`` of the real user, so a temporary folder is
bind-mounted on /root; sshd needs /run/sshd, so it gets a private tmpfs on /run).
Nothing on the machine outside the namespace and the temporary folder is
touched; every process is stopped by PID, and the namespace and folder are
removed at the end, also after a failure.
"""

from __future__ import annotations

import contextlib
import math
import os
import secrets
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

import vnet
from vnet.bench.progress import BenchOptions, BenchProgress, bench_options
from vnet.bench.report import finish_run
from vnet.bench.results import BenchResult, tool_version
from vnet.bench.stats import percentile
from vnet.lab.sandbox import (
    HostSandbox,
    SandboxAgent,
    SandboxError,
    connect_netconf,
    log_tail,
)

NS = "urn:vnet:yang:vnet-router"
NC = "urn:ietf:params:xml:ns:netconf:base:1.0"
YANG_FILE = Path(vnet.__file__).resolve().parent / "model" / "yang" / "vnet-router@2026-11-22.yang"
NETCONF_PORT = 8830  # the agent, on the namespace's loopback
RESTCONF_PORT = 8443
NETCONFD_PORT = 1830  # sshd's port and netconfd's --port (they must match)
ADDRESS = "127.0.0.1"
USER, PASSWORD = "bench", "bench-" + secrets.token_hex(4)
PORTS_PER_NETWORK = 500  # a Linux bridge takes at most 1024 ports
OPS_INDEX, BULK_INDEX = 60001, 50001  # explicit VR indexes, so both servers hold the same data
RPC_TIMEOUT = 600.0  # seconds; loading 1000 VRs into the kernel on a busy machine is slow
START_TIMEOUT = 60.0


class NetconfBenchError(RuntimeError):
    """A setup step failed; the message says which and why."""


# -- the data: networks and VRs, the same XML for both servers -----------------------------------


def network_count(vrs: int) -> int:
    """Networks needed so that no bridge gets more than PORTS_PER_NETWORK ports (2 per VR pair)."""
    return 2 * max(1, math.ceil(vrs / PORTS_PER_NETWORK))


def networks_config(count: int) -> str:
    nets = "".join(
        f"<network><name>n{j}</name><tenant>bench</tenant><vni>{1000 + j}</vni>"
        f"<ipv4-prefix>10.{j}.0.0/16</ipv4-prefix></network>"
        for j in range(1, count + 1)
    )
    return f'<config><virtual-networks xmlns="{NS}">{nets}</virtual-networks></config>'


def _address(network: int, slot: int) -> str:
    """A unique host address in 10.<network>.0.0/16 for slot 0, 1, 2, ..."""
    return f"10.{network}.{slot // 200}.{slot % 200 + 1}/16"


def router_xml(name: str, index: int, slot: int, networks: int, op: str = "") -> str:
    """One VR with two interfaces in a pair of networks; `slot` spreads VRs over pairs."""
    pair = slot % (networks // 2)
    first, second = 2 * pair + 1, 2 * pair + 2
    where = slot // (networks // 2)
    attr = f' xmlns:nc="{NC}" nc:operation="{op}"' if op else ""
    if op == "delete":
        return f"<router{attr}><name>{name}</name></router>"
    return (
        f"<router{attr}><name>{name}</name><index>{index}</index>"
        f"<interface><name>eth0</name><network>n{first}</network>"
        f"<ipv4>{_address(first, where)}</ipv4></interface>"
        f"<interface><name>eth1</name><network>n{second}</network>"
        f"<ipv4>{_address(second, where)}</ipv4></interface></router>"
    )


def routers_config(routers: list[str]) -> str:
    return f'<config><routers xmlns="{NS}">{"".join(routers)}</routers></config>'


def one_router_filter(name: str) -> tuple[str, str]:
    return ("subtree", f'<routers xmlns="{NS}"><router><name>{name}</name></router></routers>')


@dataclass(frozen=True)
class Batch:
    """VRs named prefix1..prefixN with indexes first_index.., in slots 0..N-1."""

    prefix: str
    count: int
    first_index: int
    networks: int

    def names(self) -> list[str]:
        return [f"{self.prefix}{i + 1}" for i in range(self.count)]

    def create(self, start: int = 0, stop: int | None = None) -> str:
        stop = self.count if stop is None else stop
        return routers_config(
            [
                router_xml(
                    f"{self.prefix}{i + 1}", self.first_index + i, i, self.networks, "create"
                )
                for i in range(start, stop)
            ]
        )

    def delete(self, start: int = 0, stop: int | None = None) -> str:
        stop = self.count if stop is None else stop
        return routers_config(
            [
                router_xml(f"{self.prefix}{i + 1}", 0, i, self.networks, op="delete")
                for i in range(start, stop)
            ]
        )


# -- processes in our namespace ------------------------------------------------------------------


def memory_of(pid: int) -> dict[str, float]:
    """VmRSS and VmHWM of a process in MiB (empty if it is gone)."""
    out: dict[str, float] = {}
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return out
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(value.split()[0]) / 1024  # kB -> MiB
    return out


def children_of(pid: int) -> list[int]:
    found: list[int] = []
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError):
                text = Path(f"/proc/{pid}/task/{task}/children").read_text()
                found.extend(int(p) for p in text.split())
    return found


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


def connect(namespace: str, **kwargs: Any) -> Any:
    session = connect_netconf(namespace, **kwargs)
    session.timeout = RPC_TIMEOUT
    return session


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
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            try:
                return connect(
                    self.host.namespace,
                    port=NETCONFD_PORT,
                    username="root",
                    key_filename=str(self.dir / "client_key"),
                )
            except Exception as err:
                if time.monotonic() > deadline:
                    raise NetconfBenchError(
                        f"cannot open a NETCONF session with netconfd: {err}\n"
                        f"sshd: {log_tail(self.dir / 'sshd.log')}\n"
                        f"netconfd: {log_tail(self.dir / 'netconfd.log')}"
                    ) from err
                time.sleep(0.2)

    def stop(self) -> None:
        for proc in (self.sshd, self.server):
            if proc is not None:
                self.host.stop(proc)

    def log_warnings(self) -> list[str]:
        path = self.dir / "netconfd.log"
        text = path.read_text(errors="replace") if path.exists() else ""
        return [line.strip() for line in text.splitlines() if line.startswith(("Warning", "Error"))]


# -- measuring -------------------------------------------------------------------------------------


@dataclass
class Server:
    name: str  # the series: "vnet" or "netconfd"
    session: Any  # ncclient Manager
    pid: int


@dataclass(frozen=True)
class Plan:
    ops: int  # create/retrieve/remove cycles of one VR
    bulk: int  # VRs in the one-edit-config create
    vrs: int  # VRs loaded for get-config
    chunk: int  # VRs per edit-config when loading them
    repeat: int  # samples per bulk measurement
    netconfd: bool

    @property
    def networks(self) -> int:
        return network_count(max(self.vrs, self.bulk, 1))


def _timed(call: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    value = call()
    return time.perf_counter() - start, value


def _routers_in(reply: Any) -> list[str]:
    return [n.text for n in reply.data.iterfind(f".//{{{NS}}}router/{{{NS}}}name")]


class Runner:
    """Drives the servers through the plan, recording samples into `result`."""

    def __init__(
        self,
        plan: Plan,
        result: BenchResult,
        progress: BenchProgress,
        vr_namespaces: Callable[[], list[str]],
    ):
        self.plan = plan
        self.result = result
        self.progress = progress
        self.servers: list[Server] = []
        self.vr_namespaces = vr_namespaces  # the agent's VRs as the kernel has them
        self.failures: dict[str, int] = {}

    def check_kernel(self, expected: int, when: str) -> None:
        found = len(self.vr_namespaces())
        if found != expected:
            self.note(f"vnet: {found} VR namespaces in the kernel {when}, expected {expected}")

    def note(self, text: str) -> None:
        self.result.note(text)
        self.progress.log(text)

    def rpc(self, server: Server, what: str, call: Callable[[], Any]) -> tuple[float | None, Any]:
        """Time one RPC; a failed one becomes a note, not a sample."""
        from ncclient.operations import RPCError

        try:
            seconds, reply = _timed(call)
        except RPCError as err:
            # One note per kind of failure, with a count added at the end (see failure_notes).
            key = f"{server.name}: {what} failed: {err.tag}: {err.message}"
            if key not in self.failures:
                self.progress.log(key)
            self.failures[key] = self.failures.get(key, 0) + 1
            return None, None
        return seconds, reply

    def failure_notes(self) -> None:
        for key, times in self.failures.items():
            self.result.note(f"{key} ({times} time{'s' if times > 1 else ''}; not counted)")

    def record(
        self,
        metric: str,
        server: Server,
        x: str | int,
        seconds: float | None,
        scale: float = 1000.0,
    ) -> None:
        if seconds is not None:
            self.result.record(metric, server.name, seconds * scale, x=x)

    def memory(self, x: str) -> None:
        for s in self.servers:
            mem = memory_of(s.pid)
            if "VmRSS" in mem:
                self.result.record("memory", s.name, mem["VmRSS"], x=f"VmRSS, {x}")

    def peak_memory(self) -> None:
        for s in self.servers:
            mem = memory_of(s.pid)
            if "VmHWM" in mem:
                self.result.record("memory", s.name, mem["VmHWM"], x="VmHWM (peak of the run)")

    def edit(self, server: Server, config: str) -> Callable[[], Any]:
        return lambda: server.session.edit_config(target="running", config=config)

    def get_one(self, server: Server, name: str) -> Callable[[], Any]:
        return lambda: server.session.get(filter=one_router_filter(name))

    def get_config(self, server: Server) -> Callable[[], Any]:
        return lambda: server.session.get_config("running")

    # -- phases ------------------------------------------------------------------------------------

    def networks(self) -> None:
        for s in self.servers:
            s.session.edit_config(target="running", config=networks_config(self.plan.networks))

    def single_ops(self, warmup: int = 3) -> None:
        nets = self.plan.networks
        for k in range(-warmup, self.plan.ops):
            if k >= 0:
                self.progress.update(f"one VR: create/retrieve/remove {k + 1}/{self.plan.ops}")
            name = f"op{k + warmup + 1}"
            index = OPS_INDEX + k + warmup
            create = routers_config([router_xml(name, index, 0, nets, op="create")])
            delete = routers_config([router_xml(name, index, 0, nets, op="delete")])
            for s in self.servers:
                took, _ = self.rpc(s, "create one VR", self.edit(s, create))
                if took is None:
                    continue
                got, reply = self.rpc(
                    s,
                    "get one VR",
                    self.get_one(s, name),
                )
                if k == 0 and reply is not None:
                    self.check_retrieved(s, name, reply)
                gone, _ = self.rpc(s, "delete one VR", self.edit(s, delete))
                if k >= 0:
                    self.record("vr_op_latency", s, "create", took)
                    self.record("vr_op_latency", s, "retrieve", got)
                    self.record("vr_op_latency", s, "remove", gone)
            if k >= 0:
                self.progress.advance()

    def check_retrieved(self, s: Server, name: str, reply: Any) -> None:
        if _routers_in(reply) != [name]:
            self.note(f"{s.name}: get of {name} returned routers {_routers_in(reply)}")
        if s.name == "vnet":
            state = reply.data.findtext(f".//{{{NS}}}oper-state")
            if state != "running":
                self.note(f"vnet: {name} has oper-state {state!r}, expected 'running'")

    def bulk(self) -> None:
        batch = Batch("bk", self.plan.bulk, BULK_INDEX, self.plan.networks)
        create, delete = batch.create(), batch.delete()
        for r in range(self.plan.repeat):
            self.progress.update(
                f"one edit-config with {self.plan.bulk} VRs, {r + 1}/{self.plan.repeat}"
            )
            for s in self.servers:
                took, _ = self.rpc(s, f"create {self.plan.bulk} VRs", self.edit(s, create))
                if took is None:
                    continue
                if r == 0 and s.name == "vnet":
                    self.check_kernel(self.plan.bulk, f"after creating {self.plan.bulk} VRs")
                gone, _ = self.rpc(s, f"delete {self.plan.bulk} VRs", self.edit(s, delete))
                if r == 0 and s.name == "vnet":
                    self.check_kernel(0, f"after deleting {self.plan.bulk} VRs")
                self.record("bulk_edit", s, f"create {self.plan.bulk} VRs", took, scale=1.0)
                self.record("bulk_edit", s, f"remove {self.plan.bulk} VRs", gone, scale=1.0)
            self.progress.advance()

    def load(self) -> Batch:
        plan = self.plan
        batch = Batch("vr", plan.vrs, 1, plan.networks)
        chunks = [(i, min(i + plan.chunk, plan.vrs)) for i in range(0, plan.vrs, plan.chunk)]
        self.progress.update(f"loading {plan.vrs} VRs in {len(chunks)} edit-config(s)")
        for s in self.servers:
            total = 0.0
            for a, b in chunks:
                took, _ = self.rpc(s, f"create VRs {a + 1}..{b}", self.edit(s, batch.create(a, b)))
                if took is None:
                    raise NetconfBenchError(f"{s.name} refused VRs {a + 1}..{b}; see the notes")
                total += took
            self.record(
                "load", s, f"create {plan.vrs} VRs ({len(chunks)} edit-configs)", total, scale=1.0
            )
            reply = s.session.get_config(source="running")
            found = _routers_in(reply)
            self.result.parameters.setdefault("get_config_reply_bytes", {})[s.name] = len(
                reply.data_xml.encode()
            )
            if len(found) != plan.vrs:
                self.note(f"{s.name}: get-config shows {len(found)} VRs, expected {plan.vrs}")
            if s.name == "vnet":
                self.check_kernel(plan.vrs, f"after loading {plan.vrs} VRs")
        self.progress.advance()
        return batch

    def reads(self, batch: Batch) -> None:
        """get-config of everything and get of one VR, alternating servers per sample."""
        middle = batch.names()[batch.count // 2]
        for r in range(self.plan.repeat):
            self.progress.update(f"get-config of {self.plan.vrs} VRs, {r + 1}/{self.plan.repeat}")
            for s in self.servers:
                took, _ = self.rpc(s, "get-config", self.get_config(s))
                self.record("get_config", s, self.plan.vrs, took)
            for s in self.servers:
                took, _ = self.rpc(
                    s,
                    f"get one VR ({middle}) with {self.plan.vrs} VRs loaded",
                    self.get_one(s, middle),
                )
                self.record("vr_op_latency", s, f"retrieve, {self.plan.vrs} VRs loaded", took)
            self.progress.advance()

    def unload(self, batch: Batch) -> None:
        plan = self.plan
        chunks = [(i, min(i + plan.chunk, plan.vrs)) for i in range(0, plan.vrs, plan.chunk)]
        self.progress.update(f"removing {plan.vrs} VRs")
        for s in self.servers:
            total = 0.0
            for a, b in chunks:
                took, _ = self.rpc(s, f"delete VRs {a + 1}..{b}", self.edit(s, batch.delete(a, b)))
                if took is None:
                    break
                total += took
            else:
                self.record(
                    "load",
                    s,
                    f"remove {plan.vrs} VRs ({len(chunks)} edit-configs)",
                    total,
                    scale=1.0,
                )
                if s.name == "vnet":
                    self.check_kernel(0, f"after removing the {plan.vrs} VRs")
        self.progress.advance()

    def steps(self) -> int:
        return self.plan.ops + 2 * self.plan.repeat + 2


def declare_metrics(result: BenchResult, plan: Plan) -> None:
    result.declare(
        "vr_op_latency",
        "ms",
        x_label="operation on one VR",
        plot="bar",
        description="One VR with 2 interfaces: create = one edit-config, retrieve = get with a "
        "subtree filter on the router (state included), remove = one edit-config deleting it. "
        "Paper 000, Table I (NETCONF): create 1.08 s, retrieve 0.04 s, remove 3.48 s.",
    )
    result.declare(
        "bulk_edit",
        "s",
        x_label="one edit-config",
        plot="bar",
        description=f"One edit-config creating {plan.bulk} VRs (2 interfaces each), and one "
        "deleting them again.",
    )
    result.declare(
        "get_config",
        "ms",
        x_label="VRs in the datastore",
        plot="bar",
        description=f"get-config of the running datastore holding {plan.vrs} VRs (the same data "
        "in both servers), samples alternating between the servers.",
    )
    result.declare(
        "load",
        "s",
        x_label="",
        plot="bar",
        description=f"Loading the {plan.vrs} VRs with edit-configs of {plan.chunk} VRs, and "
        "removing them (sum over the edit-configs; one sample per run).",
    )
    result.declare(
        "memory",
        "MiB",
        x_label="",
        plot="bar",
        description="VmRSS and VmHWM from /proc/PID/status: the vnet agent process, and the "
        "netconfd process (its sshd not counted).",
    )


def goal_notes(result: BenchResult, plan: Plan) -> list[str]:
    """One line per goal of the agent: figure measured, met or not."""
    lines = []

    def check(metric: str, x: Any, what: str, goal: float, unit: str, stat: str = "p50") -> None:
        m = result.get(metric, "vnet", x)
        if m is None or not m.samples:
            lines.append(f"goal {what} <= {goal:g} {unit}: no samples")
            return
        value = percentile(m.samples, 50) if stat == "p50" else max(m.samples)
        verdict = "met" if value <= goal else "NOT met"
        lines.append(f"goal {what} <= {goal:g} {unit}: {value:.3g} {unit} ({stat}), {verdict}")

    check("vr_op_latency", "create", "create one VR", 20, "ms")
    check("vr_op_latency", "retrieve", "retrieve one VR", 3, "ms")
    check("vr_op_latency", "remove", "remove one VR", 20, "ms")
    suffix = "" if plan.vrs == 1000 else f" (goal is for 1000 VRs; measured with {plan.vrs})"
    check("get_config", plan.vrs, f"get-config of {plan.vrs} VRs{suffix}", 200, "ms")
    suffix = "" if plan.bulk == 100 else f" (goal is for 100 VRs; measured with {plan.bulk})"
    check(
        "bulk_edit",
        f"create {plan.bulk} VRs",
        f"one edit-config creating {plan.bulk} VRs{suffix}",
        2,
        "s",
    )
    check("memory", "VmHWM (peak of the run)", "agent VmHWM", 80, "MiB", stat="max")
    return lines


def run_netconf_bench(plan: Plan, bench: BenchOptions) -> BenchResult:
    tools = {
        "ncclient": _module_version("ncclient"),
        "netconfd": _dpkg_version("netconfd"),
        "sshd": tool_version(["/usr/sbin/sshd", "-V"]),
    }
    parameters = {
        "quick": bench.quick,
        "repeat": plan.repeat,
        "ops": plan.ops,
        "bulk": plan.bulk,
        "vrs": plan.vrs,
        "chunk": plan.chunk,
        "networks": plan.networks,
        "netconfd": plan.netconfd,
        "ncclient_tick_s": 0.001,
        "load_average_at_start": list(os.getloadavg()),
    }
    result = BenchResult.start(
        "netconf",
        parameters=parameters,
        tools=tools,
        baseline="netconfd" if plan.netconfd else None,
        description="NETCONF over SSH: the vnet agent (all default front-ends running) and "
        "yuma123 netconfd, one ncclient session each, in one namespace on loopback.",
    )
    declare_metrics(result, plan)
    host = HostSandbox(scope="nb" + secrets.token_hex(3))
    result.parameters["scope"] = host.scope
    agent = SandboxAgent(
        host,
        {"ports": {"netconf": NETCONF_PORT, "restconf": RESTCONF_PORT}},
        user=USER,
        password=PASSWORD,
    )
    netconfd = Netconfd(host)
    progress = BenchProgress("netconf", total=None, quiet=bench.quiet)
    runner = Runner(plan, result, progress, host.vr_namespaces)
    with progress:
        progress.update(total=runner.steps())
        try:
            host.create()
            progress.update("starting the agent")
            try:
                agent.start()
            except (NetconfBenchError, SandboxError) as err:
                runner.note(
                    f"the agent did not start with its default front-ends ({err}); "
                    "retrying with --frontends netconf"
                )
                agent.stop()
                agent.start("netconf")
            assert agent.proc is not None
            running = agent.frontends()
            result.parameters["agent_frontends"] = running
            runner.note(f"agent front-ends running: {', '.join(running) or 'unknown'}")
            kids = children_of(agent.proc.pid)
            if kids:
                runner.note(f"the agent has child processes {kids}; memory is the main process's")
            runner.servers.append(Server("vnet", agent.netconf(timeout=30), agent.proc.pid))
            if plan.netconfd:
                progress.update("starting sshd and netconfd")
                netconfd.start()
                assert netconfd.server is not None
                runner.servers.append(Server("netconfd", netconfd.connect(), netconfd.server.pid))
                for line in netconfd.log_warnings():
                    runner.note(f"netconfd log: {line}")
            runner.memory("idle, no VRs")
            progress.advance()
            runner.networks()
            runner.single_ops()
            runner.bulk()
            batch = runner.load()
            runner.memory(f"{plan.vrs} VRs loaded")
            runner.reads(batch)
            runner.unload(batch)
            runner.peak_memory()
        finally:
            runner.failure_notes()
            for s in runner.servers:
                with contextlib.suppress(Exception):
                    s.session.close_session()
            try:
                netconfd.stop()
                agent.stop()
            finally:  # whatever failed above, everything started here is stopped by PID
                for problem in host.cleanup():
                    runner.note(f"cleanup: {problem}")
    result.parameters["load_average_at_end"] = list(os.getloadavg())
    for line in goal_notes(result, plan):
        result.note(line)
    for line in context_notes(result, plan, netconfd):
        result.note(line)
    return result


def context_notes(result: BenchResult, plan: Plan, netconfd: Netconfd) -> list[str]:
    """How to read the figures: the ratio asked for, the reference's setup, the machine."""
    lines = []
    ours, theirs = (result.get("get_config", s, plan.vrs) for s in ("vnet", "netconfd"))
    if ours and theirs and ours.samples and theirs.samples:
        a, b = ours.summary(), theirs.summary()
        lines.append(
            f"get-config of {plan.vrs} VRs, vnet / netconfd: {a.mean / b.mean:.2f} (means "
            f"{a.mean:.1f} / {b.mean:.1f} ms), {a.p50 / b.p50:.2f} (p50s)"
        )
    if plan.netconfd:
        flags = " ".join(netconfd.command()[1:])
        lines.append(
            f"netconfd (yuma123) ran as `netconfd {flags}` with the unchanged vnet-router "
            f"module, behind a private sshd on port {NETCONFD_PORT} (root, key pair made for "
            "the run) whose netconf subsystem is netconf-subsystem; its replies are indented "
            "(its default) and its get-config also returns an empty nacm container"
        )
    lines.append(
        "remove times end with the reply; the kernel finishes tearing down deleted "
        "namespaces asynchronously after it"
    )
    start = result.parameters.get("load_average_at_start") or []
    if start:
        lines.append(
            f"1-minute load average {start[0]:.1f} at the start on {os.cpu_count()} CPUs: "
            "figures from a busy machine are upper bounds"
        )
    return lines


def _module_version(name: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return None


def _dpkg_version(package: str) -> str | None:
    try:
        done = subprocess.run(
            ["dpkg-query", "-W", "-f=${Version}", package],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    return done.stdout.strip() or None


def _terminate(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


@click.command("netconf")
@bench_options(duration=1.0, repeat=10, quick_repeat=3)
@click.option(
    "--vrs",
    type=click.IntRange(1, 5000),
    default=None,
    help="VRs loaded for get-config [default: 1000; 100 with --quick].",
)
@click.option(
    "--bulk",
    type=click.IntRange(1, 5000),
    default=100,
    show_default=True,
    help="VRs created by the one big edit-config.",
)
@click.option(
    "--ops",
    type=click.IntRange(1, 5000),
    default=None,
    help="Create/retrieve/remove cycles of one VR [default: 200; 20 with --quick].",
)
@click.option(
    "--chunk",
    type=click.IntRange(1, 5000),
    default=100,
    show_default=True,
    help="VRs per edit-config when loading the --vrs VRs.",
)
@click.option("--no-netconfd", is_flag=True, help="Skip the comparison with yuma123 netconfd.")
def netconf(
    bench: BenchOptions, vrs: int | None, bulk: int, ops: int | None, chunk: int, no_netconfd: bool
) -> None:
    """NETCONF latency and memory of the agent, and get-config against yuma123's netconfd.

    Starts its own agent (and netconfd behind a private sshd) in a namespace made for
    the run. --repeat is the number of samples of each bulk measurement (one
    edit-config of --bulk VRs, get-config of --vrs VRs); --ops the number of single-VR
    create/retrieve/remove cycles. --duration is not used.
    """
    if os.geteuid() != 0:
        raise click.ClickException("this bench creates a network namespace and needs root")
    use_netconfd = not no_netconfd
    why_not = netconfd_missing() if use_netconfd else None
    if why_not:
        use_netconfd = False
    plan = Plan(
        ops=ops if ops is not None else (20 if bench.quick else 200),
        bulk=bulk,
        vrs=vrs if vrs is not None else (100 if bench.quick else 1000),
        chunk=chunk,
        repeat=bench.repeat,
        netconfd=use_netconfd,
    )
    from ncclient import NCClientError

    # SIGTERM (a CI timeout, kill PID) unwinds like Ctrl-C, so the cleanup still runs.
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        result = run_netconf_bench(plan, bench)
    except (NetconfBenchError, SandboxError) as err:
        raise click.ClickException(str(err)) from None
    except NCClientError as err:
        raise click.ClickException(f"NETCONF client: {type(err).__name__}: {err}") from None
    finally:
        signal.signal(signal.SIGTERM, previous)
    if why_not:
        result.note(f"netconfd comparison skipped: {why_not}")
    finish_run(result, bench)
