"""Failure detection drives the rerouting, on hosts in memory: an underlay interface an agent
reports down moves the connections crossing that link onto a surviving path, and no call to
the failover's entry points is made by the test; a controller restarted while the link is
still down plans around it from what the detection recorded."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from tests.controller_memory_support import ACME, World, event_kinds, voice, world
from vnet.controller.service.core import Service
from vnet.tools.wait import wait_until_async

LIVENESS = {"liveness_interval": 0.05, "liveness_timeout": 0.1, "liveness_backoff": 0.05}
SLACK = 5.0  # seconds a loaded machine may take to deliver a change and move a connection
LINKS = (("h1", "h2"), ("h1", "h3"), ("h2", "h3"))


@pytest.fixture
def w(tmp_path: Path) -> World:
    made = world(tmp_path)
    for a, b in LINKS:
        made.hosts.set_underlay(a, f"ul-{b}", True)
        made.hosts.set_underlay(b, f"ul-{a}", True)
    return made


async def path_of(service: Service, name: str) -> list[str]:
    return (await service.connection(ACME, "acme", name)).path


async def until_path(service: Service, name: str, path: list[str]) -> None:
    seen: dict[str, list[str]] = {}

    async def poll() -> None:
        while seen.get("path") != path:
            seen["path"] = await path_of(service, name)
            await asyncio.sleep(0.01)

    poller = asyncio.create_task(poll())
    try:
        await wait_until_async(lambda: seen.get("path") == path, SLACK, f"{name} on {path}")
    finally:
        poller.cancel()


def started(w: World, scenario: Callable[[Service], Awaitable[None]]) -> None:
    async def go() -> None:
        service = w.service(LIVENESS)
        await service.start(background=True)
        try:
            await scenario(service)
        finally:
            await service.stop()
            service.db.engine.dispose()

    asyncio.run(go())


def test_a_link_reported_down_moves_its_connection_and_a_restart_remembers_it(w: World) -> None:
    async def before_restart(service: Service) -> None:
        made = await service.create_connection(ACME, "acme", voice("v", 5201, "10mbit"))
        assert made.connection.path == ["h1", "h3"]
        w.hosts.set_underlay("h3", "ul-h1", False)  # one end of h1-h3 goes down
        await until_path(service, "v", ["h1", "h2", "h3"])
        assert "rerouted" in event_kinds(w.url)

    async def after_restart(service: Service) -> None:
        assert service.failover.links == {"h1-h3"}
        made = await service.create_connection(ACME, "acme", voice("n", 5202, "10mbit"))
        assert made.connection.path == ["h1", "h2", "h3"], "planned over a link still down"

    started(w, before_restart)
    started(w, after_restart)


def test_an_agent_that_stops_answering_moves_nothing(w: World) -> None:
    """A hung agent is not a failed host: the connection through it stays established on its
    path (its data plane forwards on); the host is not asked, and comes back when it answers."""

    async def scenario(service: Service) -> None:
        via = voice("t", 5203, "10mbit", path=["h1", "h2", "h3"])
        assert (await service.create_connection(ACME, "acme", via)).connection.path[1] == "h2"
        w.hosts.hang("h2")
        await wait_until_async(lambda: "h2" in service.failover.unreachable, SLACK, "h2 hung")
        assert set(service.failover.unreachable_now()) == {"h2"}  # detection's own view
        view = await service.connection(ACME, "acme", "t")
        assert (view.status, view.path) == ("established", ["h1", "h2", "h3"])
        assert "rerouted" not in event_kinds(w.url)

    started(w, scenario)
