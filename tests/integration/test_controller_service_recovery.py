"""The controller's Service across crashes and controllers (issue 12), on a real three-host
lab with agents: a controller killed with SIGKILL between commit and confirm leaves, after a
restart, no half connection anywhere and a ledger that matches the agents; drift on an agent
is repaired by reconciliation; 100 simultaneous creates split over two Service instances on
one PostgreSQL never over-admit a link direction, in the database or on the agents."""

from __future__ import annotations

import asyncio
import itertools
import subprocess
import sys
from ipaddress import IPv6Network
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.orm import Session

from vnet.controller.admission.cost import Encapsulation, link_cost
from vnet.controller.agents.realise import HostChange
from vnet.controller.db import journal
from vnet.controller.errors import Rejected
from vnet.controller.service.core import Service
from vnet.model.controller_api import ConnectionRequest
from vnet.model.host_guarantees import ConnectionPieces, Locator, Transit
from vnet.model.srv6 import FUNC_END, sid
from vnet.tools import postgres

from .controller_service_support import (
    ACME,
    HOSTS,
    Lab,
    close,
    held_per_direction,
    live_connections,
    make_service,
    prepare_database,
    run,
    shaper_rates,
    unfinished_requests,
)
from .world_support import TemplateDatabases, unique_database

ROOT = Path(__file__).resolve().parents[2]
LOCK_WAIT = 120.0  # seconds: see test_100_simultaneous_creates_on_two_controllers_never_over_admit


@pytest.fixture(scope="module")
def lab(service_lab: Lab) -> Lab:
    """The session's triangle, borrowed (conftest.py guards it)."""
    return service_lab


@pytest.fixture
def url(database_kind: str, service_databases: TemplateDatabases, tmp_path: Path) -> str:
    """A copy of the migrated template with the lab's inventory, on either database."""
    return service_databases.make(database_kind, tmp_path, "rec")


@pytest.mark.both_databases
def test_kill_9_between_commit_and_confirm_then_restart_leaves_nothing_half(
    lab: Lab, url: str
) -> None:
    child = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.integration.controller_service_crash",
            lab.name,
            url,
            str(lab.tmp),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert child.returncode == -9 and "committed" in child.stdout, child.stdout + child.stderr
    # the crash left: pieces pending on every host of the path, a reservation, a journal entry
    assert any(lab.controller_pieces()[h] for h in HOSTS)

    async def restart() -> tuple[dict, dict, list, list]:  # type: ignore[type-arg]
        service = make_service(lab, url)
        try:
            await service.start(background=False)
            return (
                held_per_direction(service.db.engine),
                live_connections(service.db.engine),
                unfinished_requests(service.db.engine),
                [(s.operation, s.outcome) for s in service.recovered],
            )
        finally:
            await close(service)

    held, live, unfinished, recovered = run(restart())
    assert recovered == [("create", "undone")], recovered
    assert held == {} and live == {} and unfinished == [], (held, live, unfinished)
    assert lab.controller_pieces() == {h: set() for h in HOSTS}  # the ledger matches the agents


@pytest.mark.both_databases
def test_reconciliation_repairs_drift_on_an_agent(lab: Lab, url: str) -> None:
    """A piece removed behind the controller's back comes back; a stray vc piece goes."""

    async def scenario() -> list[str]:
        service = make_service(lab, url)
        try:
            await service.start(background=False)
            req = ConnectionRequest(
                name="kept", a="pc1", b="pc3", protocol="udp", dst_port=5302, bandwidth="2mbit"
            )
            answer = await service.create_connection(ACME, "acme", req)
            hosts = answer.connection.path
            name = next(iter(lab.controller_pieces()[hosts[0]]))
            # behind the controller's back: the egress gone on the last host, a stray on h2
            await service.agents.transaction("drift-1", [HostChange(hosts[-1], delete=(name,))])
            await service.agents.transaction("drift-2", [stray_on_h2()])
            drift = await service.reconciler.all_hosts(list(HOSTS))
            kinds = sorted(f"{d.host}:{d.what}" for r in drift.values() for d in r)  # type: ignore[union-attr]
            history = [e.kind for e in await service.history(ACME, "acme", "kept")]
            assert history == ["created", "repaired"], history
            assert lab.connection_names(hosts[-1]) == {name}
            assert "vc4000" not in lab.connection_names("h2")
            await service.release_connection(ACME, "acme", "kept")
            return kinds
        finally:
            await close(service)

    kinds = run(scenario())
    assert "h2:extra" in kinds and any(k.endswith(":missing") for k in kinds), kinds
    assert lab.controller_pieces() == {h: set() for h in HOSTS}


def stray_on_h2() -> HostChange:
    """A transit piece named like the controller's, for a connection it does not have."""
    locator = IPv6Network("fc00:1:2::/48")  # r2's (vnet.model.srv6.locator)
    stray = ConnectionPieces(
        name="vc4000",
        id=4000,
        transit=[Transit(router="r2", sid=sid(locator, 4000, FUNC_END), network="c23")],
    )
    return HostChange("h2", put=(stray,), locators=(Locator(prefix=locator, router="r2"),))


