"""A commit costs what it changes: with many VRs present, creating, changing and deleting
one VR sends the kernel the same netlink requests (counted by `Kernel.requests`) as with
few, and plans the same operations. The datastore runs in this process; its kernel thread
lives in a sandbox namespace standing for the host (real namespaces, veths, addresses)."""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from vnet.agent.datastore import Datastore
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


def steps(host: HostSandbox, present: int) -> list[tuple[Counter[str], int]]:
    """With `present` VRs committed: the requests and planned operations of a create,
    a change and a delete of one more VR."""

    async def main() -> list[tuple[Counter[str], int]]:
        config = AgentConfig(
            state_dir=host.dir / f"state{present}",
            users=[User(name="admin", password="x")],
            scope=host.scope,
            namespace_prefix=host.prefix,
            drift_interval=0,
        )
        ds = Datastore(config)
        # the agent's kernel thread, in the namespace that stands for its host
        ds._kx = ThreadPoolExecutor(1, initializer=nsfs.join, initargs=(host.namespace,))
        await ds.start()
        base = [vr(i) for i in range(present)]
        out = []
        try:
            await ds.commit_tree(tree(base))
            for routers in (
                [*base, vr(present)],
                [*base, vr(present, admin="up")],
                base,
            ):
                kernel = ds._kernel_handle()
                before, planned = Counter(kernel.requests), _count_ops(ds)
                await ds.commit_tree(tree(routers))
                out.append((kernel.requests - before, planned[0]))
            await ds.commit_tree({})
        finally:
            await ds.close()
        return out

    return asyncio.run(main())


def _count_ops(ds: Datastore) -> list[int]:
    """Planned operations of the next commit, counted where converge plans them."""
    counts = [0]
    real = ds._converge

    def counting(desired: Any, before: Any) -> None:
        from vnet.substrate import plan

        if before is not None:
            counts[0] = len(plan(desired, before))
        real(desired, before)

    ds._converge = counting  # type: ignore[method-assign]
    return counts


def test_a_commit_sends_the_same_requests_with_many_vrs_present_as_with_few() -> None:
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
