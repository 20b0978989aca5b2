"""A lab: several emulated physical hosts on this machine, from one topology file.

`up` applies the file (re-running it with an edited file changes only the
difference), `down` removes everything marked with the lab's name, also
after a crash, and `status` compares the kernel with the file.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from vnet.lab import agents
from vnet.lab import controller as lab_controller
from vnet.lab import record as records  # records.RECORD_DIR: read at each use (tests move it)
from vnet.lab.record import (
    AgentRecord,
    LabError,
    LabRecord,
    read_record,
    record_path,
    write_record,
)
from vnet.lab.topology_file import load_topology
from vnet.model import Topology
from vnet.model.management import host_address
from vnet.substrate import (
    Fault,
    Kernel,
    KernelState,
    Op,
    Placement,
    Progress,
    converge,
    lab_placement,
    namespace,
    nsfs,
    observe,
    plan,
    realize,
)
from vnet.substrate.kernel import NotANamespace
from vnet.tools import cgroupfs, frr, processes
from vnet.tools.durable import remove_with_staging


@dataclass
class Timings:
    steps: dict[str, float] = field(default_factory=dict)

    def time(self, name: str, since: float) -> float:
        now = time.perf_counter()
        self.steps[name] = now - since
        return now


@dataclass
class UpResult:
    topology: Topology
    ops: list[Op]
    timings: Timings
    desired: KernelState


@dataclass
class DownResult:
    name: str
    ops: list[Op]
    timings: Timings
    stopped: list[processes.ProcessRecord]
    lingering: dict[str, list[int]]  # namespace -> foreign PIDs still inside
    # mount points a process of the lab was stopped in the middle of making a namespace on
    half_made: list[str] = field(default_factory=list)


def running_labs() -> list[str]:
    """Labs with a record or with marked namespaces (a crash may leave either alone)."""
    folder = records.RECORD_DIR
    names = {p.stem for p in folder.glob("*.json")} if folder.exists() else set()
    with Kernel() as k:
        for ns in namespace.read(k, "vnet-").found:
            if ns.name == f"vnet-{ns.scope}-{ns.node}":
                names.add(ns.scope)
    return sorted(names)


def pick_lab(name: str | None) -> str:
    """The lab a command names: NAME, the name in a topology file given instead (as to
    `lab up`), or the only lab up."""
    if name and (name.endswith((".yaml", ".yml")) or "/" in name):
        if not Path(name).is_file():
            raise LabError(f"{name}: no such topology file (name a lab, or give its file)")
        return load_topology(name).name
    if name:
        return name
    labs = running_labs()
    if len(labs) == 1:
        return labs[0]
    if not labs:
        raise LabError("no lab is up")
    raise LabError(f"several labs are up ({', '.join(labs)}); name one")


def up(
    path: str | Path,
    dry_run: bool = False,
    progress: Progress | None = None,
    topology: Topology | None = None,
    fault: Fault | None = None,
) -> UpResult:
    """Make the kernel match the file; `fault` is for tests (see substrate.transaction)."""
    timings = Timings()
    t = time.perf_counter()
    topo = topology if topology is not None else load_topology(path)
    t = timings.time("load and check", t)
    with_agents = topo.management is not None and topo.management.agents
    desired, ops = converge_lab(topo, dry_run=dry_run, progress=progress, fault=fault)
    t = timings.time("plan" if dry_run else "plan and apply", t)
    if dry_run:
        return UpResult(topo, ops, timings, desired)
    old = read_record(topo.name) or LabRecord(topo.name)
    record = LabRecord(
        name=topo.name,
        file=str(Path(path).resolve()) if path else None,
        updated=time.time(),
        processes=list(old.processes),
        controller=old.controller,
    )
    if with_agents:
        _start_agents(topo, old, record)
        t = timings.time("agents", t)
    _run_controller(topo, record)
    if topo.controller is not None:
        timings.time("controller", t)
    write_record(record)
    return UpResult(topo, ops, timings, desired)


def converge_lab(
    topo: Topology,
    dry_run: bool = False,
    progress: Progress | None = None,
    fault: Fault | None = None,
) -> tuple[KernelState, list[Op]]:
    """The lab's own share of the kernel (all but the agents' VRs) made to match `topo`."""
    with_agents = topo.management is not None and topo.management.agents
    # with agents, each host's agent makes its VRs; the lab makes the rest
    where = replace(lab_placement(topo.name), routers=not with_agents)
    desired = realize(topo, where)
    with Kernel() as kernel:
        ops = converge(kernel, desired, where, dry_run=dry_run, progress=progress, fault=fault)
    return desired, ops


def _start_agents(topo: Topology, old: LabRecord, record: LabRecord) -> None:
    """(Re)start the agent of every host whose share of the file changed, or that is not up."""
    assert topo.management is not None
    password = agents.lab_password(topo, old)
    record.agent_user, record.agent_password = topo.management.user, password
    # the old entries stay until replaced, so a crash midway keeps what the next `up` needs
    record.agents = dict(old.agents)
    started = {}
    for host in topo.hosts:
        directory = agents.agent_dir(records.RECORD_DIR, topo.name, host.name)
        rec = old.agents.get(host.name)
        previous = set(rec.file_routers) if rec else set()
        previous_conns = frozenset(rec.file_connections) if rec else frozenset()
        child = _ensure_agent(
            topo, host.name, directory, password, (previous, previous_conns), record
        )
        if child is not None:
            started[host.name] = (child, directory)
        record.agents[host.name] = AgentRecord(
            address=str(host_address(topo, host.name)),
            netconf_port=agents.NETCONF_PORT,
            restconf_port=agents.RESTCONF_PORT,
            state_dir=str(directory),
            file_routers=[r.name for r in topo.routers if r.host == host.name],
            file_connections=_file_connections(topo, host.name),
        )
    record.agents = {h.name: record.agents[h.name] for h in topo.hosts}
    write_record(record)
    try:
        agents.wait_ready(started)
    except RuntimeError as err:
        raise LabError(str(err)) from None


def _run_controller(topo: Topology, record: LabRecord) -> None:
    """Start (or restart, or leave) the controller of the file's `controller:` section; stop
    and forget the lab's controller when the section is gone."""
    directory = lab_controller.controller_dir(records.RECORD_DIR, topo.name)
    if topo.controller is None:
        if record.controller is not None:
            lab_controller.remove(record, directory)
        return
    try:
        lab_controller.ensure(topo, record, directory, write_record)
    except RuntimeError as err:
        raise LabError(str(err)) from None


