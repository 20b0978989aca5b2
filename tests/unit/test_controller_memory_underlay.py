"""Hosts and links added and removed through the service (controller/service/underlay.py),
on hosts in memory: a removal drains first and is all or nothing; a removed element is
never planned on again; adding is idempotent. Asserted from the hosts and the database."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.controller_memory_support import (
    ACME,
    PROVIDER,
    World,
    cost,
    database_state,
    held_per_direction,
    voice,
    world,
)
from vnet.controller.errors import BadRequest, Conflict, Forbidden, InUse, NotFound
from vnet.controller.service.core import Service
from vnet.model.controller_api import HostRequest, LinkRequest


@pytest.fixture
def w(tmp_path: Path) -> World:
    return world(tmp_path)


def test_a_removed_link_is_drained_first_and_never_planned_on_again(w: World) -> None:
    async def scenario(svc: Service) -> list[str]:
        await svc.create_connection(ACME, "acme", voice("v", 5201, "10mbit"))
        removed = await svc.remove_link(PROVIDER, "h1-h3")
        assert [(m.connection, m.new_path) for m in removed.moved] == [("v", ["h1", "h2", "h3"])]
        assert "h1-h3" not in {x.name for x in await svc.links(PROVIDER)}
        again = await svc.remove_link(PROVIDER, "h1-h3")  # idempotent: nothing more to move
        assert (again.kind, again.name, again.moved) == ("link", "h1-h3", [])
        # the shortest path is gone: a new connection goes over h2, a pinned one is refused
        made = await svc.create_connection(ACME, "acme", voice("n", 5202, "10mbit"))
        with pytest.raises(BadRequest) as refused:
            pinned = voice("p", 5203, "10mbit", path=["h1", "h3"])
            await svc.create_connection(ACME, "acme", pinned)
        assert refused.value.field == "path" and "share no link" in refused.value.reason
        return made.connection.path

    assert w.run(scenario) == ["h1", "h2", "h3"]
    assert held_per_direction(w.url) == {
        ("h1-h2", True): 2 * cost(10, 2),
        ("h2-h3", True): 2 * cost(10, 2),
    }


def test_a_removal_that_cannot_drain_is_refused_naming_each_connection(w: World) -> None:
    async def scenario(svc: Service) -> InUse:
        await svc.create_connection(ACME, "acme", voice("free", 5201, "10mbit"))
        await svc.create_connection(
            ACME, "acme", voice("pinned", 5202, "10mbit", path=["h1", "h3"])
        )
        before = database_state(w.url), w.pieces()
        with pytest.raises(InUse) as refused:
            await svc.remove_host(PROVIDER, "h3")
        assert (database_state(w.url), w.pieces()) == before
        assert {h.name for h in await svc.hosts(PROVIDER)} == {"h1", "h2", "h3"}
        return refused.value

    refused = w.run(scenario)
    assert (refused.status, refused.code) == (409, "in-use")
    assert sorted((u.connection, u.reason) for u in refused.body().unmovable) == [
        ("free", "it starts or ends on host h3, where its end host is"),
        ("pinned", "its path h1 -> h3 was asked for explicitly"),
    ]


def test_a_removed_host_takes_its_links_out_of_service(w: World) -> None:
    async def scenario(svc: Service) -> tuple[list[str], list[str], list[str]]:
        filler = voice("filler", 5300, "80mbit", path=["h1", "h3"])
        await svc.create_connection(ACME, "acme", filler)
        await svc.create_connection(ACME, "acme", voice("via", 5201, "10mbit"))  # over h2
        await svc.release_connection(ACME, "acme", "filler")
        removed = await svc.remove_host(PROVIDER, "h2")
        hosts = [h.name for h in await svc.hosts(PROVIDER)]
        links = [x.name for x in await svc.links(PROVIDER)]
        [move] = removed.moved
        return move.new_path, hosts, links

    path, hosts, links = w.run(scenario)
    assert (path, hosts, links) == (["h1", "h3"], ["h1", "h3"], ["h1-h3"])
    assert held_per_direction(w.url) == {("h1-h3", True): cost(10, 1)}


def test_hosts_and_links_are_added_once_and_put_back_after_removal(w: World) -> None:
    async def scenario(svc: Service) -> None:
        view, added = await svc.add_host(PROVIDER, HostRequest(name="h4"))
        assert (view.name, added) == ("h4", True)
        assert (await svc.add_host(PROVIDER, HostRequest(name="h4")))[1] is False
        link = LinkRequest(a="h3", b="h4", rate="1gbit")
        view, added = await svc.add_link(PROVIDER, link)
        assert (view.name, view.capacity_bps, added) == ("h3-h4", 990_000_000, True)
        assert (await svc.add_link(PROVIDER, link))[1] is False
        with pytest.raises(Conflict) as differs:
            await svc.add_link(PROVIDER, LinkRequest(a="h3", b="h4", rate="2gbit"))
        assert differs.value.code == "link-exists"
        with pytest.raises(NotFound) as unknown:
            await svc.add_link(PROVIDER, LinkRequest(a="h4", b="h9", rate="1gbit"))
        assert (unknown.value.field, unknown.value.code) == ("b", "unknown-host")
        with pytest.raises(Forbidden):
            await svc.add_host(ACME, HostRequest(name="h5"))
        await svc.remove_link(PROVIDER, "h3-h4")
        await svc.remove_host(PROVIDER, "h4")
        assert "h4" not in {h.name for h in await svc.hosts(PROVIDER)}
        with pytest.raises(NotFound):  # a link to a removed host
            await svc.add_link(PROVIDER, link)
        assert (await svc.add_host(PROVIDER, HostRequest(name="h4")))[1] is True
        assert (await svc.add_link(PROVIDER, link))[1] is True
        assert "h3-h4" in {x.name for x in await svc.links(PROVIDER)}

    w.run(scenario)
