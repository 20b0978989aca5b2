"""A lab: several emulated physical hosts on this machine, from one topology file.

`up` applies the file (re-running it with an edited file changes only the
difference), `down` removes everything marked with the lab's name, also
after a crash, and `status` compares the kernel with the file.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vnet.lab import processes
from vnet.lab.topology_file import load_topology
from vnet.model import Topology
from vnet.substrate import (
    Kernel,
    KernelState,
    Op,
    converge,
    lab_placement,
    nsfs,
    observe,
    plan,
    realize,
)
from vnet.substrate.kernel import NotANamespace
from vnet.substrate.observe import parse_namespace_mark

RECORD_DIR = Path(os.environ.get("VNET_RUN_DIR", "/run/vnet")) / "labs"
Progress = Callable[[int, int, Op], None]


class LabError(RuntimeError):
    pass


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


def record_path(name: str) -> Path:
    return RECORD_DIR / f"{name}.json"


def read_record(name: str) -> dict[str, Any] | None:
    try:
        return json.loads(record_path(name).read_text())
    except (OSError, ValueError):
        return None


def write_record(name: str, data: dict[str, Any]) -> None:
    RECORD_DIR.mkdir(parents=True, exist_ok=True)
    tmp = record_path(name).with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2))
    tmp.replace(record_path(name))


def running_labs() -> list[str]:
    """Labs with a record or with marked namespaces (a crash may leave either alone)."""
    names = {p.stem for p in RECORD_DIR.glob("*.json")} if RECORD_DIR.exists() else set()
    with Kernel() as k:
        for ns_name in nsfs.list_names("vnet-"):
            try:
                ns = parse_namespace_mark(ns_name, k.namespace_mark(ns_name))
            except NotANamespace:
                continue
            if ns is not None and ns_name == f"vnet-{ns.scope}-{ns.node}":
                names.add(ns.scope)
    return sorted(names)


def pick_lab(name: str | None) -> str:
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
) -> UpResult:
    timings = Timings()
    t = time.perf_counter()
    topo = topology if topology is not None else load_topology(path)
    t = timings.time("load and check", t)
    where = lab_placement(topo.name)
    desired = realize(topo, where)
    with Kernel() as kernel:
        ops = converge(kernel, desired, where, progress=progress, dry_run=dry_run)
        timings.time("plan" if dry_run else "plan and apply", t)
    if dry_run:
        return UpResult(topo, ops, timings, desired)
    old = read_record(topo.name) or {}
    write_record(
        topo.name,
        {
            "name": topo.name,
            "file": str(Path(path).resolve()) if path else None,
            "updated": time.time(),
            "processes": old.get("processes", []),
        },
    )
    return UpResult(topo, ops, timings, desired)


def down(name: str, progress: Progress | None = None) -> DownResult:
    timings = Timings()
    t = time.perf_counter()
    rec = read_record(name) or {}
    stopped = []
    for p in rec.get("processes", []):
        proc = processes.ProcessRecord(**p)
        if processes.stop(proc):
            stopped.append(proc)
    t = timings.time("stop processes", t)
    where = lab_placement(name)
    with Kernel() as kernel:
        before = observe(kernel, where.scope, where.prefix)
        names = list(before.state.namespaces)
        lingering = nsfs.pids_inside_many(names)
        t = timings.time("find", t)
        ops = converge(
            kernel,
            KernelState(),
            where,
            before=before,
            progress=progress,
        )
        timings.time("delete", t)
    record_path(name).unlink(missing_ok=True)
    return DownResult(name, ops, timings, stopped, lingering)


def add_process(name: str, rec: processes.ProcessRecord) -> None:
    data = read_record(name) or {"name": name, "processes": []}
    data.setdefault("processes", []).append(rec.to_dict())
    write_record(name, data)


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


def status(name: str) -> LabStatus:
    rec = read_record(name) or {}
    where = lab_placement(name)
    with Kernel() as kernel:
        obs = observe(kernel, where.scope, where.prefix)
    state = obs.state
    nodes = []
    for ns_name, ns in sorted(state.namespaces.items()):
        itfs: dict[str, list[str]] = {}
        for link in state.links.values():
            if link.peer_ns == ns_name and link.peer_name:
                itfs.setdefault(link.peer_name, [])
            elif link.ns == ns_name:
                itfs.setdefault(link.name, [])
        for a in sorted(state.addresses, key=lambda a: (a.ifname, a.cidr)):
            if a.ns == ns_name:
                itfs.setdefault(a.ifname, []).append(a.cidr)
        routes = sorted(f"{r.dst} via {r.via}" for r in state.routes if r.ns == ns_name)
        nodes.append(NodeStatus(ns.node, ns.role, ns_name, itfs, routes))
    in_sync, pending = None, []
    file = rec.get("file")
    if file and Path(file).exists():
        try:
            ops = plan(realize(load_topology(file), where), state)
            in_sync, pending = not ops, [op.describe() for op in ops]
        except ValueError:
            in_sync = None
    return LabStatus(name, file, nodes, in_sync, pending, state.summary())


def node_namespace(lab: str, node: str) -> str:
    ns = f"vnet-{lab}-{node}"
    with Kernel() as kernel:
        if not nsfs.exists(ns):
            raise LabError(f"lab {lab!r} has no node {node!r} (no namespace {ns})")
        try:
            mark = parse_namespace_mark(ns, kernel.namespace_mark(ns))
        except NotANamespace:
            mark = None
    if mark is None or mark.scope != lab:
        raise LabError(f"namespace {ns} is not marked as lab {lab!r}'s; not entering it")
    return ns


def exec_in(lab: str, node: str, argv: list[str]) -> None:
    """Replace this process with `argv` running inside the node's namespace."""
    ns = node_namespace(lab, node)
    nsfs.join(ns)
    os.execvp(argv[0], argv)