def _file_connections(topo: Topology, host: str) -> list[str]:
    """The connections with a VR of their path on `host` (those whose pieces it gets)."""
    routers = {vr.name for vr in topo.routers if vr.host == host}
    return [c.name for c in topo.connections if routers & set(c.path)]


def _ensure_agent(
    topo: Topology,
    host: str,
    directory: Path,
    password: str,
    previous: tuple[set[str], frozenset[str]],  # the file's VRs and connections last time
    record: LabRecord,
) -> subprocess.Popen[bytes] | None:
    """Start the host's agent unless it runs with its current share of the file; the new
    child's PID is in the record on disk before the agent runs (agents.release), so that
    `down` stops every agent even if `up` fails or is killed at any point."""
    what = f"agent {host}"
    current = next(
        (p for p in record.processes if p.what == what and processes.is_running(p)), None
    )
    changed = agents.prepare(topo, host, directory, password, *previous)
    if current is not None and changed:
        processes.stop(current)  # it reconciles the kernel with the new file on start
        current = None
    if current is not None:
        return None
    child = agents.start(topo, host, directory)
    record.processes = [p for p in record.processes if p.what != what]
    record.processes.append(processes.record(child, what))
    write_record(record)
    agents.release(child)  # only now: a crash before this leaves no agent running
    return child


def down(name: str, progress: Progress | None = None) -> DownResult:
    timings = Timings()
    t = time.perf_counter()
    rec = read_record(name) or LabRecord(name)
    stopped = [proc for proc in rec.processes if processes.stop(proc)]
    t = timings.time("stop processes", t)
    where = lab_placement(name)
    ops: list[Op] = []
    lingering: dict[str, list[int]] = {}
    with Kernel() as kernel:
        # Removal needs only the namespaces: their contents go with them. It runs
        # without an undo log (undoing a deletion would bring back empty
        # namespaces); if a step fails, running `down` again finishes the job.
        lab_objects = observe(kernel, where.scope, where.prefix, namespaces_only=True)
        hosts = [ns.node for ns in lab_objects.state.namespaces.values() if ns.role == "host"]
        # what each host's agent made (its VRs) goes first, then the lab's own objects
        for scope in [*(agents.agent_scope(name, h) for h in sorted(hosts)), name]:
            # routing daemons an agent killed without its clean-up left (by their records)
            frr.stop_scope(scope)
            before = (
                lab_objects
                if scope == name
                else observe(kernel, scope, where.prefix, namespaces_only=True)
            )
            lingering.update(nsfs.pids_inside_many(list(before.state.namespaces)))
            ops += converge(
                kernel,
                KernelState(),
                Placement(scope, where.prefix),
                before=before,
                undo=False,
                progress=progress,
            )
        half_made = _remove_half_made(kernel, where.prefix)
        timings.time("delete", t)
    remove_with_staging(record_path(name))  # and a staging file left by a killed `up`
    lab_dir = records.RECORD_DIR / name
    if lab_dir.is_dir():
        shutil.rmtree(lab_dir)  # the agents' state: made by this lab only
    return DownResult(name, ops, timings, stopped, lingering, half_made)


