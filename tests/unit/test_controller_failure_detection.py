"""Failure detection on hosts in memory (tests/controller_memory_support.py): the controller
subscribes to every agent, learns of underlay interfaces going down and up and of agents that
die or hang, keeps each host's and link's state in the database, shows it in its views,
publishes each change and tells the hooks once per real change."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session

from tests.controller_memory_support import ACME, PROVIDER, World, voice, world
from vnet.controller.db import make_engine
from vnet.controller.db.models import ElementState, OperState
from vnet.controller.service import health
from vnet.controller.service.core import Service
from vnet.controller.service.opstate import Deliveries, Key, link_status
from vnet.controller.southbound.memory import Step
from vnet.model.controller_api import ElementStatus, StateChange
from vnet.tools.wait import wait_until_async

INTERVAL, TIMEOUT, BACKOFF = 0.05, 0.1, 0.05  # liveness settings of these tests' controller
BOUND = INTERVAL + TIMEOUT  # a hung agent's host is unreachable within this (plus scheduling)
SLACK = 2.0  # seconds of scheduling a loaded machine may add to a bound
LIVENESS = {"liveness_interval": INTERVAL, "liveness_timeout": TIMEOUT, "liveness_backoff": BACKOFF}
LINKS = {"h1-h2": ("h1", "h2"), "h1-h3": ("h1", "h3"), "h2-h3": ("h2", "h3")}


class Recorder:
    """A state hook that records what it is told, in order."""

    def __init__(self) -> None:
        self.told: list[tuple[str, str, bool]] = []

    async def on_link_state(self, link: str, up: bool) -> None:
        self.told.append(("link", link, up))

    async def on_host_state(self, host: str, up: bool) -> None:
        self.told.append(("host", host, up))


def all_up(w: World) -> None:
    for a, b in LINKS.values():
        w.hosts.set_underlay(a, f"ul-{b}", True)
        w.hosts.set_underlay(b, f"ul-{a}", True)


def rows(url: str) -> dict[tuple[str, str], tuple[str, str]]:
    """(kind, name) -> (state, reported_by), read with a query of the test's own."""
    engine = make_engine(url)
    try:
        with Session(engine) as session:
            found = session.scalars(select(ElementState)).all()
            return {(r.kind, r.name): (r.state.value, r.reported_by) for r in found}
    finally:
        engine.dispose()


def run(w: World, scenario: Callable[[Service, Recorder], Awaitable[None]]) -> None:
    """`scenario` on a service started with its background work (failure detection)."""

    async def go() -> None:
        service = w.service(LIVENESS)
        hook = Recorder()
        service.add_state_hook(hook)
        await service.start(background=True)
        try:
            await scenario(service, hook)
        finally:
            await service.stop()
            service.db.engine.dispose()

    asyncio.run(go())


async def states(service: Service, kind: str) -> dict[str, str]:
    views: list[Any] = await (service.links if kind == "link" else service.hosts)(PROVIDER)
    return {v.name: v.status.state for v in views}


async def until(service: Service, kind: str, name: str, state: str, timeout: float) -> float:
    """Seconds until GET /hosts or /links (the service's views) shows `name` in `state`."""

    async def shown() -> bool:
        return (await states(service, kind)).get(name) == state

    return await shown_within(shown, timeout, f"{kind} {name} {state}")


async def until_reachable(service: Service, host: str, reachable: bool) -> None:
    """Until GET /hosts shows `host` reachable or not. The hooks, the reconcile watcher
    whose word `reachable` is among them, are told after the state is written, so the view
    may show the state a moment before (a CI run asserted it at once and failed)."""

    async def shown() -> bool:
        views = await service.hosts(PROVIDER)
        return {v.name: v.reachable for v in views}[host] is reachable

    await shown_within(shown, SLACK, f"host {host} reachable={reachable}")


async def shown_within(shown: Callable[[], Awaitable[bool]], timeout: float, what: str) -> float:
    """Seconds until `shown()` answers true, polled in a task of its own (wait_until_async's
    predicate is synchronous)."""
    started = time.monotonic()
    seen: dict[str, bool] = {}

    async def poll() -> None:
        while not seen.get("yes"):
            seen["yes"] = await shown()
            await asyncio.sleep(0.005)

    poller = asyncio.create_task(poll())
    try:
        await wait_until_async(lambda: seen.get("yes"), timeout, what)
    finally:
        poller.cancel()
    return time.monotonic() - started


