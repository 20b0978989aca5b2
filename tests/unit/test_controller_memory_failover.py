"""Rerouting on failure (controller/service/failover.py) on hosts in memory: a connection on a
failed link or host moves onto a surviving path when one has room; otherwise it is degraded
with the reason, keeps what it held, and runs again where it was when the element returns;
moved ones stay on their new path (no flapping). Never over-admitted, nothing leaked: the
hosts and the database are read with the tests' own queries."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

import pytest
from sqlalchemy import event

from tests.controller_memory_support import (
    ACME,
    BETA,
    PROVIDER,
    World,
    cost,
    event_kinds,
    held_per_direction,
    live_connections,
    voice,
    world,
)
from vnet.controller.errors import NotFound
from vnet.controller.service import moves
from vnet.controller.service.core import Service
from vnet.controller.service.reroute import Avoid
from vnet.controller.southbound.memory import Failure, Step
from vnet.tools.wait import wait_until_async


@pytest.fixture
def w(tmp_path: Path) -> World:
    return world(tmp_path)


def test_a_failed_link_with_spare_capacity_elsewhere_moves_its_connections(w: World) -> None:
    async def scenario(svc: Service) -> list[str]:
        await svc.create_connection(ACME, "acme", voice("v", 5201, "10mbit"))
        report = await svc.failover.link_down("h1-h3")
        assert [(m.connection, m.new_path) for m in report.moved] == [("v", ["h1", "h2", "h3"])]
        assert report.degraded == []
        # while it is down, a new connection is planned around it
        made = await svc.create_connection(ACME, "acme", voice("n", 5202, "10mbit"))
        assert made.connection.path == ["h1", "h2", "h3"]
        back = await svc.failover.link_up("h1-h3")
        assert (back.moved, back.degraded, back.restored) == ([], [], [])
        return (await svc.connection(ACME, "acme", "v")).path  # no flapping: stays

    assert w.run(scenario) == ["h1", "h2", "h3"]
    assert held_per_direction(w.url) == {
        ("h1-h2", True): 2 * cost(10, 2),
        ("h2-h3", True): 2 * cost(10, 2),
    }
    names = set(live_connections(w.url))
    assert w.pieces() == {h: names for h in ("h1", "h2", "h3")}


def test_without_surviving_capacity_a_connection_is_degraded_then_back_with_its_link(
    w: World,
) -> None:
    """big (200 Mbit/s) runs over h2; the direct link cannot carry it: when h1-h2 fails it is
    degraded, keeps its pieces and reservations (nothing else may take them), and is
    established again, unchanged, when the link returns."""

    async def scenario(svc: Service) -> None:
        made = await svc.create_connection(ACME, "acme", voice("big", 5201, "200mbit"))
        assert made.connection.path == ["h1", "h2", "h3"]
        before = held_per_direction(w.url), w.pieces()
        report = await svc.failover.link_down("h1-h2")
        [stuck] = report.degraded
        assert stuck.connection == "big" and "h1-h3" in stuck.reason, stuck.reason
        view = await svc.connection(ACME, "acme", "big")
        assert (view.status, view.path) == ("degraded", ["h1", "h2", "h3"])
        assert (held_per_direction(w.url), w.pieces()) == before
        history = await svc.history(ACME, "acme", "big")
        assert history[-1].kind == "degraded" and "lacks" in history[-1].detail
        again = await svc.failover.retry()  # still no room: degraded, said once
        assert [d.connection for d in again.degraded] == ["big"]
        assert event_kinds(w.url).count("degraded") == 1
        back = await svc.failover.link_up("h1-h2")
        assert back.restored == ["acme/big"]
        view = await svc.connection(ACME, "acme", "big")
        assert (view.status, view.path, view.generation) == ("established", made.connection.path, 1)
        assert (held_per_direction(w.url), w.pieces()) == before

    w.run(scenario)
    assert event_kinds(w.url)[-2:] == ["degraded", "restored"]


def test_a_degraded_connection_moves_when_capacity_frees(w: World) -> None:
    """On a failed h2 the direct link is full with a pinned connection; its release frees
    the room and the degraded connection moves there (never beyond what the link carries)."""

    async def scenario(svc: Service) -> tuple[str, list[str], int, object]:
        capacity = {x.name: x.capacity_bps for x in await svc.links(PROVIDER)}["h1-h3"]
        await svc.create_connection(ACME, "acme", voice("fill", 5300, "80mbit", path=["h1", "h3"]))
        await svc.create_connection(ACME, "acme", voice("via", 5201, "40mbit"))
        w.hosts.fail("h2", Step.LOCK, Failure.DIE, times=100)  # asked anything: it is dead
        report = await svc.failover.host_down("h2")
        assert [d.connection for d in report.degraded] == ["via"]
        await svc.release_connection(ACME, "acme", "fill")
        again = await svc.failover.retry()  # what the release starts in the background
        view = await svc.connection(ACME, "acme", "via")
        return view.status, view.path, capacity, again

    status, path, capacity, again = w.run(scenario)
    assert (status, path) == ("established", ["h1", "h3"]), again
    assert held_per_direction(w.url) == {("h1-h3", True): cost(40, 1)}
    assert cost(40, 1) <= capacity
    name = next(iter(live_connections(w.url)))
    assert {h: w.pieces()[h] for h in ("h1", "h3")} == {"h1": {name}, "h3": {name}}


def test_an_unknown_element_is_refused(w: World) -> None:
    async def scenario(svc: Service) -> None:
        with pytest.raises(NotFound) as unknown:
            await svc.failover.link_down("h1-h9")
        assert unknown.value.code == "unknown-link"
        assert (svc.failover.links, svc.failover.hosts) == (set(), set())

    w.run(scenario)


def test_every_change_is_an_event_of_the_connections_a_caller_may_see(w: World) -> None:
    async def scenario(svc: Service) -> tuple[list[tuple[str, str, str]], list[object]]:
        seen, nothing = await svc.connection_changes(PROVIDER, None)
        assert nothing == []
        await svc.create_connection(ACME, "acme", voice("big", 5201, "200mbit"))
        await svc.failover.link_down("h1-h2")
        await svc.failover.link_up("h1-h2")
        _, changes = await svc.connection_changes(ACME, seen)
        _, theirs = await svc.connection_changes(BETA, seen)
        return [(c.tenant, c.name, c.kind) for c in changes], list(theirs)

    changes, theirs = w.run(scenario)
    assert changes == [
        ("acme", "big", "created"),
        ("acme", "big", "degraded"),
        ("acme", "big", "restored"),
    ]
    assert theirs == []


def test_a_degraded_connection_can_be_released(w: World) -> None:
    async def scenario(svc: Service) -> str:
        await svc.create_connection(ACME, "acme", voice("big", 5201, "200mbit"))
        await svc.failover.link_down("h1-h2")
        return (await svc.release_connection(ACME, "acme", "big")).status

    assert w.run(scenario) == "released"
    assert held_per_direction(w.url) == {} and live_connections(w.url) == {}
    assert w.pieces() == {h: set() for h in ("h1", "h2", "h3")}


def test_the_moves_of_one_failure_share_their_agent_transactions(w: World) -> None:
    """Eight connections on a failed link are started in one database transaction and moved
    side by side: their steps meet in the agents' group commit, so each host commits a few
    times for all of them (once each today), not once per connection (8 each on h1 and h2 when
    they moved one after the other)."""
    names = [f"v{k}" for k in range(8)]

    async def scenario(svc: Service) -> list[list[str]]:
        for k, name in enumerate(names):
            await svc.create_connection(ACME, "acme", voice(name, 5201 + k, "5mbit"))
        w.hosts.calls.clear()
        report = await svc.failover.link_down("h1-h3")
        assert sorted(m.connection for m in report.moved) == names
        assert report.degraded == []
        return [(await svc.connection(ACME, "acme", n)).path for n in names]

    assert w.run(scenario) == [["h1", "h2", "h3"]] * len(names)
    commits = {h: w.hosts.calls[(h, Step.COMMIT)] for h in ("h1", "h2", "h3")}
    assert max(commits.values()) <= 2, commits
    assert held_per_direction(w.url) == {
        ("h1-h2", True): len(names) * cost(5, 2),
        ("h2-h3", True): len(names) * cost(5, 2),
    }
    assert len(live_connections(w.url)) == len(names)
    assert w.pieces() == {h: set(live_connections(w.url)) for h in ("h1", "h2", "h3")}


@pytest.mark.parametrize("count", [4, 16])
def test_the_moves_of_one_failure_write_the_ledger_in_statements_of_their_own_number(
    tmp_path: Path, count: int
) -> None:
    """Reserving and switching the moves of one failure locks and writes the ledger in a
    fixed number of statements, whatever the number of connections (each move locked its
    links, summed its own rows and wrote each link's total in statements of its own: 300 of
    the 3000 statements of 100 moves); only the rows themselves are one per move and link."""
    w = world(tmp_path)
    statements: list[str] = []

    async def scenario(svc: Service) -> None:
        for k in range(count):
            await svc.create_connection(ACME, "acme", voice(f"v{k}", 5201 + k, "500kbit"))
        listen = event.listen
        listen(svc.db.engine, "before_cursor_execute", lambda *a: statements.append(a[2]))
        report = await svc.failover.link_down("h1-h3")
        assert len(report.moved) == count, report

    w.run(scenario)
    ledger = Counter(
        s.split(" ")[0] for s in statements if s.startswith(("UPDATE link ", "SELECT link."))
    )
    # the links locked and read once; their totals: two links gained, one released
    assert ledger == {"SELECT": 1, "UPDATE": 3}, ledger
    reservations = [s for s in statements if s.startswith("UPDATE reservation")]
    assert len(reservations) == 2, reservations  # released and switched, for all at once


def test_moves_off_a_failed_link_break_without_waiting_for_packets_on_it(
    w: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A planned move waits between its switch and its break for packets on the old path
    (moves.IN_FLIGHT, made 20 s here); a move off a failed path does not: nothing on it
    gets anywhere. The failover answers in seconds, not after the 20."""
    monkeypatch.setattr(moves, "IN_FLIGHT", 20.0)

    async def scenario(svc: Service) -> None:
        for k in range(3):
            await svc.create_connection(ACME, "acme", voice(f"v{k}", 5201 + k, "5mbit"))
        report = await asyncio.wait_for(svc.failover.link_down("h1-h3"), 5)
        assert len(report.moved) == 3 and report.degraded == [], report
        inv = await svc.inventory()
        planned = (await svc.reroute.plan(inv, Avoid.of(links=["h1-h2"]))).moves
        with pytest.raises(TimeoutError):  # the same moves, planned: they wait
            await asyncio.wait_for(svc.reroute.drain(inv, Avoid.of(links=["h1-h2"])), 2)
        assert planned

    w.run(scenario)


