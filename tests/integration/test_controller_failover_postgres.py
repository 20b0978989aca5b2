"""Rerouting on PostgreSQL while other requests run (controller/service/failover.py): the
moves of one failure are reserved in one transaction that locks many rows (every moving
connection's, every link's); requests arriving meanwhile must queue behind it, never
deadlock with it, and nothing may be over-admitted or leaked. The hosts are in memory
(controller_memory_support.py); the database is a real PostgreSQL server's."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.controller_memory_support import (
    ACME,
    cost,
    held_per_direction,
    live_connections,
    voice,
    world,
)
from vnet.controller.errors import Conflict
from vnet.controller.service.core import Service
from vnet.model.controller_api import ConnectionView
from vnet.tools import postgres

pytestmark = pytest.mark.postgres


def test_a_failure_moves_its_connections_while_other_requests_run(
    pg: postgres.Postgres, tmp_path: Path
) -> None:
    """Eight connections on h1-h3 when it fails; meanwhile four new ones are asked for and
    four of the eight released. Every request answers (a release of a connection being
    moved is refused as a conflict until the move is done, and none fails on a deadlock);
    at the end no live connection crosses h1-h3, and the ledger holds exactly what the live
    connections cost on their paths."""
    url = pg.create_database(f"failover_{tmp_path.name[-10:]}")
    w = world(tmp_path, url=url)
    w.hosts.latency = 0.002  # an agent takes time to answer: requests overlap on the hosts
    old = [f"v{k}" for k in range(8)]
    new = [f"n{k}" for k in range(4)]

    async def release(svc: Service, name: str) -> None:
        for _ in range(100):
            try:
                await svc.release_connection(ACME, "acme", name)
                return
            except Conflict:  # being moved: released once the move is done
                await asyncio.sleep(0.05)
        raise AssertionError(f"{name} was never released")

    async def scenario(svc: Service) -> list[ConnectionView]:
        for k, name in enumerate(old):
            await svc.create_connection(ACME, "acme", voice(name, 5201 + k, "5mbit"))
        await asyncio.gather(
            svc.failover.link_down("h1-h3"),
            *(
                svc.create_connection(ACME, "acme", voice(n, 5301 + k, "5mbit"))
                for k, n in enumerate(new)
            ),
            *(release(svc, n) for n in old[4:]),
        )
        await svc.failover.retry()  # one admitted while the link failed moves now
        return [await svc.connection(ACME, "acme", n) for n in [*old[:4], *new]]

    views = w.run(scenario)
    assert {v.name: v.path for v in views} == {v.name: ["h1", "h2", "h3"] for v in views}
    assert len(live_connections(url)) == len(views)
    assert held_per_direction(url) == {
        ("h1-h2", True): len(views) * cost(5, 2),
        ("h2-h3", True): len(views) * cost(5, 2),
    }