@pytest.fixture
def w(tmp_path: Path) -> World:
    made = world(tmp_path)
    all_up(made)
    return made


def test_a_link_end_down_makes_the_link_down_and_up_again_once_each(w: World) -> None:
    async def scenario(service: Service, hook: Recorder) -> None:
        assert service.health is not None
        for host in ("h1", "h2", "h3"):
            await until(service, "host", host, "up", SLACK)
        for link in LINKS:
            await until(service, "link", link, "up", SLACK)
        with service.state_changes() as changes:
            w.hosts.set_underlay("h1", "ul-h2", False)
            await until(service, "link", "h1-h2", "down", SLACK)
            w.hosts.set_underlay("h2", "ul-h1", False)  # the other end too: no news
            w.hosts.set_underlay("h2", "ul-h1", True)
            w.hosts.set_underlay("h1", "ul-h2", True)
            await until(service, "link", "h1-h2", "up", SLACK)
            seen: list[StateChange] = []
            while not changes.empty():
                seen.append(changes.get_nowait())
        assert [(c.name, c.before, c.status.state) for c in seen] == [
            ("h1-h2", "up", "down"),
            ("h1-h2", "down", "up"),
        ]
        assert seen[0].status.reported_by == "h1"
        assert "ul-h2 on h1 is down" in seen[0].status.reason
        await wait_until_async(lambda: ("link", "h1-h2", True) in hook.told, SLACK, "hook up")
        assert [t for t in hook.told if t[0] == "link"] == [
            ("link", "h1-h2", False),
            ("link", "h1-h2", True),
        ]
        assert (await states(service, "link"))["h1-h3"] == "up"

    run(w, scenario)
    assert rows(w.url)[("link", "h1-h2")][0] == "up"
    assert rows(w.url)[("host", "h2")] == ("up", "controller")


def test_a_dead_agent_makes_its_host_unreachable_at_once_and_up_when_it_returns(
    w: World,
) -> None:
    async def scenario(service: Service, hook: Recorder) -> None:
        await until(service, "host", "h2", "up", SLACK)
        subscribed = w.hosts.calls[("h2", Step.SUBSCRIBE)]
        w.hosts.kill("h2")
        took = await until(service, "host", "h2", "unreachable", SLACK)
        assert took < BOUND + SLACK
        assert rows(w.url)[("host", "h2")] == ("unreachable", "controller")
        # tried again with the backoff while it is gone, and subscribed when it returns
        await wait_until_async(
            lambda: w.hosts.calls[("h2", Step.SUBSCRIBE)] >= subscribed + 3, SLACK, "retries"
        )
        w.hosts.restart("h2")
        await until(service, "host", "h2", "up", SLACK)
        await wait_until_async(lambda: ("host", "h2", True) in hook.told, SLACK, "hook up")
        assert [t for t in hook.told if t[0] == "host"] == [
            ("host", "h2", False),
            ("host", "h2", True),
        ]

    run(w, scenario)


def test_a_host_heard_again_is_reconciled_at_once_not_at_the_next_check(w: World) -> None:
    """One home for whether an agent answers: the reconcile watcher follows failure
    detection. h3 lost a connection's pieces while its agent was down; when detection hears
    it again, the pieces are put back without waiting for the watcher's own check (an hour
    away here), and the host view's `reachable` said false, then true."""

    async def scenario(service: Service, hook: Recorder) -> None:
        await until(service, "host", "h3", "up", SLACK)
        await service.create_connection(ACME, "acme", voice("v", 5201, "10mbit"))
        [name] = w.pieces()["h3"]
        w.hosts.kill("h3")
        await until(service, "host", "h3", "unreachable", SLACK)
        await until_reachable(service, "h3", False)
        held = w.hosts.running("h3")
        w.hosts.set_running(
            "h3", held.model_copy(update={"srv6": held.srv6.model_copy(update={"connections": []})})
        )  # what h3 lost while it was down
        w.hosts.restart("h3")
        await wait_until_async(lambda: name in w.pieces()["h3"], SLACK, "h3 reconciled")
        assert {h.name: h.reachable for h in await service.hosts(PROVIDER)}["h3"] is True

    run(w, scenario)


