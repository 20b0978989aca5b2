"""The controller's Service on a real three-host lab with agents, on SQLite, and on PostgreSQL
where a refusal must leave the database as it was (issue 12): a connection carries iperf3 UDP
at its rate and only its 5-tuple; a rejection names the link direction; an agent that refuses
halfway leaves every host and the database as they were; a tenant administrator sees only its
tenant; rearrangement moves a connection make-before-break without losing a datagram.

The agents are checked with independent NETCONF sessions (raw ncclient) and the kernel.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from vnet.controller.errors import AgentRefused, Forbidden, NotFound, Rejected
from vnet.controller.service.core import Service
from vnet.lab.probes import fping
from vnet.lab.shaping import ClassRef, run_flow
from vnet.model.controller_api import ConnectionCounters, ConnectionRequest, ModifyRequest

from .conftest import require_tools
from .controller_service_support import (
    ACME,
    BETA,
    HOSTS,
    PC3,
    PROVIDER,
    Lab,
    class_packets,
    close,
    database_state,
    held_per_direction,
    live_connections,
    make_service,
    ns,
    number_of,
    reservation_generations,
    run,
    shaper_class,
    shaper_rate,
)
from .test_qos import send_udp, udp_received
from .world_support import TemplateDatabases

VOICE = {"a": "pc1", "b": "pc3", "protocol": "udp"}


@pytest.fixture(scope="module")
def lab(service_lab: Lab) -> Lab:
    """The session's triangle, borrowed (conftest.py guards it)."""
    require_tools("iperf3", "fping")
    return service_lab


@pytest.fixture
def url(database_kind: str, service_databases: TemplateDatabases, tmp_path: Path) -> str:
    """A copy of the migrated template with the lab's inventory, on either database."""
    return service_databases.make(database_kind, tmp_path, "svc")


async def started(lab: Lab, url: str, **options: object) -> Service:
    service = make_service(lab, url, **options)
    await service.start(background=False)  # recovery + reconciliation: a clean slate
    return service


def request(name: str, port: int, bandwidth: str, **more: object) -> ConnectionRequest:
    return ConnectionRequest(name=name, dst_port=port, bandwidth=bandwidth, **VOICE, **more)  # type: ignore[arg-type]


# the data plane: the database is not what is tested (SQLite only)
def test_a_connection_carries_its_rate_and_only_its_5_tuple(lab: Lab, url: str) -> None:
    async def create() -> tuple[object, dict[str, float]]:
        service = await started(lab, url)
        timings: dict[str, float] = {}
        try:
            answer = await service.create_connection(
                ACME, "acme", request("voice", 5201, "20mbit"), "key-1", timings
            )
            again = await service.create_connection(
                ACME, "acme", request("voice", 5201, "20mbit"), "key-1"
            )
            assert again.connection == answer.connection  # a retry: the first answer
            return answer, timings
        finally:
            await close(service)

    answer, timings = run(create())
    view = answer.connection  # type: ignore[attr-defined]
    assert view.status == "established" and view.path == ["h1", "h3"], view
    assert set(timings) >= {"db", "path", "devices"} and timings["devices"] > 0, timings
    pieces = lab.controller_pieces()
    name = next(iter(pieces["h1"]))
    assert pieces == {"h1": {name}, "h2": set(), "h3": {name}}, pieces
    fping(ns(lab.name, "pc1"), PC3, count=3)  # neighbour caches along the path
    # r1: lan1 eth0, c12 eth1, c13 eth2 (towards h3, where the shaper sits)
    shaper = ClassRef(ns(lab.name, "r1"), "eth2", shaper_class(number_of(url, "voice")))
    flow = run_flow(
        ns(lab.name, "pc1"),
        ns(lab.name, "pc3"),
        PC3,
        seconds=3,
        protocol="udp",
        rate_bps=30e6,
        length=1200,
        port=5201,
        shaper=shaper,
        warmup=1.0,
    )
    achieved = (flow.l2_bps or 0) / 20e6
    assert abs(achieved - 1) <= 0.05, f"{achieved:.2%} of 20 Mbit/s at layer 2 ({flow})"
    # only udp/5201 takes the tunnel: another port between the same end hosts does not
    time.sleep(1.0)  # the shaper's queue (iperf3 offered 30 Mbit/s) drains first
    for port, expected in ((5201, 100), (5299, 0)):
        tunnelled, arrived = class_packets(shaper), udp_received(ns(lab.name, "pc3"))
        send_udp(ns(lab.name, "pc1"), PC3, port, 100)
        assert class_packets(shaper) - tunnelled == expected, f"udp/{port}"
        assert udp_received(ns(lab.name, "pc3")) - arrived == 100, f"udp/{port} lost datagrams"
    # the controller reads the same shaper's counters back from h1's agent
    [counted] = run(_counters(lab, url, "voice")).shapers  # one shaper for both IP families
    assert (counted.direction, counted.host, counted.router) == ("pc1 -> pc3", "h1", "r1")
    assert counted.packets == class_packets(shaper) > 100, counted
    _release_all(lab, url, ["voice"])


