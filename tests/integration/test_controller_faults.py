"""Fault injection into the controller's transaction across agents: on a real three-host lab,
host h3's agent refuses, dies (SIGKILL by its PID) or hangs (SIGSTOP by its PID, until the
controller's RPC timeout gives up on it) at each step of the transaction (lock, edit,
validate, commit, confirm), while the controller creates a connection over h1, h2, h3,
changes its bandwidth, releases it, or moves it from h1-h3 to h1-h2-h3.

After each: the answer is a 502 naming h3; the database, every agent's whole running
configuration (raw ncclient) and the kernel of every namespace of every host (ip, tc) are
exactly as before the request, except on a host the answer names as possibly holding the
change, which is as before once its agent runs again (started again after a kill, SIGCONT
after a stop), within its confirm timeout and the controller's reconciliation.

One lab and one Service (SQLite) for the module; the connections are bidirectional, so a
bandwidth change touches both ingress hosts (h1 and h3) and so has a validate step.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest

from vnet.controller.errors import AgentRefused
from vnet.controller.service.core import Service
from vnet.model.controller_api import ConnectionRequest, ModifyRequest
from vnet.tools.wait import WaitTimeout, wait_until

from .conftest import Labs
from .controller_faults_support import (
    CONFIRM_TIMEOUT,
    RECONCILE_INTERVAL,
    Controller,
    Snapshot,
    clean_up,
    fired,
    inject,
    pending_hosts,
    revive,
    snapshot,
)
from .controller_service_support import ACME, HOSTS, Lab, start_lab
from .faulty_vnet import ACTIONS, NETCONF_ENV, STEPS

FAULTY = "h3"
OPERATIONS = ("create", "modify-bandwidth", "release", "modify-path")
FULL_PATH, SHORT_PATH = ["h1", "h2", "h3"], ["h1", "h3"]
_ports = itertools.count(5400)


@pytest.fixture(scope="module")
def lab(module_labs: Labs) -> Iterator[Lab]:
    with pytest.MonkeyPatch.context() as env:
        env.setenv(NETCONF_ENV, "1")  # the agents (also those started again) run the hook
        yield from start_lab(module_labs)


@pytest.fixture(scope="module")
def controller(lab: Lab, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Controller]:
    made = Controller(lab, tmp_path_factory.mktemp("faults"))
    # the VRs' SRv6 locators come with a lab's first connection and stay (a transaction
    # merges them, never removes them): the cases start with them in place
    made.call(made.service.create_connection(ACME, "acme", request("warm-up", FULL_PATH)))
    made.call(made.service.release_connection(ACME, "acme", "warm-up"))
    yield made
    made.close()


def request(name: str, path: list[str]) -> ConnectionRequest:
    return ConnectionRequest(
        name=name,
        a="pc1",
        b="pc3",
        protocol="udp",
        dst_port=next(_ports),
        bandwidth="5mbit",
        bidirectional=True,
        path=path,
    )


async def act(service: Service, operation: str, name: str) -> object:
    if operation == "create":
        return await service.create_connection(ACME, "acme", request(name, FULL_PATH))
    if operation == "release":
        return await service.release_connection(ACME, "acme", name)
    change = (
        ModifyRequest(bandwidth="7mbit")
        if operation == "modify-bandwidth"
        else ModifyRequest(path=FULL_PATH)
    )
    return await service.modify_connection(ACME, "acme", name, change)


# Every pair of failure, step and operation, in 20 cases instead of the 60 of every
# combination (each took 3-13 s here): each step with each operation, the failure turning
# so that each step and each operation meets each failure. Every combination runs on hosts
# in memory (tests/unit/test_controller_memory_faults.py); here the agents are real.
CASES = [
    (ACTIONS[(i + j) % len(ACTIONS)], step, operation)
    for i, step in enumerate(STEPS)
    for j, operation in enumerate(OPERATIONS)
]


@pytest.mark.parametrize(("action", "step", "operation"), CASES)
def test_a_faulty_agent_leaves_every_host_as_the_answer_says(
    lab: Lab, controller: Controller, action: str, step: str, operation: str
) -> None:
    try:
        one_case(lab, controller, action, step, operation)
    finally:
        clean_up(lab, controller, FAULTY)


def one_case(lab: Lab, controller: Controller, action: str, step: str, operation: str) -> None:
    service, name = controller.service, f"{operation[:8]}-{action}-{step}"
    if operation != "create":
        path = SHORT_PATH if operation == "modify-path" else FULL_PATH
        controller.call(service.create_connection(ACME, "acme", request(name, path)))
    before = snapshot(lab, controller.url)
    inject(lab, FAULTY, action, step)
    try:
        answer = controller.call(act(service, operation, name))
    except AgentRefused as refused:
        answer = refused
    assert fired(lab, FAULTY) == f"{action} {step}", f"{operation} sent no {step} to {FAULTY}"
    assert isinstance(answer, AgentRefused), f"{action} at {step} on {FAULTY}, yet: {answer}"
    assert (answer.status, answer.host) == (502, FAULTY), answer.reason
    # what the answer says stays where: nothing but on the faulty host, if it names it
    pending = pending_hosts(answer.reason)
    assert pending <= {FAULTY}, answer.reason
    answering = tuple(h for h in HOSTS if action == "refuse" or h != FAULTY)
    now = snapshot(lab, controller.url, answering)
    as_it_was = tuple(h for h in HOSTS if h not in pending)
    problems = before.differences(now, tuple(h for h in as_it_was if h in answering), as_it_was)
    assert not problems, f"{answer.reason}\n" + "\n".join(problems)
    if action != "refuse":
        revive(lab, FAULTY)
    back_as_before(lab, controller, before, answer.reason)
    if operation != "create":
        controller.call(service.release_connection(ACME, "acme", name))
    assert lab.controller_pieces() == {h: set() for h in HOSTS}


def back_as_before(lab: Lab, controller: Controller, before: Snapshot, reason: str) -> None:
    """Every host as before, once the faulty one runs again: within its confirm timeout
    (it rolls back by itself) and the controller's next reconciliation."""
    last: list[str] = []

    def same() -> bool:
        last[:] = before.differences(snapshot(lab, controller.url))
        return not last

    try:
        # a bound, not a wait: the rollback and the reconciliation take a few seconds, a
        # loaded machine's agent restart (`lab up`) and snapshots up to tens more
        wait_until(same, 2 * CONFIRM_TIMEOUT + 10 * RECONCILE_INTERVAL + 60, "hosts as before", 0.5)
    except WaitTimeout:
        raise AssertionError(f"{reason}\n" + "\n".join(last)) from None
