"""Runs of independent creations go over lanes (substrate/lanes.py) on real namespaces:
the result is the plan's, a failure inside a parallel run leaves nothing, and every
netlink request of every lane is counted."""

from __future__ import annotations

import dataclasses
import ipaddress
import threading
from collections.abc import Iterator

import pytest

from vnet.bench.build.measure import build_topology_for
from vnet.lab import lab as labmod
from vnet.substrate import ApplyError, Kernel, KernelState, converge, lab_placement, plan, realize
from vnet.substrate.lanes import MIN_RUN
from vnet.substrate.link import CreateLink
from vnet.substrate.op import Op
from vnet.substrate.route import Route

from .conftest import lab_namespaces, unique_lab
from .faulty_vnet import fail_at

VRS = 24  # 72 veth pairs and 48 addresses: runs long enough to be split (lanes.MIN_RUN)


@pytest.fixture
def lab() -> Iterator[str]:
    name = unique_lab()
    yield name
    labmod.down(name)
    assert lab_namespaces(name) == []


def desired(name: str) -> KernelState:
    return realize(build_topology_for(VRS, 1), lab_placement(name))


def test_a_large_build_runs_on_two_lanes_and_matches_its_plan(lab: str) -> None:
    where = lab_placement(lab)
    threads: set[str] = set()
    with Kernel() as kernel:
        ops = converge(
            kernel,
            desired(lab),
            where,
            lanes=2,
            progress=lambda i, n, op: threads.add(threading.current_thread().name),
        )
        assert plan(desired(lab), KernelState()) == ops
        assert converge(kernel, desired(lab), where, dry_run=True) == [], "not what was planned"
    assert len(threads) == 2, threads
    assert len(lab_namespaces(lab)) == VRS + 1


def _a_step_inside_the_veth_run(name: str) -> int:
    ops: list[Op] = plan(desired(name), KernelState())
    veths = [i for i, op in enumerate(ops) if isinstance(op, CreateLink) and op.link.kind == "veth"]
    return veths[len(veths) // 2]


def test_a_failure_inside_a_parallel_run_undoes_every_lane(lab: str) -> None:
    step = _a_step_inside_the_veth_run(lab)
    with Kernel() as kernel, pytest.raises(ApplyError) as info:
        converge(kernel, desired(lab), lab_placement(lab), lanes=2, fault=fail_at(step))
    assert info.value.step == step
    assert info.value.undone is not None and info.value.undone >= step // 2
    assert lab_namespaces(lab) == [], "rollback left namespaces"


def test_every_lane_s_requests_are_counted(lab: str) -> None:
    where = lab_placement(lab)
    counts = []
    for lanes in (1, 2):
        with Kernel() as kernel:
            converge(kernel, desired(lab), where, lanes=lanes)
            counts.append(sum(kernel.requests.values()))
        labmod.down(lab)
    assert counts[0] == counts[1] > 3 * VRS


def test_a_later_parallel_apply_reaches_the_same_namespaces(lab: str) -> None:
    """A Kernel's lanes keep their threads: pyroute2 opens an IPRoute's socket anew for each
    thread that uses it, in that thread's namespace, so a lane on a new thread sent its
    routes to the caller's namespace (an agent's second commit failed with EHOSTUNREACH)."""
    where, built = lab_placement(lab), desired(lab)
    first = dataclasses.replace(built, routes=_routes_to_neighbours(built, "192.168"))
    full = dataclasses.replace(first, routes=first.routes | _routes_to_neighbours(built, "172.16"))
    assert len(first.routes) >= 2 * MIN_RUN, "the routes' run would not be split"
    with Kernel() as kernel:
        converge(kernel, first, where, lanes=2)  # the lanes open their sockets
        converge(kernel, full, where, lanes=2)
        assert converge(kernel, full, where, dry_run=True) == [], "routes not where planned"


def _routes_to_neighbours(state: KernelState, prefix: str) -> set[Route]:
    """In each VR, a route to `prefix`.n.0/24 via its neighbours on network n."""
    by_net: dict[ipaddress.IPv4Network, list[tuple[str, ipaddress.IPv4Address]]] = {}
    for a in state.addresses:
        iface = ipaddress.ip_interface(a.cidr)
        if a.ns is not None and iface.version == 4:
            by_net.setdefault(iface.network, []).append((a.ns, iface.ip))
    routes = set()
    for n, members in enumerate(by_net.values()):
        for ns, _ in members:
            for other_ns, via in members:
                if other_ns != ns:
                    routes.add(Route(ns, f"{prefix}.{n}.0/24", str(via)))
    return routes