async def _counters(lab: Lab, url: str, name: str) -> ConnectionCounters:
    service = await started(lab, url)
    try:
        return await service.counters(ACME, "acme", name)
    finally:
        await close(service)


def _release_all(lab: Lab, url: str, names: list[str]) -> None:
    async def release() -> None:
        service = await started(lab, url)
        try:
            for name in names:
                await service.release_connection(ACME, "acme", name)
        finally:
            await close(service)

    run(release())
    assert lab.controller_pieces() == {h: set() for h in HOSTS}


def test_a_rejection_names_the_link_direction_and_changes_nothing(lab: Lab, url: str) -> None:
    """h1 -> h3 filled by one connection, a second one there is rejected naming that
    direction; the same bandwidth the other way (h3 -> h1) still fits."""

    async def scenario() -> Rejected:
        service = await started(lab, url)
        try:
            direct = ["h1", "h3"]
            await service.create_connection(
                ACME, "acme", request("first", 5202, "60mbit", path=direct)
            )
            before = database_state(service.db.engine)
            with pytest.raises(Rejected) as rejected:
                await service.create_connection(
                    ACME, "acme", request("second", 5203, "50mbit", path=direct)
                )
            assert database_state(service.db.engine) == before
            back = ConnectionRequest(
                name="back", a="pc3", b="pc1", protocol="udp", dst_port=5204,
                bandwidth="50mbit", path=["h3", "h1"],
            )  # fmt: skip
            answer = await service.create_connection(ACME, "acme", back)
            assert answer.connection.status == "established"
            for name in ("first", "back"):
                await service.release_connection(ACME, "acme", name)
            return rejected.value
        finally:
            await close(service)

    rejected = run(scenario())
    body = rejected.body()
    assert body.status == 409 and body.code == "no-capacity"
    assert [(s.link, s.direction) for s in body.shortfalls] == [("h1-h3", "h1 -> h3")], body
    assert 0 < body.shortfalls[0].missing_bps < 50_000_000, body
    assert lab.controller_pieces() == {h: set() for h in HOSTS}


@pytest.mark.both_databases
def test_an_agent_that_refuses_leaves_every_host_and_the_database_as_they_were(
    lab: Lab, url: str
) -> None:
    """h2's candidate is locked by someone else: its agent refuses the edit, h1 and h3
    (edited in the same transaction) go back."""
    before_hosts = lab.running()

    async def scenario() -> AgentRefused:
        service = await started(lab, url, lock_wait=1.0)
        try:
            before = database_state(service.db.engine)
            blocked = request("blocked", 5203, "10mbit", path=["h1", "h2", "h3"])
            with (
                lab.connect("h2") as other,
                other.locked("candidate"),
                pytest.raises(AgentRefused) as refused,
            ):
                await service.create_connection(ACME, "acme", blocked)
            assert database_state(service.db.engine) == before
            history = await service.history(ACME, "acme", "blocked")
            assert [e.kind for e in history] == ["failed"], history
            return refused.value
        finally:
            await close(service)

    refused = run(scenario())
    assert refused.host == "h2" and refused.body().status == 502, refused.body()
    assert lab.running() == before_hosts


def test_a_tenant_administrator_sees_only_its_tenant(lab: Lab, url: str) -> None:
    async def scenario() -> None:
        service = await started(lab, url)
        try:
            assert {n.name for n in await service.networks(BETA)} == {"blan"}
            assert {r.name for r in await service.routers(BETA)} == {"rb"}
            assert {e.name for e in await service.endhosts(BETA)} == {"qb"}
            assert {t.name for t in await service.tenants(BETA)} == {"beta"}
            whole = await service.topology(BETA)
            assert {e.name for e in whole.endhosts} == {"qb"} and len(whole.links) == 3
            with pytest.raises(Forbidden):
                await service.networks(BETA, "acme")
            with pytest.raises(Forbidden):
                await service.create_connection(BETA, "acme", request("x", 5204, "1mbit"))
            with pytest.raises(NotFound):
                await service.networks(PROVIDER, "nosuch")
            assert {n.name for n in await service.networks(PROVIDER)} >= {"blan", "lan1"}
        finally:
            await close(service)

    run(scenario())


