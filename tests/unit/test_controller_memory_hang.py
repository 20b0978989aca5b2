"""A host whose agent hangs at any step of a request, on hosts in memory
(tests/controller_memory_support.py): the request waits for it once. The hung host is asked
nothing more within that request (not the cancel, discard or unlock of backing out, not a
confirm again, not a modify's undo, not the put-back's reconciliation): its agent drops the
lock and the candidate when the session ends and rolls back an unconfirmed commit by itself.
The answer still says exactly what is true: every host it does not name is as before, and
once the agent runs again and its confirm timeout passed, reconciliation leaves every host
as the database says. The next request asks the host afresh.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.controller_memory_support import (
    ACME,
    HOSTS,
    World,
    back_again,
    database_state,
    may_hold,
    voice,
    world,
)
from vnet.controller.errors import AgentRefused
from vnet.controller.service.core import Service
from vnet.controller.southbound.memory import Failure, Step
from vnet.model.controller_api import ConnectionRequest, ModifyRequest

OPERATIONS = ("create", "modify-bandwidth", "release", "modify-path")
TRANSACTION = (Step.LOCK, Step.EDIT, Step.VALIDATE, Step.COMMIT, Step.CONFIRM)
# a step taken by the agent whose answer is lost: the commit or the confirm is in effect
CASES = [(step, False) for step in TRANSACTION] + [
    (step, True) for step in (Step.COMMIT, Step.CONFIRM)
]
FULL_PATH, SHORT_PATH = ["h1", "h2", "h3"], ["h1", "h3"]


def connection(path: list[str]) -> ConnectionRequest:
    """Both directions: a bandwidth change touches both ingress hosts (a validate step)."""
    return voice("v", 5201, "20mbit", bidirectional=True, path=path)


async def act(svc: Service, operation: str) -> object:
    if operation == "create":
        return await svc.create_connection(ACME, "acme", connection(FULL_PATH))
    if operation == "release":
        return await svc.release_connection(ACME, "acme", "v")
    change = (
        ModifyRequest(bandwidth="30mbit")
        if operation == "modify-bandwidth"
        else ModifyRequest(path=FULL_PATH)
    )
    return await svc.modify_connection(ACME, "acme", "v", change)


def hang_once(w: World, step: Step, operation: str, done: bool) -> tuple[str, float]:
    """h3 hangs at `step` of `operation`: the answer's reason and how long the request took.
    Checks what the answer says against every host and the database."""

    async def scenario(svc: Service) -> tuple[str, float]:
        if operation != "create":
            path = SHORT_PATH if operation == "modify-path" else FULL_PATH
            await svc.create_connection(ACME, "acme", connection(path))
        before = database_state(w.url), w.pieces()
        w.hosts.fail("h3", step, Failure.HANG, done=done)
        started = time.monotonic()
        with pytest.raises(AgentRefused) as refused:
            await act(svc, operation)
        took = time.monotonic() - started
        reason = refused.value.reason
        assert refused.value.host == "h3", reason
        assert database_state(w.url) == before[0], reason
        named = may_hold(reason)
        assert named <= {"h3"}, reason
        for host in HOSTS:
            if host not in named:
                assert w.pieces()[host] == before[1][host], (host, reason)
                assert w.hosts.pending(host) is None, (host, reason)
        back_again(w, "h3", Failure.HANG)
        outcome = await svc.reconciler.all_hosts(list(HOSTS))
        assert all(not isinstance(r, Exception) for r in outcome.values()), outcome
        assert w.pieces() == before[1], reason
        assert all(w.hosts.pending(h) is None for h in HOSTS), reason
        return reason, took

    return w.run(scenario)


@pytest.mark.parametrize("operation", OPERATIONS)
@pytest.mark.parametrize(("step", "done"), CASES)
def test_a_hung_host_is_waited_for_once_per_request(
    tmp_path: Path, step: Step, done: bool, operation: str
) -> None:
    w = world(tmp_path, rpc_timeout=0.05)
    reason, _ = hang_once(w, step, operation, done)
    assert w.hosts.timed_out == {"h3": 1}, (dict(w.hosts.timed_out), reason)


# the cases that waited for the hung host most before: a modify's undo and put-back after a
# lock, a cancel after the commit, confirms tried again until 90 % of the confirm timeout
@pytest.mark.parametrize(
    ("step", "operation"),
    [(Step.LOCK, "modify-path"), (Step.COMMIT, "release"), (Step.CONFIRM, "create")],
)
def test_a_request_to_a_hung_host_takes_about_one_rpc_timeout(
    tmp_path: Path, step: Step, operation: str
) -> None:
    rpc_timeout = 2.0  # s: longer than the request's own work on a loaded machine
    w = world(tmp_path, rpc_timeout=rpc_timeout)
    reason, took = hang_once(w, step, operation, done=False)
    assert rpc_timeout <= took < 2 * rpc_timeout, (took, reason)


def test_the_next_request_asks_the_host_again(tmp_path: Path) -> None:
    """Not asked again is per request: once the agent runs again, the next request uses it."""
    w = world(tmp_path, rpc_timeout=0.05)

    async def scenario(svc: Service) -> str:
        w.hosts.fail("h3", Step.LOCK, Failure.HANG)
        with pytest.raises(AgentRefused):
            await act(svc, "create")
        w.hosts.resume("h3")
        made = await svc.create_connection(ACME, "acme", connection(FULL_PATH))
        return made.connection.status

    assert w.run(scenario) == "established"
    assert all(w.pieces()[h] for h in HOSTS)
