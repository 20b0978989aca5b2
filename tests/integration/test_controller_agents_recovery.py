"""A controller process killed (SIGKILL) between the confirmed commit and the confirm of a
transaction across three hosts (issue 12, part 6): the agents roll back by themselves at
the confirm timeout; recovery's `settle` cancels at once, or confirms; settling what is not
pending changes nothing."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from ncclient.operations.rpc import RPCError

from vnet.controller.agents.netconf import NetconfSouthbound
from vnet.controller.agents.realise import Agents, ConfirmError, HostChange

from .controller_agents_support import HOSTS, Lab

# the controller's side, in a process of its own: its requests run at once (in the order
# given; with `first_alone`, the first runs alone and the others come while it does); those
# marked `hang` journal COMMITTED and then hang, to be killed before confirms
CONTROLLER = """
import asyncio, json, sys
from vnet.client import Endpoint
from vnet.controller.agents.netconf import NetconfSouthbound
from vnet.controller.agents.realise import Agents, HostChange
from vnet.model.host_guarantees import ConnectionPieces, Locator

spec = json.loads(sys.stdin.readline())
endpoints = {h: Endpoint(**e) for h, e in spec["endpoints"].items()}

def change(c):
    return HostChange(
        c["host"],
        put=tuple(ConnectionPieces.model_validate(p) for p in c["put"]),
        locators=tuple(Locator.model_validate(x) for x in c["locators"]),
    )

def journal(request, hang):
    async def committed():
        if hang:
            print("committed", request, flush=True)
            await asyncio.sleep(3600)
    return committed

async def main():
    agents = Agents(NetconfSouthbound(endpoints), confirm_timeout=spec["timeout"])

    def run(r):
        return asyncio.create_task(agents.transaction(
            r["request"], [change(c) for c in r["changes"]], journal(r["request"], r["hang"])))

    first, *rest = spec["requests"]
    tasks = [run(first)]
    if spec["first_alone"]:  # its transaction takes far longer: the others queue behind it
        await asyncio.sleep(0.05)
    await asyncio.gather(*tasks, *(run(r) for r in rest))

asyncio.run(main())
"""
HANG_WAIT = 120  # seconds the child may take to commit what it was given
Request = tuple[str, list[HostChange], bool]  # request id, changes, hang after commit


@pytest.fixture(scope="module")
def lab(agents_lab: Lab) -> Lab:
    """The session's line of three hosts, borrowed (conftest.py guards it)."""
    return agents_lab


def killed_after_commit(lab: Lab, request: str, changes: list[HostChange], timeout: int) -> None:
    """Run the controller's transaction in a child process and SIGKILL it once every host
    committed (before any confirm)."""
    killed_while_hanging(lab, [(request, changes, True)], timeout, [request])