def test_a_hung_agent_is_found_by_the_probe_within_its_bound(w: World) -> None:
    async def scenario(service: Service, hook: Recorder) -> None:
        await until(service, "host", "h3", "up", SLACK)
        w.hosts.hang("h3")  # no session ends: only the probe finds it
        took = await until(service, "host", "h3", "unreachable", BOUND + SLACK)
        assert took < BOUND + SLACK
        status = {v.name: v.status for v in await service.hosts(PROVIDER)}["h3"]
        assert "probe" in status.reason
        w.hosts.resume("h3")
        await until(service, "host", "h3", "up", SLACK)

    run(w, scenario)


def test_a_restarted_controller_tells_the_hooks_nothing_that_did_not_change(w: World) -> None:
    w.hosts.set_underlay("h1", "ul-h3", False)

    async def first(service: Service, hook: Recorder) -> None:
        await until(service, "link", "h1-h3", "down", SLACK)
        await wait_until_async(lambda: hook.told, SLACK, "the hook told")
        assert hook.told == [("link", "h1-h3", False)]

    async def again(service: Service, hook: Recorder) -> None:
        for host in ("h1", "h2", "h3"):
            await until(service, "host", host, "up", SLACK)
        w.hosts.set_underlay("h2", "ul-h3", False)  # a real change after the start
        await until(service, "link", "h2-h3", "down", SLACK)
        await wait_until_async(lambda: hook.told, SLACK, "the hook told")
        assert hook.told == [("link", "h2-h3", False)]  # not h1-h3 again

    run(w, first)
    assert rows(w.url)[("link", "h1-h3")] == ("down", "h1")
    run(w, again)


def test_a_link_is_down_when_either_end_says_so_and_unknown_when_neither_is_heard() -> None:
    up = {"h1": {"ul-h2": True}, "h2": {"ul-h1": True}}
    assert link_status(("h1", "h2"), up)[0] == OperState.UP
    one_down = {"h1": {"ul-h2": True}, "h2": {"ul-h1": False}}
    assert link_status(("h1", "h2"), one_down)[:3:2] == (OperState.DOWN, "h2")
    assert link_status(("h1", "h2"), {"h1": {"ul-h2": True}})[0] == OperState.UP
    assert link_status(("h1", "h2"), {})[0] == OperState.UNKNOWN


def test_the_hooks_hear_only_real_changes() -> None:
    key = ("link", "h1-h2")
    fresh = Deliveries({})
    assert fresh.news(key, OperState.UP) is None  # first seen up: no change
    assert fresh.news(key, OperState.DOWN) is False
    assert fresh.news(key, OperState.DOWN) is None
    assert fresh.news(key, OperState.UNKNOWN) is None  # not heard: no news either way
    assert fresh.news(key, OperState.DOWN) is None
    assert fresh.news(key, OperState.UP) is True
    assert fresh.news(key, OperState.UP) is None
    host = ("host", "h1")
    known_down = Deliveries({host: "unreachable"})
    assert known_down.news(host, OperState.UNREACHABLE) is None
    assert known_down.news(host, OperState.UP) is True


def test_a_change_the_database_refused_does_not_end_the_watching(
    w: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = health.write_state
    refused: list[str] = []

    def full_once(session: Session, key: Key, now: ElementStatus) -> None:
        if key == ("link", "h1-h2") and now.state == "down" and not refused:
            refused.append(now.state)
            raise OperationalError("UPDATE element_state", {}, Exception("disk full"))
        real(session, key, now)

    monkeypatch.setattr(health, "write_state", full_once)

    async def scenario(service: Service, hook: Recorder) -> None:
        await until(service, "link", "h1-h2", "up", SLACK)
        w.hosts.set_underlay("h1", "ul-h2", False)
        await wait_until_async(lambda: refused, SLACK, "the write refused")
        w.hosts.set_underlay("h1", "ul-h2", True)
        w.hosts.set_underlay("h1", "ul-h2", False)  # h1's watcher still listens
        await until(service, "link", "h1-h2", "down", SLACK)

    run(w, scenario)
