"""A create, a modify and the failover's retry (what each release runs while an element is
down) cost the controller's database the same with few and with many live connections:
the SQLite virtual machine's instructions for one of them (counted with
sqlite3's progress handler, on the service's own connections, rows fetched included) do
not grow with what the ledger and the connection table already hold. The real Service on
hosts in memory (tests/controller_memory_support.py's World) over a generated leaf-spine
substrate, each connection between a pair of end hosts of its own (a flow check reads the
connections between the same two end hosts, rightly)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event

from tests.controller_memory_support import World, world
from vnet.bench.controller.substrate import leaf_spine
from vnet.controller.principal import Principal
from vnet.controller.service.core import Service
from vnet.model.controller_api import ConnectionRequest, ModifyRequest

FEW, MANY = 5, 125
# a create or a modify among MANY live connections may cost at most this much more: what
# is left that grows with the live connections is the indexes' depth (a modify runs the same
# 30 statements at FEW and MANY, 1.3-1.4x the instructions) and a create's number allocation
# (db.numbers reads the live numbers index, bounded by its 4095 numbers)
GROWTH = 1.5
TICK = 10  # instructions per progress callback


@contextmanager
def counted(svc: Service) -> Iterator[list[int]]:
    """The SQLite instructions the service's database connections run inside the block."""
    count = [0]

    def tick() -> int:
        count[0] += 1
        return 0  # go on

    def checkout(dbapi: Any, _record: Any, _proxy: Any) -> None:
        dbapi.set_progress_handler(tick, TICK)

    def checkin(dbapi: Any, _record: Any) -> None:
        dbapi.set_progress_handler(None, 0)

    engine = svc.db.engine
    event.listen(engine, "checkout", checkout)
    event.listen(engine, "checkin", checkin)
    try:
        yield count
    finally:
        event.remove(engine, "checkout", checkout)
        event.remove(engine, "checkin", checkin)


def substrate_world(
    tmp_path: Path,
) -> tuple[World, list[ConnectionRequest], list[ConnectionRequest]]:
    """A 10-host leaf-spine in the database and in memory; the requests measured (between the
    end hosts of two leaves h0 and h1, so that each takes a path of the same shape) and the
    fillers (one per other pair of the tenant's end hosts on different leaves)."""
    topo = leaf_spine(10, tenants=1, endhosts=4)
    pairs = [(a, b) for a, b in itertools.combinations(topo.endhosts, 2) if a.host != b.host]
    requests = [
        ConnectionRequest(
            name=f"c{k}", a=a.name, b=b.name, protocol="udp", dst_port=5001, bandwidth=1_000_000
        )
        for k, (a, b) in enumerate(pairs)
    ]
    measured = {(a.name, b.name) for a, b in pairs if {a.host, b.host} == {"h0", "h1"}}
    chosen = [r for r in requests if (r.a, r.b) in measured]
    fillers = [r for r in requests if (r.a, r.b) not in measured]
    return world(tmp_path, check_yang=False, topo=topo), chosen, fillers


@pytest.mark.slow  # 130 connections made one by one: 4 s, the longest test of `make check`
def test_a_create_a_modify_and_a_retry_cost_the_database_the_same_with_many_live(
    tmp_path: Path,
) -> None:
    w, chosen, fillers = substrate_world(tmp_path)
    tenant = Principal("tenant", "t0")
    assert len(chosen) >= 6 and len(fillers) >= MANY

    async def scenario(svc: Service) -> dict[str, list[int]]:
        cost: dict[str, list[int]] = {"create": [], "modify": [], "failover retry": []}
        ahead, measured = iter(fillers), iter(chosen)
        made = 0
        # down from the start: no connection crosses it (the spines' link, which no path
        # between leaves takes), and while it is down each release retries the failover
        await svc.failover.link_down("s0-s1")
        for live in (FEW, MANY):
            while made < live:
                await svc.create_connection(tenant, "t0", next(ahead))
                made += 1
            creates, modifies = [], []
            for k in range(3):
                request = next(measured)
                with counted(svc) as count:
                    await svc.create_connection(tenant, "t0", request)
                creates.append(count[0] * TICK)
                change = ModifyRequest(bandwidth=2_000_000 + k)
                with counted(svc) as count:
                    await svc.modify_connection(tenant, "t0", request.name, change)
                modifies.append(count[0] * TICK)
            cost["create"].append(sorted(creates)[1])
            cost["modify"].append(sorted(modifies)[1])
            retries = []
            for _ in range(3):
                with counted(svc) as count:
                    await svc.failover.retry()
                retries.append(count[0] * TICK)
            cost["failover retry"].append(sorted(retries)[1])
        return cost

    for what, (few, many) in w.run(scenario).items():
        assert many <= GROWTH * few, f"a {what}: {few} instructions at {FEW} live, {many} at {MANY}"
