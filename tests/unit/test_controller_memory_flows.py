"""The service's logic on hosts in memory (tests/controller_memory_support.py): connections
created, modified and released put on every host exactly what the database says; placement,
admission and rearrangement decide as documented. The hosts check every candidate with the
model's own checks, as agents do; what is asserted is read from the hosts and the database,
not from the service's answers alone."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.controller_memory_support import (
    ACME,
    HOSTS,
    MBIT,
    PROVIDER,
    World,
    cost,
    database_state,
    held_per_direction,
    live_connections,
    voice,
    world,
)
from vnet.controller.errors import Rejected
from vnet.controller.service.core import Service
from vnet.model.controller_api import ModifyRequest, RouterRequest


@pytest.fixture
def w(tmp_path: Path) -> World:
    return world(tmp_path)


def test_create_modify_release_leave_on_each_host_what_the_database_says(w: World) -> None:
    async def scenario(svc: Service) -> list[list[str]]:
        paths = []
        made = await svc.create_connection(ACME, "acme", voice("v", 5201, "20mbit"))
        paths.append(made.connection.path)
        name = f"vc{next(iter(live_connections(w.url)))[2:]}"
        assert w.pieces() == {"h1": {name}, "h2": set(), "h3": {name}}
        assert held_per_direction(w.url) == {("h1-h3", True): cost(20, 1)}
        # more than the direct link holds: make-before-break onto h1 -> h2 -> h3
        moved = await svc.modify_connection(ACME, "acme", "v", ModifyRequest(bandwidth="200mbit"))
        paths.append(moved.connection.path)
        assert w.pieces() == {h: {name} for h in HOSTS}
        assert held_per_direction(w.url) == {
            ("h1-h2", True): cost(200, 2),
            ("h2-h3", True): cost(200, 2),
        }
        assert live_connections(w.url) == {name: ("established", 2)}
        released = await svc.release_connection(ACME, "acme", "v")
        assert released.status == "released"
        return paths

    assert w.run(scenario) == [["h1", "h3"], ["h1", "h2", "h3"]]
    assert w.pieces() == {h: set() for h in HOSTS}
    assert held_per_direction(w.url) == {} and live_connections(w.url) == {}
    for host in HOSTS:
        assert w.hosts.pending(host) is None


def test_a_vr_without_a_host_goes_where_placement_says(w: World) -> None:
    """The host with the most free capacity on its links: h2 (two 1 Gbit/s links) while
    nothing is held; once a connection holds most of h2's links both ways, h1 and h3 have as
    much left and as many VRs, and the first in inventory order, h1, takes the next."""

    async def scenario(svc: Service) -> list[str]:
        placed = []
        for k, bandwidth in ((1, None), (2, "800mbit")):
            if bandwidth is not None:
                request = voice(
                    f"big{k}", 5200 + k, bandwidth, path=["h1", "h2", "h3"], bidirectional=True
                )
                await svc.create_connection(ACME, "acme", request)
            itf = {"network": "lan1", "ipv4": f"10.61.1.{10 + k}/24"}
            vr = await svc.create_router(
                ACME, "acme", RouterRequest(name=f"p{k}", interfaces=[itf])
            )
            placed.append(vr.host)
        return placed

    placed = w.run(scenario)
    assert placed == ["h2", "h1"]
    assert "p1" in {vr.name for vr in w.hosts.running("h2").routers}
    assert "p2" in {vr.name for vr in w.hosts.running("h1").routers}


def test_concurrent_creates_never_hold_more_than_a_link_carries(w: World) -> None:
    """Twelve requests of 10 Mbit/s pinned to the 100 Mbit/s link at once: as many as fit are
    admitted, each other is rejected naming the link direction and what it lacks."""

    async def scenario(svc: Service) -> tuple[int, list[BaseException | object]]:
        links = {link.name: link for link in await svc.links(PROVIDER)}
        capacity = links["h1-h3"].capacity_bps
        requests = [voice(f"c{k}", 6000 + k, "10mbit", path=["h1", "h3"]) for k in range(12)]
        answers = await asyncio.gather(
            *(svc.create_connection(ACME, "acme", r) for r in requests), return_exceptions=True
        )
        return capacity, answers

    capacity, answers = w.run(scenario)
    admitted = [a for a in answers if not isinstance(a, BaseException)]
    rejected = [a for a in answers if isinstance(a, BaseException)]
    each = cost(10, 1)
    assert len(admitted) == capacity // each and len(rejected) == 12 - len(admitted)
    held = held_per_direction(w.url)
    assert held == {("h1-h3", True): len(admitted) * each} and held[("h1-h3", True)] <= capacity
    for refusal in rejected:
        assert isinstance(refusal, Rejected), refusal
        [short] = refusal.shortfalls
        free = capacity - len(admitted) * each
        assert (short.link, short.direction) == ("h1-h3", "h1 -> h3")
        assert (short.requested_bps, short.free_bps, short.missing_bps) == (each, free, each - free)
    names = {c.name for c in w.hosts.running("h1").srv6.connections}
    assert len(names) == len(admitted) and names == set(live_connections(w.url))


def test_a_rejection_names_every_direction_that_lacks_capacity_and_changes_nothing(
    w: World,
) -> None:
    async def scenario(svc: Service) -> Rejected:
        await svc.create_connection(
            ACME, "acme", voice("a", 5201, "800mbit", path=["h1", "h2", "h3"])
        )
        before = database_state(w.url), w.pieces()
        with pytest.raises(Rejected) as refused:
            both = voice("b", 5202, "200mbit", path=["h1", "h2", "h3"], bidirectional=True)
            await svc.create_connection(ACME, "acme", both)
        assert (database_state(w.url), w.pieces()) == before
        return refused.value

    refused = w.run(scenario)
    assert (refused.status, refused.code, refused.field) == (409, "no-capacity", "path")
    free = 990 * MBIT - cost(800, 2)  # the link's capacity for connections, less a's
    want = cost(200, 2)
    shown = [
        (s.link, s.direction, s.requested_bps, s.free_bps, s.missing_bps)
        for s in refused.shortfalls
    ]
    # the reverse directions have room: not named
    assert sorted(shown) == [
        ("h1-h2", "h1 -> h2", want, free, want - free),
        ("h2-h3", "h2 -> h3", want, free, want - free),
    ]


def test_rearrangement_moves_a_connection_make_before_break_to_let_a_request_in(
    w: World,
) -> None:
    """The direct link holds a small connection the controller placed; a request that needs
    the whole direct link gets it once that connection moves over h2 (said in the answer)."""

    async def scenario(svc: Service) -> object:
        small = await svc.create_connection(ACME, "acme", voice("small", 5201, "60mbit"))
        assert small.connection.path == ["h1", "h3"]
        return await svc.create_connection(
            ACME, "acme", voice("big", 5202, "60mbit", path=["h1", "h3"])
        )

    answer = w.run(scenario)
    [move] = answer.moved  # type: ignore[attr-defined]
    assert (move.connection, move.old_path, move.new_path) == (
        "small", ["h1", "h3"], ["h1", "h2", "h3"],
    )  # fmt: skip
    states = live_connections(w.url)
    assert sorted(states.values()) == [("established", 1), ("established", 2)]
    small_name = next(n for n, (_, gen) in states.items() if gen == 2)
    big_name = next(n for n in states if n != small_name)
    assert w.pieces() == {
        "h1": {small_name, big_name}, "h2": {small_name}, "h3": {small_name, big_name},
    }  # fmt: skip
    assert held_per_direction(w.url) == {
        ("h1-h3", True): cost(60, 1), ("h1-h2", True): cost(60, 2), ("h2-h3", True): cost(60, 2),
    }  # fmt: skip