def test_modify_of_unknown_or_released_connection_is_precise(lab: Lab, url: str) -> None:
    async def scenario() -> None:
        service = await started(lab, url)
        try:
            with pytest.raises(NotFound, match="does not exist"):
                await service.modify_connection(
                    ACME, "acme", "nosuch", ModifyRequest(bandwidth="2mbit")
                )
            await service.create_connection(ACME, "acme", request("short", 5205, "1mbit"))
            await service.release_connection(ACME, "acme", "short")
            with pytest.raises(NotFound, match="is released"):
                await service.modify_connection(
                    ACME, "acme", "short", ModifyRequest(bandwidth="2mbit")
                )
            assert held_per_direction(service.db.engine) == {}
            assert live_connections(service.db.engine) == {}
        finally:
            await close(service)

    run(scenario())
    assert lab.controller_pieces() == {h: set() for h in HOSTS}


def test_rearrangement_moves_a_connection_without_losing_a_datagram(lab: Lab, url: str) -> None:
    """h1 -> h3 directly holds "mover" (40 Mbit/s, the controller's choice of path); "pinned"
    asks for 60 Mbit/s on that link explicitly: it fits only once "mover" runs through h2.
    The move is made while iperf3 sends 20 Mbit/s of UDP on mover's 5-tuple."""

    async def first() -> None:
        service = await started(lab, url)
        try:
            answer = await service.create_connection(ACME, "acme", request("mover", 5210, "40mbit"))
            assert answer.connection.path == ["h1", "h3"], answer
        finally:
            await close(service)

    run(first())
    answers = []

    def second() -> None:  # run by run_flow at 1 s into the flow, in its own thread
        async def create() -> None:
            service = await started(lab, url)
            try:
                pinned = request("pinned", 5211, "60mbit", path=["h1", "h3"])
                answers.append(await service.create_connection(ACME, "acme", pinned))
            finally:
                await close(service)

        run(create())

    fping(ns(lab.name, "pc1"), PC3, count=3)
    flow = run_flow(
        ns(lab.name, "pc1"),
        ns(lab.name, "pc3"),
        PC3,
        seconds=4,
        protocol="udp",
        rate_bps=20e6,
        length=1200,
        port=5210,
        at=(1.0, second),
    )
    assert len(answers) == 1, "the second request did not finish during the flow"
    moved = answers[0].moved
    assert [(m.connection, m.old_path, m.new_path) for m in moved] == [
        ("mover", ["h1", "h3"], ["h1", "h2", "h3"])
    ], moved
    assert flow.packets and flow.lost_packets == 0, (
        f"{flow.lost_packets} of {flow.packets} datagrams lost during the move"
        f" ({flow.receiver_drops} of them dropped by pc3's full socket buffer)"
    )
    assert lab.connection_names("h2"), "mover's transit is on h2"

    async def check() -> list[str]:
        service = await started(lab, url)
        try:
            history = [e.kind for e in await service.history(ACME, "acme", "mover")]
            for name in ("mover", "pinned"):
                await service.release_connection(ACME, "acme", name)
            return history
        finally:
            await close(service)

    assert run(check()) == ["created", "moved"]
    assert lab.controller_pieces() == {h: set() for h in HOSTS}


# the agents' counters and the poller: the database is not what is tested (SQLite only)
def test_links_show_the_utilisation_the_agents_count(lab: Lab, url: str) -> None:
    """The poller reads the agents' class counters every 0.5 s: while 15 Mbit/s of UDP runs
    h1 -> h3, that direction shows it (at least a third of it even on a starved machine,
    never much more) and the other direction almost nothing."""
    seen: dict[str, object] = {}

    async def scenario() -> None:
        service = make_service(lab, url)
        await service.start()  # with the background work: the poller
        try:
            await service.create_connection(ACME, "acme", request("metered", 5220, "20mbit"))

            def sample() -> None:  # 1.5 s into the flow, from run_flow's thread: the
                # highest of three polls' rates (a loaded machine may starve one window)
                best: dict[tuple[str, bool], int] = {}
                for _ in range(3):
                    for arc, bps in service.poller.rates.items():  # type: ignore[union-attr]
                        best[arc] = max(best.get(arc, 0), bps)
                    time.sleep(0.5)
                seen["rates"] = best

            await asyncio.to_thread(
                run_flow,
                ns(lab.name, "pc1"),
                ns(lab.name, "pc3"),
                PC3,
                seconds=3,
                protocol="udp",
                rate_bps=15e6,
                length=1200,
                port=5220,
                at=(1.5, sample),
            )
            seen["links"] = await service.links(ACME)
            await service.release_connection(ACME, "acme", "metered")
        finally:
            await close(service)

    run(scenario())
    rates = seen["rates"]
    forward, backward = rates[("h1-h3", True)], rates[("h1-h3", False)]  # type: ignore[index]
    assert 5e6 <= forward <= 25e6, rates
    assert backward < forward / 10, rates
    direct = next(x for x in seen["links"] if x.name == "h1-h3")  # type: ignore[attr-defined]
    assert direct.directions[0].direction == "h1 -> h3"
    assert direct.directions[0].reserved_bps > 20_000_000, direct