def _remove_half_made(kernel: Kernel, prefix: str) -> list[str]:
    """Mount points named `prefix*` that are no namespace: what an agent stopped between
    creating one and binding it leaves (SIGTERM ends it mid-reconcile). A young one was
    left alone above, as another agent of the lab may be making it; every process of the
    lab is stopped now. A namespace that is one but carries no mark is not known to be
    ours, and stays."""
    left = []
    for name in nsfs.list_names(prefix):
        try:
            kernel.namespace_mark(name)
        except NotANamespace:
            nsfs.remove(name)
            left.append(name)
    return left


def add_process(name: str, rec: processes.ProcessRecord) -> None:
    record = read_record(name) or LabRecord(name)
    record.processes.append(rec)
    write_record(record)


@dataclass
class NodeStatus:
    name: str
    role: str
    namespace: str
    interfaces: dict[str, list[str]]  # ifname -> addresses
    routes: list[str]


@dataclass
class LabStatus:
    name: str
    file: str | None
    nodes: list[NodeStatus]
    in_sync: bool | None  # None: the file is gone or unreadable
    pending: list[str]
    counts: dict[str, int]
    agents: dict[str, dict[str, Any]] = field(default_factory=dict)
    controller: dict[str, Any] | None = None  # the lab's controller, if it has one


def status(name: str) -> LabStatus:
    rec = read_record(name) or LabRecord(name)
    where = lab_placement(name)
    with Kernel() as kernel:
        state = observe(kernel, where.scope, where.prefix).state
        shown = KernelState()
        shown.merge(state)
        hosts = [ns.node for ns in state.namespaces.values() if ns.role == "host"]
        for host in hosts:  # the VRs each host's agent made
            shown.merge(observe(kernel, agents.agent_scope(name, host), where.prefix).state)
    nodes = [_node_status(shown, ns_name) for ns_name in sorted(shown.namespaces)]
    in_sync, pending = _sync_state(rec.file, where, state)
    return LabStatus(
        name,
        rec.file,
        nodes,
        in_sync,
        pending,
        shown.summary(),
        _agent_status(rec),
        lab_controller.status(rec),
    )


def _node_status(shown: KernelState, ns_name: str) -> NodeStatus:
    ns = shown.namespaces[ns_name]
    itfs: dict[str, list[str]] = {}
    for link in shown.links.values():
        if link.peer_ns == ns_name and link.peer_name:
            itfs.setdefault(link.peer_name, [])
        elif link.ns == ns_name:
            itfs.setdefault(link.name, [])
    for a in sorted(shown.addresses, key=lambda a: (a.ifname, a.cidr)):
        if a.ns == ns_name:
            itfs.setdefault(a.ifname, []).append(a.cidr)
    routes = sorted(f"{r.dst} via {r.via}" for r in shown.routes if r.ns == ns_name)
    return NodeStatus(ns.node, ns.role, ns_name, itfs, routes)


def _sync_state(
    file: str | None, where: Placement, state: KernelState
) -> tuple[bool | None, list[str]]:
    """Whether the kernel matches the lab's file, and what `lab up` would still do."""
    if not file or not Path(file).exists():
        return None, []
    try:
        topo = load_topology(file)
        with_agents = topo.management is not None and topo.management.agents
        ops = plan(realize(topo, replace(where, routers=not with_agents)), state)
    except ValueError:  # the file changed since and is no longer valid
        return None, []
    return not ops, [op.describe() for op in ops]


def _agent_status(rec: LabRecord) -> dict[str, dict[str, Any]]:
    running = {p.what: p for p in rec.processes}
    out = {}
    for host, info in rec.agents.items():
        proc = running.get(f"agent {host}")
        out[host] = {
            **asdict(info),
            "pid": proc.pid if proc else None,
            "running": proc is not None and processes.is_running(proc),
            "user": rec.agent_user,
            "password": rec.agent_password,
        }
    return out


def node_namespace(lab: str, node: str) -> str:
    ns = f"vnet-{lab}-{node}"
    with Kernel() as kernel:
        if not nsfs.exists(ns):
            raise LabError(f"lab {lab!r} has no node {node!r} (no namespace {ns})")
        try:
            mark = namespace.parse_namespace_mark(ns, kernel.namespace_mark(ns))
        except NotANamespace:
            mark = None
    if mark is None or (mark.scope != lab and not mark.scope.startswith(lab + ".")):
        raise LabError(f"namespace {ns} is not marked as lab {lab!r}'s; not entering it")
    return ns


def exec_in(lab: str, node: str, argv: list[str]) -> None:
    """Replace this process with `argv` running inside the node's namespace."""
    ns = node_namespace(lab, node)
    join_group = cgroupfs.joiner(ns)  # the node's resource limits, if it has any
    if join_group is not None:
        join_group()
    nsfs.join(ns)
    os.execvp(argv[0], argv)
