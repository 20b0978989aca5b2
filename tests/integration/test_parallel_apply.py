"""Runs of independent creations go over lanes (substrate/lanes.py) on real namespaces:
the result is the plan's, a failure inside a parallel run leaves nothing, and every
netlink request of every lane is counted."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from vnet.bench.build.measure import build_topology_for
from vnet.lab import lab as labmod
from vnet.substrate import ApplyError, Kernel, KernelState, converge, lab_placement, plan, realize
from vnet.substrate.link import CreateLink
from vnet.substrate.op import Op

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