def test_100_simultaneous_creates_on_two_controllers_never_over_admit(
    lab: Lab, pg: postgres.Postgres, tmp_path: Path
) -> None:
    url = pg.create_database(unique_database("two_controllers"))
    prepare_database(lab, url)

    async def scenario() -> tuple[int, int, dict, dict]:  # type: ignore[type-arg]
        # what is tested is admission, not how long a controller waits for the other's lock:
        # 100 creates in turns on one candidate per host took over the default 10 s wait on
        # a slow machine (a refusal, "already locked by session N"), so wait as long as needed
        services = [make_service(lab, url, lock_wait=LOCK_WAIT) for _ in range(2)]
        try:
            await services[0].start(background=False)
            await services[1].start(background=False)
            answers = await asyncio.gather(
                *(create(services[i % 2], i) for i in range(100)), return_exceptions=True
            )
            established = sum(1 for a in answers if a is True)
            rejected = sum(1 for a in answers if isinstance(a, Rejected))
            unexpected = [a for a in answers if a is not True and not isinstance(a, Rejected)]
            assert not unexpected, unexpected[:3]
            inv = await services[0].inventory()
            agents_view = {h: await services[0].agents.connections(h) for h in HOSTS}
            capacities = {name: info.capacity for name, info in inv.links.items()}
            return (
                established,
                rejected,
                held_per_direction(services[0].db.engine),
                {
                    "agents": agents_view,
                    "capacity": capacities,
                    "live": live_connections(services[0].db.engine),
                },
            )
        finally:
            for service in services:
                await close(service)

    try:
        established, rejected, held, seen = run(scenario())
        _check_nothing_over_admitted(lab, established, rejected, held, seen)
    finally:
        _release_everything(lab, url)


def _check_nothing_over_admitted(
    lab: Lab, established: int, rejected: int, held: dict[Any, int], seen: dict[str, Any]
) -> None:
    print(
        f"two controllers, 100 simultaneous creates: {established} established, {rejected} rejected"
    )
    assert established + rejected == 100 and established > 0 and rejected > 0, (
        established,
        rejected,
    )
    for (link, forward), bps in held.items():
        assert bps <= seen["capacity"][link], f"{link} forward={forward}: {bps} bit/s held"
    on_agents = _agents_load(seen["agents"])
    for (a, b), bps in on_agents.items():
        name = f"{a}-{b}" if f"{a}-{b}" in seen["capacity"] else f"{b}-{a}"
        assert bps <= seen["capacity"][name], f"agents: {a} -> {b} carries {bps} bit/s"
    # every established connection is on the agents, nothing else is
    names = {p.name for pieces in seen["agents"].values() for p in pieces}
    assert names == set(seen["live"]), names ^ set(seen["live"])
    # and in the kernel: the shapers the agents made on r1, per interface towards a link
    shapers = shaper_rates(lab)
    assert sum(len(r) for r in shapers.values()) == established, shapers
    assert sum(shapers["eth2"]) <= seen["capacity"]["h1-h3"], shapers  # towards h3
    assert sum(shapers["eth1"]) <= seen["capacity"]["h1-h2"], shapers  # towards h2


async def create(service: Service, i: int) -> bool:
    req = ConnectionRequest(
        name=f"c{i}", a="pc1", b="pc3", protocol="udp", dst_port=6000 + i, bandwidth="30mbit"
    )
    await service.create_connection(ACME, "acme", req)
    return True


def _agents_load(agents: dict) -> dict[tuple[str, str], int]:  # type: ignore[type-arg]
    """bit/s per underlay direction from what the agents hold: each connection's ingress
    shaper rate with its encapsulation, on the links between the hosts holding its pieces
    (every connection here runs pc1 (h1) -> pc3 (h3), directly or through h2)."""
    hosts_of: dict[str, set[str]] = {}
    rate: dict[str, int] = {}
    for host, pieces in agents.items():
        for p in pieces:
            hosts_of.setdefault(p.name, set()).add(host)
            if p.ingress:
                rate[p.name] = p.ingress[0].bandwidth
    load: dict[tuple[str, str], int] = {}
    for name, hosts in hosts_of.items():
        path = ["h1", "h2", "h3"] if "h2" in hosts else ["h1", "h3"]
        cost = link_cost(rate[name], 1500, Encapsulation(), len(path) - 1, 0)
        for a, b in itertools.pairwise(path):
            load[(a, b)] = load.get((a, b), 0) + cost
    return load


def _release_everything(lab: Lab, url: str) -> None:
    async def release() -> None:
        service = make_service(lab, url)
        try:
            await service.start(background=False)
            for view in await service.connections(ACME, "acme"):
                await service.release_connection(ACME, "acme", view.name)
        finally:
            await close(service)

    run(release())
    assert lab.controller_pieces() == {h: set() for h in HOSTS}


def test_a_starting_controller_leaves_a_live_ones_requests_alone(
    lab: Lab, pg: postgres.Postgres
) -> None:
    """Two controllers on one PostgreSQL: the second one's recovery does not touch a request
    the first is in the middle of; once the first is gone, the next start settles it."""
    url = pg.create_database(unique_database("liveness"))
    prepare_database(lab, url)

    async def scenario() -> tuple[list[str], list[str], list[tuple[str, str]]]:
        first = make_service(lab, url)
        await first.start(background=False)
        request_id = first.flows.liveness.request_id()
        with Session(first.db.engine) as session, session.begin():
            journal.open_request(session, "create", request_id=request_id)
        second = make_service(lab, url)
        try:
            await second.start(background=False)
            left = unfinished_requests(second.db.engine)
        finally:
            await close(second)
            await close(first)
        third = make_service(lab, url)
        try:
            await third.start(background=False)
            settled = [(s.request_id, s.outcome) for s in third.recovered]
            return [request_id], left, settled
        finally:
            await close(third)

    mine, left, settled = run(scenario())
    assert left == mine, left  # the live controller's request was left alone
    assert settled == [(mine[0], "undone")], settled
