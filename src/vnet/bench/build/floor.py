"""The floor of `vnet bench build`: the same kernel objects made by plain `ip -batch`.

The namespaces, links (bridges and veth pairs), addresses and routes of the
benchmark's topology, taken from the plan `lab up` runs (so they are the same
objects, under names of their own), written as iproute2 batch files: one `ip
-batch` that adds every namespace, then one `ip -n NS -batch` per namespace with
what goes in it, one namespace at a time (a veth pair's far end is brought up in its
own namespace's batch, after the one that made it). No marks, no observation, no undo, no
eBPF redirects: what the kernel itself costs through the standard tool.
"""

from __future__ import annotations

import subprocess
import time
from collections import defaultdict

from vnet.model import Topology
from vnet.substrate import Placement, lab_placement, nsfs, plan, realize
from vnet.substrate.address import AddAddress
from vnet.substrate.link import CreateLink
from vnet.substrate.namespace import CreateNamespace
from vnet.substrate.route import AddRoute
from vnet.substrate.state import KernelState

FLOOR_LAB = "benchfloor"  # its own namespace prefix: never meets the lab's
BATCH_TIMEOUT = 1800.0  # one `ip -batch` of 65000 namespaces stays far below this


def floor_placement() -> Placement:
    return lab_placement(FLOOR_LAB)


def batches(topo: Topology, where: Placement) -> tuple[list[str], dict[str, list[str]]]:
    """(`ip -batch` lines adding the namespaces, per namespace its `ip -n NS -batch` lines)."""
    made: list[str] = []
    inside: dict[str, list[str]] = defaultdict(list)
    for op in plan(realize(topo, where), KernelState()):
        if isinstance(op, CreateNamespace):
            made.append(f"netns add {op.ns.name}")
            continue
        if isinstance(op, CreateLink):
            ns = op.link.ns
        elif isinstance(op, AddAddress):
            ns = op.addr.ns
        elif isinstance(op, AddRoute):
            ns = op.route.ns
        else:
            continue  # eBPF redirects and the like: not part of the floor
        if ns is None:
            continue  # a lab makes nothing in the caller's own namespace
        command = op.describe().split("#")[0].strip()
        inside[ns].append(command.removeprefix(f"ip -n {ns} "))
        if isinstance(op, CreateLink) and op.link.peer_ns and op.link.up:
            # iproute2 brings up only the end it names; the other's namespace comes later
            inside[op.link.peer_ns].append(f"link set {op.link.peer_name} up")
    return made, dict(inside)


def _ip_batch(lines: list[str], ns: str | None = None) -> None:
    """Run one `ip [-n NS] -batch -`; raise with iproute2's message if a line fails."""
    argv = ["ip", *(["-n", ns] if ns else []), "-batch", "-"]
    done = subprocess.run(
        argv,
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        timeout=BATCH_TIMEOUT,
        check=False,
    )
    if done.returncode != 0:
        where = f" in {ns}" if ns else ""
        raise RuntimeError(f"ip -batch{where} failed: {done.stderr.strip()}")


def remove(names: list[str]) -> None:
    """Delete the floor's namespaces that exist (a run interrupted half-way leaves some)."""
    present = [n for n in names if nsfs.exists(n)]
    if present:
        _ip_batch([f"netns del {n}" for n in present])


def run_floor(topo: Topology) -> float:
    """Seconds to make the topology's objects with `ip -batch`; they are removed after."""
    made, inside = batches(topo, floor_placement())
    names = [line.removeprefix("netns add ") for line in made]
    remove(names)  # an earlier run's leftovers
    try:
        t0 = time.perf_counter()
        _ip_batch(made)
        for ns, lines in inside.items():
            _ip_batch(lines, ns)
        return time.perf_counter() - t0
    finally:
        remove(names)
