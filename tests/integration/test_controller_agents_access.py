"""How the controller reaches the agents (issue 12, part 6), on a real three-host lab: two
controllers (two `Agents`, sessions of their own) transacting on the same hosts at once
never mix their edits and all their requests land; a candidate locked by someone else is
waited for only so long, and then nothing changed anywhere; an unreachable host fails the
request and leaves the others as they were; the reads (connections, locators, class
bytes, reachability) match independent views (raw ncclient, tc)."""

from __future__ import annotations

import asyncio
import subprocess

import pytest

from vnet.client import Endpoint
from vnet.controller.agents.netconf import NetconfSouthbound
from vnet.controller.agents.realise import AgentError, Agents, HostChange

from .controller_agents_support import HOSTS, Lab

RunningConfig = dict[str, str]


@pytest.fixture(scope="module")
def lab(agents_lab: Lab) -> Lab:
    """The session's line of three hosts, borrowed (conftest.py guards it)."""
    return agents_lab


async def release(agents: Agents, names: list[str]) -> None:
    await agents.transaction(
        "release-" + "-".join(names), [HostChange(h, delete=tuple(names)) for h in HOSTS]
    )


def test_two_controllers_on_the_same_hosts_never_mix_and_all_land(lab: Lab) -> None:
    names = [f"vc5{i}" for i in range(6)]
    changes = lab.changes(*names)

    async def run() -> None:
        first, second = (
            Agents(NetconfSouthbound(lab.endpoints())),
            Agents(NetconfSouthbound(lab.endpoints())),
        )
        try:
            await asyncio.gather(
                *(
                    (first if i % 2 else second).transaction(f"req-{n}", changes[n])
                    for i, n in enumerate(names)
                )
            )
            for host in HOSTS:  # each piece exactly as its own request put it
                held = {c.name: c for c in await first.connections(host)}
                for n in names:
                    (mine,) = (c.put[0] for c in changes[n] if c.host == host)
                    assert held[n] == mine, (host, n)
            await release(first, names)
        finally:
            await first.close()
            await second.close()

    asyncio.run(run())
    assert not any(set(names) & lab.connection_names(h) for h in HOSTS)


def test_a_candidate_locked_elsewhere_is_waited_for_only_so_long(lab: Lab) -> None:
    before = lab.running()

    async def run() -> AgentError:
        agents = Agents(NetconfSouthbound(lab.endpoints()), lock_wait=1.0)
        try:
            with pytest.raises(AgentError) as refused:
                await agents.transaction("req-601", lab.changes("vc601")["vc601"])
            return refused.value
        finally:
            await agents.close()

    with lab.connect("h2") as holder:  # an operator's session holds h2's candidate
        holder.lock("candidate")
        err = asyncio.run(run())
        holder.unlock("candidate")
    assert err.host == "h2" and err.tag == "lock-denied", err
    assert lab.running() == before
    for host in HOSTS:  # the controller let go of every lock it took
        with lab.connect(host) as m:
            m.lock("candidate")
            m.unlock("candidate")


def test_an_unreachable_host_fails_the_request_and_changes_nothing(lab: Lab) -> None:
    before = lab.running()
    endpoints = lab.endpoints() | {"a-gone": Endpoint(address="127.0.0.1", port=1, timeout=3)}
    changes = lab.changes("vc701")["vc701"]
    gone = HostChange("a-gone", locators=changes[0].locators)

    async def run() -> tuple[dict[str, bool], AgentError, RunningConfig]:
        agents = Agents(NetconfSouthbound(endpoints), lock_wait=2)
        try:
            reachable = {h: await agents.reachable(h) for h in (*HOSTS, "a-gone", "unknown")}
            with pytest.raises(AgentError) as failed:
                await agents.transaction("req-701", [*changes, gone])
            after = lab.running()
            # the locks taken on h1..h3 meanwhile were let go: the same controller goes on
            await agents.transaction("req-702", changes)
            await release(agents, ["vc701"])
            return reachable, failed.value, after
        finally:
            await agents.close()

    reachable, err, after = asyncio.run(run())
    assert reachable == {"h1": True, "h2": True, "h3": True, "a-gone": False, "unknown": False}
    assert err.host == "a-gone" and err.tag is None, err
    assert after == before


def test_the_reads_match_independent_views(lab: Lab) -> None:
    changes = lab.changes("vc801")["vc801"]
    r1 = f"vnet-{lab.name}-r1"

    async def run() -> tuple[
        dict[str, object], dict[tuple[str, str], int], dict[tuple[str, str], int]
    ]:
        netconf = NetconfSouthbound(lab.endpoints())
        agents = Agents(netconf)
        try:
            await agents.transaction("req-801", changes)
            held = {h: (await agents.connections(h), await netconf.locators(h)) for h in HOSTS}
            before = await agents.class_bytes("h1")
            subprocess.run(  # r1 -> r2 over network c12: VXLAN through h1's class for c12
                [
                    "ip",
                    "netns",
                    "exec",
                    r1,
                    "ping",
                    "-c",
                    "5",
                    "-i",
                    "0.2",
                    "-s",
                    "1000",
                    "10.51.2.202",
                ],
                check=True,
                capture_output=True,
            )
            after = await agents.class_bytes("h1")
            await release(agents, ["vc801"])
            return held, before, after  # type: ignore[return-value]
        finally:
            await agents.close()

    held, before, after = asyncio.run(run())
    for change in changes:
        pieces, locators = held[change.host]  # type: ignore[misc]
        assert change.put[0] in pieces, change.host
        assert set(change.locators) <= set(locators), change.host
    classes = {key for key in before if key[1] == "c12"}
    assert len(classes) == 1, before
    ((itf, _),) = classes
    shown = subprocess.run(
        ["tc", "-n", f"vnet-{lab.name}-h1", "class", "show", "dev", itf],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "htb" in shown, shown
    assert after[(itf, "c12")] - before[(itf, "c12")] >= 5 * 1000, (before, after)


MONITORING = "urn:ietf:params:xml:ns:yang:ietf-netconf-monitoring"


def end_other_sessions(lab: Lab, host: str) -> int:
    """<kill-session> of every session on `host`'s agent but this test's own."""
    with lab.connect(host) as m:
        state = m.get(
            ("subtree", f'<netconf-state xmlns="{MONITORING}"><sessions/></netconf-state>')
        )
        ids = [el.text for el in state.data_ele.iter(f"{{{MONITORING}}}session-id")]
        others = [i for i in ids if i != str(m.session_id)]
        for other in others:
            m.kill_session(other)
    return len(others)


def test_sessions_the_agents_ended_are_opened_again(lab: Lab) -> None:
    changes = lab.changes("vc901", "vc902")

    async def run() -> list[int]:
        agents = Agents(NetconfSouthbound(lab.endpoints()))
        try:
            await agents.transaction("req-901", changes["vc901"])
            ended = [end_other_sessions(lab, h) for h in HOSTS]  # the controller's
            await agents.transaction("req-902", changes["vc902"])
            assert {"vc901", "vc902"} <= {c.name for c in await agents.connections("h2")}
            ended += [end_other_sessions(lab, h) for h in HOSTS]
            assert await agents.reachable("h1")
            await release(agents, ["vc901", "vc902"])
            return ended
        finally:
            await agents.close()

    assert asyncio.run(run()) == [1] * 6
    assert not any({"vc901", "vc902"} & lab.connection_names(h) for h in HOSTS)
