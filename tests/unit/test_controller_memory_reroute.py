"""Draining links and hosts (controller/service/reroute.py) on hosts in memory
(tests/controller_memory_support.py): every connection crossing them is moved
make-before-break onto a path without them, with the usual admission, or the drain says
which cannot move and why, and (all or nothing) changes nothing. What is asserted is read
from the hosts and the database with the tests' own queries."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.controller_memory_support import (
    ACME,
    PROVIDER,
    World,
    cost,
    database_state,
    event_kinds,
    held_per_direction,
    live_connections,
    voice,
    world,
)
from vnet.controller.held import held_connections
from vnet.controller.service.core import Service
from vnet.controller.service.reroute import Avoid
from vnet.controller.southbound.memory import Failure, Step
from vnet.model.controller_api import Drained, Unmovable


@pytest.fixture
def w(tmp_path: Path) -> World:
    return world(tmp_path)


async def drain(svc: Service, all_or_nothing: bool = True, **avoid: list[str]) -> Drained:
    return await svc.reroute.drain(
        await svc.inventory(), Avoid.of(**avoid), all_or_nothing=all_or_nothing
    )


def test_a_drained_link_carries_nothing_and_every_connection_runs_around_it(w: World) -> None:
    async def scenario(svc: Service) -> Drained:
        for k, rate in ((1, "10mbit"), (2, "20mbit")):
            made = await svc.create_connection(ACME, "acme", voice(f"v{k}", 5200 + k, rate))
            assert made.connection.path == ["h1", "h3"]
        return await drain(svc, links=["h1-h3"])

    drained = w.run(scenario)
    assert drained.unmovable == []
    assert sorted((m.connection, m.old_path, m.new_path) for m in drained.moved) == [
        ("v1", ["h1", "h3"], ["h1", "h2", "h3"]),
        ("v2", ["h1", "h3"], ["h1", "h2", "h3"]),
    ]
    # nothing left on the drained link, each connection once on its new path: no leak
    assert held_per_direction(w.url) == {
        ("h1-h2", True): cost(10, 2) + cost(20, 2),
        ("h2-h3", True): cost(10, 2) + cost(20, 2),
    }
    names = set(live_connections(w.url))
    assert live_connections(w.url) == {n: ("established", 2) for n in names}
    assert w.pieces() == {"h1": names, "h2": names, "h3": names}
    assert event_kinds(w.url).count("rerouted") == 2


def test_a_drain_with_one_unmovable_connection_changes_nothing(w: World) -> None:
    async def scenario(svc: Service) -> Drained:
        await svc.create_connection(ACME, "acme", voice("free", 5201, "10mbit"))
        await svc.create_connection(
            ACME, "acme", voice("pinned", 5202, "10mbit", path=["h1", "h3"])
        )
        before = database_state(w.url), w.pieces(), event_kinds(w.url)
        drained = await drain(svc, links=["h1-h3"])
        assert (database_state(w.url), w.pieces(), event_kinds(w.url)) == before
        return drained

    drained = w.run(scenario)
    assert drained.moved == []
    [stuck] = drained.unmovable
    assert (stuck.connection, stuck.tenant, stuck.path) == ("pinned", "acme", ["h1", "h3"])
    assert stuck.reason == "its path h1 -> h3 was asked for explicitly"


def test_a_drained_host_whose_survivors_lack_room_is_refused_naming_the_link(w: World) -> None:
    """a (60 Mbit/s) fills most of the direct link; b (60 Mbit/s) runs over h2. Draining h2
    would put b on the direct link, which lacks room: refused, nothing changed."""

    async def scenario(svc: Service) -> Drained:
        await svc.create_connection(ACME, "acme", voice("a", 5201, "60mbit"))
        made = await svc.create_connection(ACME, "acme", voice("b", 5202, "60mbit"))
        assert made.connection.path == ["h1", "h2", "h3"]
        before = database_state(w.url), w.pieces()
        drained = await drain(svc, hosts=["h2"])
        assert (database_state(w.url), w.pieces()) == before
        return drained

    drained = w.run(scenario)
    [stuck] = drained.unmovable
    assert (stuck.connection, stuck.path) == ("b", ["h1", "h2", "h3"])
    assert "link h1-h3 (h1 -> h3) lacks" in stuck.reason, stuck.reason


def test_a_partial_drain_moves_what_fits_and_never_over_admits(w: World) -> None:
    """Three 40 Mbit/s connections over h2 (the direct link was full when they came) and
    room for two of them on the direct link: draining h2 without all-or-nothing moves two,
    names the third, and the direct link holds no more than it carries."""

    async def scenario(svc: Service) -> tuple[Drained, int]:
        capacity = {x.name: x.capacity_bps for x in await svc.links(PROVIDER)}["h1-h3"]
        filler = voice("filler", 5300, "80mbit", path=["h1", "h3"])
        await svc.create_connection(ACME, "acme", filler)
        for k in range(3):
            made = await svc.create_connection(ACME, "acme", voice(f"c{k}", 5200 + k, "40mbit"))
            assert made.connection.path == ["h1", "h2", "h3"]
        await svc.release_connection(ACME, "acme", "filler")
        return await drain(svc, all_or_nothing=False, hosts=["h2"]), capacity

    drained, capacity = w.run(scenario)
    assert [m.new_path for m in drained.moved] == [["h1", "h3"], ["h1", "h3"]]
    [stuck] = drained.unmovable
    assert stuck.path == ["h1", "h2", "h3"] and "lacks" in stuck.reason, stuck.reason
    held = held_per_direction(w.url)
    assert held[("h1-h3", True)] == 2 * cost(40, 1) <= capacity
    assert held[("h1-h2", True)] == held[("h2-h3", True)] == cost(40, 2)


def test_a_move_an_agent_refuses_leaves_the_connection_where_it_was(w: World) -> None:
    async def scenario(svc: Service) -> Drained:
        await svc.create_connection(ACME, "acme", voice("v", 5201, "10mbit"))
        before = database_state(w.url), w.pieces()
        w.hosts.fail("h2", Step.COMMIT, Failure.REFUSE)
        drained = await drain(svc, links=["h1-h3"])
        assert (database_state(w.url), w.pieces()) == before  # no reservation leaked
        return drained

    drained = w.run(scenario)
    assert drained.moved == []
    [stuck] = drained.unmovable
    assert stuck.connection == "v" and "h2" in stuck.reason, stuck.reason


def test_a_connection_released_after_the_plan_is_not_moved(w: World) -> None:
    """The drain plans, then reserves: a connection released in between is said to be gone
    (unmovable, with why), not an error of the controller's, and nothing is reserved for it."""

    async def scenario(svc: Service) -> list[object]:
        await svc.create_connection(ACME, "acme", voice("v", 5201, "10mbit"))
        inv, avoid = await svc.inventory(), Avoid.of(links=["h1-h3"])
        [planned] = (await svc.reroute.plan(inv, avoid)).moves
        await svc.release_connection(ACME, "acme", "v")
        return list(await svc.reroute.start_all(inv, avoid, [planned.held]))

    [gone] = w.run(scenario)
    assert isinstance(gone, Unmovable) and gone.reason == "it was released meanwhile", gone
    assert held_per_direction(w.url) == {}