def test_the_moves_off_a_failed_link_are_one_transaction_on_each_host_of_both_paths(
    w: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing on a failed path gets anywhere, so its moves skip make-before-break's three
    steps in a row: the new transit (h2) and the ingress switch (h1) go in one transaction,
    one confirmed commit per host for all the moves (h3's egress stays as it was)."""
    commits: list[tuple[str, str]] = []
    commit = w.hosts.commit

    async def recording(host: str, lease, token: str, timeout: int) -> None:  # type: ignore[no-untyped-def]
        commits.append((host, token))
        await commit(host, lease, token, timeout)

    async def scenario(svc: Service) -> None:
        for k in range(4):
            await svc.create_connection(ACME, "acme", voice(f"v{k}", 5201 + k, "5mbit"))
        monkeypatch.setattr(w.hosts, "commit", recording)
        report = await svc.failover.link_down("h1-h3")
        assert len(report.moved) == 4, report

    w.run(scenario)
    assert sorted(host for host, _ in commits) == ["h1", "h2"], commits
    assert len({token for _, token in commits}) == 1, commits
    names = set(live_connections(w.url))
    assert w.pieces() == {h: names for h in ("h1", "h2", "h3")}


def test_moves_an_agent_refuses_degrade_their_connections_and_leave_nothing(w: World) -> None:
    """Six connections on a failed link; h2's agent refuses every edit, so every move fails
    (the group commit splits the shared transaction down to single moves, each refused):
    each connection is degraded where it was, holding what it held, and nothing of the
    moves remains (no reservation on h1-h2, no piece on h2). Once h2 takes edits again, a
    retry moves them all."""
    names = [f"v{k}" for k in range(6)]

    async def scenario(svc: Service) -> None:
        for k, name in enumerate(names):
            await svc.create_connection(ACME, "acme", voice(name, 5201 + k, "5mbit"))
        before = held_per_direction(w.url)
        w.hosts.fail("h2", Step.EDIT, Failure.REFUSE, times=1000)
        report = await svc.failover.link_down("h1-h3")
        assert report.moved == [] and sorted(d.connection for d in report.degraded) == names
        assert held_per_direction(w.url) == before
        assert w.pieces()["h2"] == set()
        views = [await svc.connection(ACME, "acme", n) for n in names]
        assert {(v.status, tuple(v.path)) for v in views} == {("degraded", ("h1", "h3"))}
        w.hosts.heal("h2")
        again = await svc.failover.retry()
        assert sorted(m.connection for m in again.moved) == names

    w.run(scenario)
    assert held_per_direction(w.url) == {
        ("h1-h2", True): len(names) * cost(5, 2),
        ("h2-h3", True): len(names) * cost(5, 2),
    }


def test_a_host_detection_knows_is_gone_is_not_asked_before_its_hooks_tell(w: World) -> None:
    """h2 is powered off: its link h1-h2 is reported down while failure detection has found
    h2's agent gone but not yet told the failover (its hooks come one at a time, in order,
    behind the link's). The moves skip h2 and succeed, instead of asking its agent, failing
    and leaving every connection degraded until the host's news comes."""
    names = ["v0", "v1", "v2"]

    async def scenario(svc: Service) -> list[list[str]]:
        await svc.failover.link_down("h1-h3")
        for k, name in enumerate(names):  # planned around h1-h3: through h2
            await svc.create_connection(ACME, "acme", voice(name, 5201 + k, "5mbit"))
        await svc.failover.link_up("h1-h3")  # they stay where they are
        w.hosts.kill("h2")
        svc.failover.unreachable_now = lambda: {"h2"}  # detection's, before its hooks
        w.hosts.calls.clear()
        report = await svc.failover.link_down("h1-h2")
        assert report.degraded == [] and sorted(m.connection for m in report.moved) == names
        assert not [step for host, step in w.hosts.calls if host == "h2"]
        return [(await svc.connection(ACME, "acme", n)).path for n in names]

    assert w.run(scenario) == [["h1", "h3"]] * len(names)


def test_a_connection_that_lands_on_a_link_failed_meanwhile_is_moved_off(w: World) -> None:
    """A create planned on h1-h3 just before it fails: the failover's moves do not see it
    (a request is changing it), so it lands on the failed link; once it is established it
    is moved off as the failure's own connections were, not left there until the next
    failure or release."""
    w.hosts.latency = 0.1  # the create's agent steps take a while: the failure comes first

    async def scenario(svc: Service) -> list[str]:
        creating = asyncio.create_task(
            svc.create_connection(ACME, "acme", voice("v", 5201, "5mbit"))
        )
        await wait_until_async(lambda: w.hosts.calls[("h1", Step.LOCK)] > 0, 5, "create begun")
        report = await svc.failover.link_down("h1-h3")
        assert report.moved == [] and report.degraded == []  # not seen: in flight
        assert (await creating).connection.path == ["h1", "h3"]  # landed on the failed link
        for _ in range(250):  # moved in the background: at most 5 s
            view = await svc.connection(ACME, "acme", "v")
            if view.path != ["h1", "h3"]:
                break
            await asyncio.sleep(0.02)
        return view.path

    assert w.run(scenario) == ["h1", "h2", "h3"]


def test_moves_off_a_host_whose_agent_died_unnoticed_stay_moved(w: World) -> None:
    """h2 is powered off and detection has not noticed yet when the moves off it remove
    their old pieces there: that removal fails (h2 refuses the connect), but each
    connection runs on h1 -> h3 already. It stays moved, not put back on a path that
    carries nothing, and h2 is reconciled when its agent runs again."""
    names = ["v0", "v1", "v2"]
    repaired: list[list[str]] = []

    async def scenario(svc: Service) -> None:
        await svc.failover.link_down("h1-h3")
        for k, name in enumerate(names):  # planned around h1-h3: through h2
            await svc.create_connection(ACME, "acme", voice(name, 5201 + k, "5mbit"))
        await svc.failover.link_up("h1-h3")
        w.hosts.kill("h2")
        svc.putback.repair = repaired.append
        report = await asyncio.wait_for(svc.failover.link_down("h1-h2"), 5)
        assert report.degraded == [] and sorted(m.connection for m in report.moved) == names
        assert {tuple((await svc.connection(ACME, "acme", n)).path) for n in names} == {
            ("h1", "h3")
        }
        w.hosts.restart("h2")
        await svc.reconciler.all_hosts(["h2"])

    w.run(scenario)
    assert repaired == [["h2"]], "h2 is reconciled once for all the moves"
    held = set(live_connections(w.url))
    assert w.pieces() == {"h1": held, "h2": set(), "h3": held}


def test_a_host_found_gone_during_a_move_is_not_asked_by_its_later_steps(w: World) -> None:
    """h2 is powered off while its connections move off it: detection finds its agent gone
    only once the moves' first step is committed. The later steps (the one removing the
    old pieces asks h2) skip it: every connection moves instead of failing on h2."""
    names = ["v0", "v1"]

    async def scenario(svc: Service) -> list[list[str]]:
        await svc.failover.link_down("h1-h3")
        for k, name in enumerate(names):  # planned around h1-h3: through h2
            await svc.create_connection(ACME, "acme", voice(name, 5201 + k, "5mbit"))
        await svc.failover.link_up("h1-h3")
        w.hosts.kill("h2")
        w.hosts.calls.clear()

        def found_gone() -> set[str]:  # detection hears of it after the first commit
            return {"h2"} if any(s == Step.COMMIT for _, s in w.hosts.calls) else set()

        svc.failover.unreachable_now = found_gone
        report = await svc.failover.link_down("h1-h2")
        assert report.degraded == [] and sorted(m.connection for m in report.moved) == names
        return [(await svc.connection(ACME, "acme", n)).path for n in names]

    assert w.run(scenario) == [["h1", "h3"]] * len(names)