def killed_while_hanging(
    lab: Lab, requests: list[Request], timeout: int, hanging: list[str], first_alone: bool = False
) -> None:
    """Run the requests in a controller process; SIGKILL it once those in `hanging` all
    journaled COMMITTED (and hang there), or after HANG_WAIT seconds (the test fails)."""
    spec = {
        "timeout": timeout,
        "first_alone": first_alone,
        "endpoints": {h: dataclasses.asdict(ep) for h, ep in lab.endpoints().items()},
        "requests": [
            {"request": rid, "hang": hang, "changes": [wire(c) for c in changes]}
            for rid, changes, hang in requests
        ],
    }
    child = subprocess.Popen(
        [sys.executable, "-c", CONTROLLER],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    reader = ThreadPoolExecutor(1)  # a line that never comes must not hang the suite
    try:
        assert child.stdin is not None and child.stdout is not None
        child.stdin.write(json.dumps(spec) + "\n")
        child.stdin.flush()
        out = child.stdout
        said = reader.submit(lambda: [out.readline() for _ in hanging]).result(HANG_WAIT)
        assert sorted(said) == sorted(f"committed {r}\n" for r in hanging), (
            f"the child said {said!r}: {child.stderr.read()}"  # type: ignore[union-attr]
        )
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        reader.shutdown()


def wire(c: HostChange) -> dict[str, object]:
    return {
        "host": c.host,
        "put": [p.model_dump(mode="json") for p in c.put],
        "locators": [x.model_dump(mode="json") for x in c.locators],
    }


def settle(lab: Lab, request: str, confirm: bool) -> None:
    async def run() -> None:
        agents = Agents(NetconfSouthbound(lab.endpoints()))
        try:
            await agents.settle(request, HOSTS, confirm)
        finally:
            await agents.close()

    asyncio.run(run())


def holding(lab: Lab, name: str) -> set[str]:
    return {h for h in HOSTS if name in lab.connection_names(h)}


def test_the_agents_roll_back_at_the_timeout_by_themselves(lab: Lab) -> None:
    before = lab.running()
    killed_after_commit(lab, "req-401", lab.changes("vc401")["vc401"], timeout=3)
    deadline = time.monotonic() + 60  # 3 s on an idle machine; generous under load
    while lab.running() != before and time.monotonic() < deadline:
        time.sleep(0.5)
    assert lab.running() == before


def test_settle_cancels_at_once_and_again_is_a_no_op(lab: Lab) -> None:
    before = lab.running()
    killed_after_commit(lab, "req-402", lab.changes("vc402")["vc402"], timeout=600)
    assert holding(lab, "vc402") == set(HOSTS)  # committed, waiting for a confirm
    settle(lab, "req-402", confirm=False)
    assert lab.running() == before
    settle(lab, "req-402", confirm=False)  # nothing pending: nothing happens
    settle(lab, "req-402", confirm=True)
    assert lab.running() == before


def test_settle_confirms_and_the_timeout_no_longer_rolls_back(lab: Lab) -> None:
    killed_after_commit(lab, "req-403", lab.changes("vc403")["vc403"], timeout=4)
    settle(lab, "req-403", confirm=True)
    settled = lab.running()
    assert holding(lab, "vc403") == set(HOSTS)
    for host in HOSTS:
        with lab.connect(host) as m, pytest.raises(RPCError, match="no confirmed commit"):
            m.cancel_commit(persist_id="req-403")
    time.sleep(6)  # past the timeout the commit would have had
    assert lab.running() == settled

    async def release() -> None:
        agents = Agents(NetconfSouthbound(lab.endpoints()))
        try:
            await agents.transaction(
                "release-403", [HostChange(h, delete=("vc403",)) for h in HOSTS]
            )
        finally:
            await agents.close()

    asyncio.run(release())
    assert holding(lab, "vc403") == set()


def test_settling_another_token_leaves_a_pending_commit_alone(lab: Lab) -> None:
    before = lab.running()
    killed_after_commit(lab, "req-404", lab.changes("vc404")["vc404"], timeout=600)
    pending = lab.running()
    settle(lab, "req-other", confirm=False)
    settle(lab, "req-other", confirm=True)
    assert lab.running() == pending
    settle(lab, "req-404", confirm=False)
    assert lab.running() == before


def test_a_confirm_too_late_raises_confirm_error_and_frees_the_hosts(lab: Lab) -> None:
    before = lab.running()

    async def rolled_back_meanwhile() -> None:  # the journal was slower than the timeout
        deadline = time.monotonic() + 60
        while lab.running() != before and time.monotonic() < deadline:
            await asyncio.sleep(0.5)

    async def run() -> ConfirmError:
        agents = Agents(NetconfSouthbound(lab.endpoints()), confirm_timeout=2)
        try:
            with pytest.raises(ConfirmError) as late:
                await agents.transaction(
                    "req-405", lab.changes("vc405")["vc405"], rolled_back_meanwhile
                )
            # the same controller goes on: no lock of its own left behind
            await agents.transaction("req-406", lab.changes("vc406")["vc406"])
            await agents.transaction("rel-406", [HostChange(h, delete=("vc406",)) for h in HOSTS])
            return late.value
        finally:
            await agents.close()

    err = asyncio.run(run())
    assert "no confirmed commit" in err.reason, err
    assert lab.running() == before


def test_a_group_is_settled_by_its_token_owner(lab: Lab) -> None:
    changes = lab.changes("vc410", "vc411", "vc412", "vc413")
    first = [("req-410", changes["vc410"], False)]  # alone: the others queue behind it
    group = [(f"req-41{i}", changes[f"vc41{i}"], True) for i in (1, 2, 3)]
    # req-411 leads the group (the persist token); its journal waits for the others', so
    # req-412 and req-413 hang in theirs with the group committed everywhere
    killed_while_hanging(lab, first + group, 600, ["req-412", "req-413"], first_alone=True)
    pending = lab.running()
    for name in ("vc410", "vc411", "vc412", "vc413"):
        assert holding(lab, name) == set(HOSTS), name
    settle(lab, "req-412", confirm=True)  # not the token: nothing pending under it
    settle(lab, "req-413", confirm=False)
    assert lab.running() == pending
    settle(lab, "req-411", confirm=False)  # the token owner: the whole group goes back
    assert holding(lab, "vc410") == set(HOSTS)
    assert not any(holding(lab, n) for n in ("vc411", "vc412", "vc413"))

    async def release() -> None:
        agents = Agents(NetconfSouthbound(lab.endpoints()))
        try:
            await agents.transaction("rel-410", [HostChange(h, delete=("vc410",)) for h in HOSTS])
        finally:
            await agents.close()

    asyncio.run(release())