def test_a_drain_moves_its_connections_together(w: World) -> None:
    """Six connections drained off h1-h3 are reserved in one transaction and moved side by
    side: each host commits once or twice for all of them (one after the other: six times)."""

    async def scenario(svc: Service) -> Drained:
        for k in range(6):
            await svc.create_connection(ACME, "acme", voice(f"v{k}", 5201 + k, "5mbit"))
        w.hosts.calls.clear()
        return await drain(svc, links=["h1-h3"])

    drained = w.run(scenario)
    assert len(drained.moved) == 6 and drained.unmovable == []
    commits = {h: w.hosts.calls[(h, Step.COMMIT)] for h in ("h1", "h2", "h3")}
    assert max(commits.values()) <= 2, commits
    assert held_per_direction(w.url) == {
        ("h1-h2", True): 6 * cost(5, 2),
        ("h2-h3", True): 6 * cost(5, 2),
    }


def test_all_or_nothing_reserves_none_when_one_cannot_be(w: World) -> None:
    """Reserving the moves of an all-or-nothing drain: one of them cannot move (its path was
    asked for explicitly), so none is reserved and every connection stays as it was."""

    async def scenario(svc: Service) -> list[str]:
        await svc.create_connection(ACME, "acme", voice("free", 5201, "5mbit"))
        pinned = voice("pinned", 5202, "5mbit", path=["h1", "h3"])
        await svc.create_connection(ACME, "acme", pinned)
        before = database_state(w.url)
        inv, avoid = await svc.inventory(), Avoid.of(links=["h1-h3"])
        helds = await svc.db.read(held_connections)
        started = await svc.reroute.start_all(inv, avoid, helds, all_or_nothing=True)
        assert database_state(w.url) == before  # nothing reserved, no state changed
        return sorted(x.connection for x in started if isinstance(x, Unmovable))

    assert w.run(scenario) == ["pinned"]