def test_modify_changes_the_shaper_then_the_path_and_releases_the_old_once(
    lab: Lab, url: str
) -> None:
    async def scenario() -> tuple[list[str], dict[str, set[str]], dict, dict]:  # type: ignore[type-arg]
        service = await started(lab, url)
        try:
            await service.create_connection(ACME, "acme", request("grow", 5230, "10mbit"))
            held_before = held_per_direction(service.db.engine)
            wider = await service.modify_connection(
                ACME, "acme", "grow", ModifyRequest(bandwidth="30mbit")
            )
            assert wider.connection.bandwidth == 30_000_000 and wider.connection.generation == 2
            assert wider.connection.path == ["h1", "h3"]  # it fits where it runs: it stays
            rate = await asyncio.to_thread(shaper_rate, lab, number_of(url, "grow"))
            moved = await service.modify_connection(
                ACME, "acme", "grow", ModifyRequest(path=["h1", "h2", "h3"])
            )
            assert moved.connection.path == ["h1", "h2", "h3"], moved
            pieces = lab.controller_pieces()
            held_after = held_per_direction(service.db.engine)
            history = [e.kind for e in await service.history(ACME, "acme", "grow")]
            await service.release_connection(ACME, "acme", "grow")
            assert held_per_direction(service.db.engine) == {}
            return history, pieces, {"before": held_before, "after": held_after}, {"rate": rate}
        finally:
            await close(service)

    history, pieces, held, shaper = run(scenario())
    assert history == ["created", "modified", "moved"], history
    assert shaper["rate"] == 30_000_000, shaper
    assert all(pieces[h] for h in HOSTS), pieces  # ingress h1, transit h2, egress h3
    # one generation held after each switch: only the new path, at the new bandwidth
    assert set(held["before"]) == {("h1-h3", True)}
    assert set(held["after"]) == {("h1-h2", True), ("h2-h3", True)}, held
    assert lab.controller_pieces() == {h: set() for h in HOSTS}


@pytest.mark.both_databases
def test_a_refused_move_leaves_no_reservation_rows_and_its_retry_moves(lab: Lab, url: str) -> None:
    """h2's candidate is locked: the move of "retry" onto h1 -> h2 -> h3 is refused (502),
    the connection stays on generation 1 with nothing of generation 2 in the ledger, and the
    same modify once h2 is free moves it (the rows a refused attempt kept made it a 500)."""

    async def scenario() -> tuple[AgentRefused, list[int], int]:
        service = await started(lab, url, lock_wait=1.0)
        try:
            await service.create_connection(ACME, "acme", request("retry", 5240, "10mbit"))
            before = database_state(service.db.engine)
            move = ModifyRequest(path=["h1", "h2", "h3"])
            with (
                lab.connect("h2") as other,
                other.locked("candidate"),
                pytest.raises(AgentRefused) as refused,
            ):
                await service.modify_connection(ACME, "acme", "retry", move)
            assert database_state(service.db.engine) == before
            generations = reservation_generations(service.db.engine, "retry")
            again = await service.modify_connection(ACME, "acme", "retry", move)
            assert again.connection.path == ["h1", "h2", "h3"], again
            await service.release_connection(ACME, "acme", "retry")
            return refused.value, generations, again.connection.generation
        finally:
            await close(service)

    refused, generations, generation = run(scenario())
    assert refused.host == "h2" and refused.body().status == 502, refused.body()
    assert generations == [1], f"the refused attempt kept rows of generations {generations}"
    assert generation == 2
    assert lab.controller_pieces() == {h: set() for h in HOSTS}
