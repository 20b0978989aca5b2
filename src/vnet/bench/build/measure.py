"""How long N VRs (2 interfaces each) take to come up and go down, measured on one run.

Drives the lab exactly as `vnet lab up/down` does. Per-VR time is the sum
of the kernel operations that belong to that VR (its namespace, its veth
pairs, addresses and routes), measured on the same run.
"""

from __future__ import annotations

import resource
import time
from dataclasses import dataclass, field
from typing import Any

from vnet.bench.build.floor import run_floor
from vnet.lab import lab as labmod
from vnet.model import Topology, build_topology
from vnet.substrate import Kernel, lab_placement, nsfs, observe, plan, realize
from vnet.substrate.link import CreateLink
from vnet.substrate.namespace import CreateNamespace
from vnet.substrate.op import Op

BENCH_LAB = "bench"


def build_topology_for(vrs: int, hosts: int) -> Topology:
    """A chain: VR i joins networks i and i+1; VRs spread round-robin over the hosts."""
    if vrs < 1 or hosts < 1:
        raise ValueError("need at least one VR and one host")
    if vrs > 65000:
        raise ValueError("at most 65000 VRs (one /24 per network in 10.0.0.0/8)")
    host_names = [f"h{i + 1}" for i in range(hosts)]

    def subnet(i: int) -> str:
        return f"10.{i // 256}.{i % 256}"

    data: dict[str, Any] = {
        "name": BENCH_LAB,
        "hosts": [{"name": h} for h in host_names],
        "links": [{"a": host_names[i], "b": host_names[i + 1]} for i in range(hosts - 1)],
        "networks": [
            {"name": f"n{i}", "tenant": "bench", "vni": 1000 + i, "ipv4": f"{subnet(i)}.0/24"}
            for i in range(vrs + 1)
        ],
        "routers": [
            {
                "name": f"r{i}",
                "host": host_names[i % hosts],
                "interfaces": [
                    {"network": f"n{i}", "ipv4": f"{subnet(i)}.2/24"},
                    {"network": f"n{i + 1}", "ipv4": f"{subnet(i + 1)}.1/24"},
                ],
            }
            for i in range(vrs)
        ],
    }
    return build_topology(data, source="bench build")


def _owner(op: Op, prefix: str) -> str | None:
    """The VR namespace an operation belongs to, if any."""
    if isinstance(op, CreateNamespace):
        return op.ns.name if op.ns.role == "router" else None
    if isinstance(op, CreateLink):
        peer = op.link.peer_ns
        return peer if peer and peer.startswith(prefix + "r") else None
    ns = getattr(getattr(op, "addr", None) or getattr(op, "route", None), "ns", None)
    return ns if ns and ns.startswith(prefix + "r") else None


def kernel_settle_seconds() -> float:
    """How long until the kernel has finished destroying deleted namespaces.

    Namespace deletion returns at once and the kernel tears the contents
    down in the background, holding the lock that creating a namespace
    needs; so the time one creation takes measures the work still pending.
    """
    probe = "vnet-bench-settleprobe"
    t = time.perf_counter()
    nsfs.create(probe)
    nsfs.remove(probe)
    return time.perf_counter() - t


@dataclass
class BuildRun:
    vrs: int
    hosts: int
    up_seconds: float
    down_seconds: float
    ops_up: int
    ops_down: int
    reapply_ops: int
    settle_seconds: float
    floor_seconds: float  # the same objects by plain `ip -batch` (floor.py), same run
    per_vr_ms: list[float] = field(default_factory=list)


def run_once(vrs: int, hosts: int) -> BuildRun:
    topo = build_topology_for(vrs, hosts)
    where = lab_placement(BENCH_LAB)
    if labmod.running_labs().count(BENCH_LAB):
        labmod.down(BENCH_LAB)  # a previous interrupted run; start from nothing
    per_vr: dict[str, float] = {}
    last = [0.0]

    def tick(i: int, total: int, op: Op) -> None:
        now = time.perf_counter()
        owner = _owner(op, where.prefix)
        if owner is not None:
            per_vr[owner] = per_vr.get(owner, 0.0) + (now - last[0])
        last[0] = now

    kernel_settle_seconds()  # start from a quiet kernel, not one still tearing down
    t0 = time.perf_counter()
    last[0] = t0
    up = labmod.up("", topology=topo, progress=tick)
    up_seconds = time.perf_counter() - t0
    with Kernel() as kernel:
        reapply = plan(realize(topo, where), observe(kernel, where.scope, where.prefix).state)
    # The floor comes after the lab is up, not before: the kernel destroys deleted
    # namespaces in the background for tens of seconds after `ip netns del` returns,
    # and a lab made meanwhile would pay for that teardown. Its removal overlaps `down`.
    floor_seconds = run_floor(topo)
    t1 = time.perf_counter()
    down = labmod.down(BENCH_LAB)
    down_seconds = time.perf_counter() - t1
    settle = kernel_settle_seconds()
    return BuildRun(
        vrs,
        hosts,
        up_seconds,
        down_seconds,
        len(up.ops),
        len(down.ops),
        len(reapply),
        settle,
        floor_seconds,
        [v * 1000 for v in per_vr.values()],
    )


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
