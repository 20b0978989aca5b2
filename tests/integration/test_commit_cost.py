"""A commit costs what it changes: with many VRs present, creating, changing and deleting
one VR sends the kernel the same netlink requests (counted by `Kernel.requests`) as with
few, and plans the same operations; and SNMP's kernel state, read before the commit, is
brought up to date by reading the changed VR alone; a get of one VR among many running
looks at that VR alone. The datastore runs in this process;
its kernel thread lives in a sandbox namespace standing for the host (real namespaces,
veths, addresses)."""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from tests.datastore_support import commit_as
from vnet.agent.datastore import Datastore
from vnet.agent.snmp import frontend
from vnet.agent.snmp.frontend import StateColumns
from vnet.lab.sandbox import HostSandbox
from vnet.model.agent_config import AgentConfig, User
from vnet.model.yang.module import NETWORKS, ROUTERS
from vnet.substrate import nsfs

from .conftest import unique_lab

FEW, MANY = 5, 300


def vr(i: int, admin: str = "down") -> dict[str, Any]:
    # admin down: no bridge shortcuts, whose member count would differ between the sizes
    ipv4 = f"10.{i // 250 + 1}.{i % 250 + 1}.1/8"
    itf = {"name": "eth0", "network": "n1", "ipv4": ipv4}
    return {"name": f"r{i}", "admin-state": admin, "interface": [itf]}


def tree(routers: list[dict[str, Any]]) -> dict[str, Any]:
    net = {"name": "n1", "tenant": "a", "vni": 10, "ipv4-prefix": "10.0.0.0/8"}
    return {NETWORKS: {"network": [net]}, ROUTERS: {"router": routers}}


@contextlib.contextmanager
def sandbox_host() -> Iterator[HostSandbox]:
    """A host of its own per size: a deleted namespace's veths vanish a little later."""
    sandbox = HostSandbox(scope=unique_lab())
    sandbox.create()
    try:
        yield sandbox
    finally:
        problems = sandbox.cleanup()
        assert not problems, f"the test left things behind: {problems}"


Step = tuple[Counter[str], int, Counter[str]]


@contextlib.asynccontextmanager
async def datastore(host: HostSandbox, name: str) -> AsyncIterator[Datastore]:
    """An agent's datastore, its kernel thread in the namespace that stands for its host;
    emptied and closed after."""
    config = AgentConfig(
        state_dir=host.dir / name,
        users=[User(name="admin", password="x")],
        scope=host.scope,
        namespace_prefix=host.prefix,
        drift_interval=0,
    )
    ds = Datastore(config)
    ds._kx = ThreadPoolExecutor(1, initializer=nsfs.join, initargs=(host.namespace,))
    await ds.start()
    try:
        yield ds
        await commit_as(ds, {})
    finally:
        await ds.close()


def steps(host: HostSandbox, present: int) -> list[Step]:
    """With `present` VRs committed: the requests and planned operations of a create,
    a change and a delete of one more VR, and the requests of SNMP's state read after each."""

    async def main() -> list[Step]:
        base = [vr(i) for i in range(present)]
        out = []
        snmp_state = StateColumns()
        async with datastore(host, f"state{present}") as ds:
            await commit_as(ds, tree(base))
            await snmp_state.refresh(ds.running_snapshot, ds)  # every VR's, before
            for routers in (
                [*base, vr(present)],
                [*base, vr(present, admin="up")],
                base,
            ):
                kernel = ds._kernel_handle()
                before, planned = Counter(kernel.requests), _count_ops(ds)
                await commit_as(ds, tree(routers))
                committed = Counter(kernel.requests)
                await snmp_state.refresh(ds.running_snapshot, ds)
                out.append((committed - before, planned[0], kernel.requests - committed))
        return out

    return asyncio.run(main())


def _count_ops(ds: Datastore) -> list[int]:
    """Planned operations of the next commit, counted where converge plans them."""
    counts = [0]
    real = ds._converge

    def counting(desired: Any, before: Any, touched: Any = None) -> None:
        from vnet.substrate import plan

        if before is not None:
            counts[0] = len(plan(desired, before, touched))
        real(desired, before, touched)

    ds._converge = counting  # type: ignore[method-assign]
    return counts


def test_a_commit_sends_the_same_requests_with_many_vrs_present_as_with_few(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(frontend, "STATE_TTL", 3600.0)  # no full re-read due in the test
    with sandbox_host() as host:
        few = steps(host, FEW)
    with sandbox_host() as host:
        many = steps(host, MANY)
    for what, (a, b) in zip(
        ("create", "change", "delete"), zip(few, many, strict=True), strict=True
    ):
        assert a[0] == b[0], f"{what}: {FEW} VRs present: {dict(a[0])}; {MANY}: {dict(b[0])}"
        assert sum(b[0].values()) <= 12, f"{what}: {dict(b[0])}"
        assert a[1] == b[1], f"{what}: {a[1]} operations planned with {FEW}, {b[1]} with {MANY}"
        assert a[2] == b[2], f"{what}: SNMP state read {dict(a[2])} with {FEW}, {dict(b[2])}"


def test_a_get_of_one_vr_among_many_running_looks_at_that_vr_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A NETCONF get whose filter names one VR (and so the routers alone): the namespace
    of that VR is looked at, not every running VR's (the hypervisor's count of active VRs
    did, for a member the filter does not ask for)."""
    looks: list[str] = []
    exists = nsfs.exists

    def looked_at(name: str) -> bool:
        looks.append(name)
        return exists(name)

    async def main() -> tuple[Counter[str], dict[str, Any]]:
        async with datastore(host, "get") as ds:
            await commit_as(ds, tree([vr(i, admin="up") for i in range(FEW * 4)]))
            before = Counter(ds._kernel_handle().requests)
            monkeypatch.setattr(nsfs, "exists", looked_at)
            got = await ds.state_tree({"r1"}, {"routers"})
            monkeypatch.setattr(nsfs, "exists", exists)
            return ds._kernel_handle().requests - before, got

    with sandbox_host() as host:
        requests, got = asyncio.run(main())
    assert [r["oper-state"] for r in got[ROUTERS]["router"]] == ["running"]
    assert len(looks) == 1, f"namespaces looked at for one VR: {looks}"
    assert sum(requests.values()) <= 3, dict(requests)
