"""A host that refuses, hangs or dies at any step of a request's transaction, on hosts in
memory (tests/controller_memory_support.py): the request fails naming the host, the database
holds nothing of it, and every host is as the answer says: put back (or never changed), or
named as possibly holding the change until its agent rolls it back. Once the agents are back
and their confirm timeouts passed, reconciliation leaves every host as the database says.
Reconciliation repairs drift and touches only the controller's pieces."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.controller_memory_support import (
    ACME,
    HOSTS,
    World,
    back_again,
    database_state,
    live_connections,
    may_hold,
    voice,
    world,
)
from vnet.controller.errors import AgentRefused
from vnet.controller.service.core import Service
from vnet.controller.southbound.memory import Failure, Step
from vnet.model.controller_api import ModifyRequest, NetworkRequest
from vnet.model.host import NetworkOnHost
from vnet.model.host_guarantees import ConnectionPieces

TRANSACTION = (Step.LOCK, Step.EDIT, Step.VALIDATE, Step.COMMIT, Step.CONFIRM)
READS_PER_ROUND = 2  # a reconcile reads the agent's VRs and its connection pieces
BACKING_OUT = (Step.CANCEL, Step.DISCARD, Step.UNLOCK)  # only when another host refused
CASES = [
    (step, failure, done)
    for step in (*TRANSACTION, *BACKING_OUT)
    for failure in Failure
    for done in ((False, True) if failure != Failure.REFUSE else (False,))
]


async def as_the_answer_says(
    w: World, svc: Service, before: tuple[Any, dict[str, set[str]]], reason: str, failure: Failure
) -> None:
    """After a refused request: the database holds nothing of it and the hosts the answer does
    not name hold what they held; then h3 runs again and every host is reconciled."""
    assert database_state(w.url) == before[0], reason
    named = may_hold(reason)
    for host in HOSTS:
        if host not in named:
            assert w.pieces()[host] == before[1][host], (host, reason)
            assert w.hosts.pending(host) is None, (host, reason)
    back_again(w, "h3", failure)
    outcome = await svc.reconciler.all_hosts(list(HOSTS))
    assert all(not isinstance(r, Exception) for r in outcome.values()), outcome


@pytest.mark.parametrize(("step", "failure", "done"), CASES)
def test_every_host_is_as_the_answer_says_whatever_step_fails(
    tmp_path: Path, step: Step, failure: Failure, done: bool
) -> None:
    w = world(tmp_path)
    before = database_state(w.url), w.pieces()
    w.hosts.fail("h3", step, failure, done=done)
    if step in BACKING_OUT:  # backing out happens when another host refuses
        w.hosts.fail("h1", Step.COMMIT, Failure.REFUSE)

    async def scenario(svc: Service) -> str:
        with pytest.raises(AgentRefused) as refused:
            await svc.create_connection(ACME, "acme", voice("v", 5201, "20mbit"))
        reason = refused.value.reason
        await as_the_answer_says(w, svc, before, reason, failure)
        return reason

    reason = w.run(scenario)
    assert "h3" in reason or "h1" in reason, reason
    assert w.pieces() == before[1], reason
    assert all(w.hosts.pending(h) is None for h in HOSTS), reason


# Every operation on a live connection, h3 failing at every step of its transactions. The
# connection is bidirectional, so h3 is an ingress and takes part in each of them. The lab's
# fault test (tests/integration/test_controller_faults.py) covers every pair of failure,
# step and operation on real agents; this covers every combination.
OPERATIONS = ("modify-bandwidth", "modify-path", "release")
SHORT_PATH, FULL_PATH = ["h1", "h3"], ["h1", "h2", "h3"]


async def operate(svc: Service, operation: str, name: str) -> object:
    if operation == "release":
        return await svc.release_connection(ACME, "acme", name)
    change = (
        ModifyRequest(path=FULL_PATH)
        if operation == "modify-path"
        else ModifyRequest(bandwidth="30mbit")
    )
    return await svc.modify_connection(ACME, "acme", name, change)


@pytest.mark.slow  # 75 cases, about 20 s: `make test` runs them, `make check` the create's
@pytest.mark.parametrize("operation", OPERATIONS)
@pytest.mark.parametrize(("step", "failure", "done"), [c for c in CASES if c[0] in TRANSACTION])
def test_every_operation_leaves_every_host_as_the_answer_says_whatever_step_fails(
    tmp_path: Path, operation: str, step: Step, failure: Failure, done: bool
) -> None:
    w = world(tmp_path)
    path = SHORT_PATH if operation == "modify-path" else FULL_PATH

    async def scenario(svc: Service) -> str:
        await svc.create_connection(
            ACME, "acme", voice("v", 5201, "20mbit", bidirectional=True, path=path)
        )
        before = database_state(w.url), w.pieces()
        w.hosts.fail("h3", step, failure, done=done)
        with pytest.raises(AgentRefused) as refused:
            await operate(svc, operation, "v")
        reason = refused.value.reason
        await as_the_answer_says(w, svc, before, reason, failure)
        assert w.pieces() == before[1], reason
        assert all(w.hosts.pending(h) is None for h in HOSTS), reason
        return reason

    assert "h3" in w.run(scenario)


def test_a_host_that_died_after_its_commit_is_not_asked_to_confirm_until_the_deadline(
    tmp_path: Path,
) -> None:
    """h3 takes the commit, then its agent dies (connects are refused). An agent rolls back
    a pending commit when it starts again, so no confirm can land: the request answers at
    once, not after 0.9 of the confirm timeout (60 s here) of retries."""
    w = world(tmp_path)
    w.hosts.fail("h3", Step.CONFIRM, Failure.DIE)

    async def scenario(svc: Service) -> str:
        create = svc.create_connection(ACME, "acme", voice("v", 5201, "20mbit"))
        with pytest.raises(AgentRefused) as refused:
            await asyncio.wait_for(create, 10)
        return refused.value.reason

    reason = w.run(scenario, settings={"confirm_timeout": 60})
    assert "h3" in may_hold(reason), reason


def test_a_refused_confirm_puts_back_the_hosts_that_confirmed(tmp_path: Path) -> None:
    """h1 confirms, h3 refuses its confirm: h3's commit is cancelled and h1 is reconciled
    before the answer, which says so."""
    w = world(tmp_path)
    w.hosts.fail("h3", Step.CONFIRM, Failure.REFUSE)

    async def scenario(svc: Service) -> str:
        with pytest.raises(AgentRefused) as refused:
            await svc.create_connection(ACME, "acme", voice("v", 5201, "20mbit"))
        return refused.value.reason

    reason = w.run(scenario)
    assert reason.endswith("hosts h1, h3 put back as the database says"), reason
    assert w.pieces() == {h: set() for h in HOSTS} and live_connections(w.url) == {}


def test_a_modify_refused_halfway_leaves_the_old_path_everywhere(tmp_path: Path) -> None:
    """Make-before-break onto h1 -> h2 -> h3: the first step (new transit and egress) is
    confirmed, the switch is refused by h1: every host is back on the old generation."""
    w = world(tmp_path)

    async def scenario(svc: Service) -> tuple[dict[str, set[str]], str]:
        await svc.create_connection(ACME, "acme", voice("v", 5201, "20mbit"))
        held = {h: w.hosts.running(h).srv6.connections for h in HOSTS}
        w.hosts.fail("h1", Step.COMMIT, Failure.REFUSE)  # h1 takes part only in the switch
        with pytest.raises(AgentRefused) as refused:
            await svc.modify_connection(ACME, "acme", "v", ModifyRequest(bandwidth="200mbit"))
        assert {h: w.hosts.running(h).srv6.connections for h in HOSTS} == held
        return w.pieces(), refused.value.reason

    pieces, reason = w.run(scenario)
    [name] = live_connections(w.url)
    assert live_connections(w.url) == {name: ("established", 1)}, reason
    assert pieces == {"h1": {name}, "h2": set(), "h3": {name}}, reason


def test_reconciliation_repairs_drift_and_touches_only_the_controllers_pieces(
    tmp_path: Path,
) -> None:
    w = world(tmp_path)

    async def scenario(svc: Service) -> dict[str, list[tuple[str, str]]]:
        await svc.create_connection(ACME, "acme", voice("v", 5201, "20mbit"))
        wanted = {h: w.hosts.running(h) for h in HOSTS}
        [name] = live_connections(w.url)
        mine = wanted["h1"].srv6.connection(name)
        # without ingress: two pieces may not steer the same flow
        foreign = mine.model_copy(update={"name": "tenant-own", "id": 4000, "ingress": []})
        stray = mine.model_copy(update={"name": "vc999", "id": 999, "ingress": []})
        changed = mine.model_copy(update={"ingress": mine.ingress[:1], "egress": []})
        drifted: dict[str, list[ConnectionPieces]] = {
            "h1": [changed, foreign],  # different, and a piece that is not the controller's
            "h2": [stray],  # extra
            "h3": [],  # missing
        }
        for host, pieces in drifted.items():
            srv6 = wanted[host].srv6.model_copy(update={"connections": pieces})
            w.hosts.set_running(host, wanted[host].model_copy(update={"srv6": srv6}))
        outcome = await svc.reconciler.all_hosts(list(HOSTS))
        assert w.pieces() == {"h1": {name, "tenant-own"}, "h2": set(), "h3": {name}}
        assert w.hosts.running("h1").srv6.connection(name) == mine
        return {
            h: [(d.connection, d.what) for d in r]  # type: ignore[union-attr]
            for h, r in outcome.items()
        }

    drift = w.run(scenario)
    [name] = live_connections(w.url)
    assert drift == {
        "h1": [(name, "different")],
        "h2": [("vc999", "extra")],
        "h3": [(name, "missing")],
    }


def test_a_network_one_host_refuses_is_on_no_host_and_not_in_the_inventory(
    tmp_path: Path,
) -> None:
    """A network goes to every host with an agent in one transaction: h2 refusing its commit
    leaves it on none, and the database without it; asked again, it is made everywhere."""
    w = world(tmp_path)
    w.hosts.fail("h2", Step.COMMIT, Failure.REFUSE)
    request = NetworkRequest(name="n9", vni=909, ipv4="10.99.0.0/24")

    async def scenario(svc: Service) -> tuple[list[str], list[str]]:
        with pytest.raises(AgentRefused) as refused:
            await svc.create_network(ACME, "acme", request)
        assert refused.value.host == "h2"
        listed = [n.name for n in await svc.networks(ACME)]
        carried = [h for h in HOSTS if any(n.network.name == "n9" for n in net_of(w, h))]
        await svc.create_network(ACME, "acme", request)
        return listed, carried

    listed, carried = w.run(scenario)
    assert "n9" not in listed and carried == []
    assert all(any(n.network.name == "n9" for n in net_of(w, h)) for h in HOSTS)
    assert all(w.hosts.pending(h) is None for h in HOSTS)


def net_of(w: World, host: str) -> list[NetworkOnHost]:
    return w.hosts.running(host).networks


def test_reconciles_asked_at_once_share_their_rounds(tmp_path: Path) -> None:
    """Twenty reconciles of h1 asked at once (what twenty failed moves put back) read h1's
    agent in at most two rounds: the first one asked, and one after it for all the others
    (each reads the database after its callers wrote). Each caller hears the round's drift;
    a drift made after a round began is repaired by the next."""
    w = world(tmp_path)

    async def scenario(svc: Service) -> list[list[str]]:
        await svc.create_connection(ACME, "acme", voice("v", 5201, "20mbit"))
        [name] = live_connections(w.url)
        wanted = w.hosts.running("h1")
        srv6 = wanted.srv6.model_copy(update={"connections": []})
        w.hosts.set_running("h1", wanted.model_copy(update={"srv6": srv6}))
        w.hosts.calls.clear()
        answers = await asyncio.gather(*(svc.reconciler.host("h1") for _ in range(20)))
        assert w.pieces()["h1"] == {name}
        return [[d.connection for d in drift] for drift in answers]

    answers = w.run(scenario)
    [name] = live_connections(w.url)
    assert answers[0] == [name]  # the first round found it missing and put it back
    assert all(a in ([name], []) for a in answers)
    assert w.hosts.calls[("h1", Step.READ)] <= 2 * READS_PER_ROUND, w.hosts.calls
