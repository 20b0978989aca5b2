"""The controller's transaction across agents (issue 12, part 6) on a real three-host lab:
pieces land on every host, an agent that refuses halfway leaves every host exactly as it
was, concurrent transactions on the same hosts all land (grouped or not), and a refusing
member of a group fails alone. Checked with independent NETCONF sessions (raw ncclient)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
from ncclient.operations.rpc import RPCError

from vnet.controller.agents.netconf import NetconfSouthbound
from vnet.controller.agents.realise import AgentError, Agents, HostChange
from vnet.model.host_guarantees import Locator

from .controller_agents_support import HOSTS, Lab


@pytest.fixture(scope="module")
def lab(agents_lab: Lab) -> Lab:
    """The session's line of three hosts, borrowed (conftest.py guards it)."""
    return agents_lab


def with_unknown_router(change: HostChange) -> HostChange:
    """h2's pieces, naming a VR that h2 does not have: its agent refuses them."""
    pieces = change.put[0]
    transit = [t.model_copy(update={"router": "nosuch"}) for t in pieces.transit]
    return HostChange(change.host, put=(pieces.model_copy(update={"transit": transit}),))


def refused_on_h2(changes: list[HostChange]) -> list[HostChange]:
    return [with_unknown_router(c) if c.host == "h2" else c for c in changes]


async def release(agents: Agents, names: list[str]) -> None:
    await agents.transaction(
        "release-" + "-".join(names), [HostChange(h, delete=tuple(names)) for h in HOSTS]
    )


def test_a_transaction_puts_pieces_on_every_host_and_confirms(lab: Lab) -> None:
    changes = lab.changes("vc101")["vc101"]
    assert {c.host for c in changes} == set(HOSTS)
    journaled: list[set[str]] = []

    async def on_committed() -> None:  # committed (pending) on every host at this point
        journaled.append({h for h in HOSTS if "vc101" in lab.connection_names(h)})

    async def run() -> dict[str, list[str]]:
        agents = Agents(NetconfSouthbound(lab.endpoints()), confirm_timeout=30)
        try:
            await agents.transaction("req-101", changes, on_committed)
            return {h: [c.name for c in await agents.connections(h)] for h in HOSTS}
        finally:
            await agents.close()

    seen = asyncio.run(run())
    assert journaled == [set(HOSTS)]
    for host in HOSTS:
        assert "vc101" in lab.connection_names(host), host
        assert "vc101" in seen[host]
        with lab.connect(host) as m, pytest.raises(RPCError, match="no confirmed commit"):
            m.cancel_commit(persist_id="req-101")  # confirmed: nothing left pending

    async def delete() -> None:
        agents = Agents(NetconfSouthbound(lab.endpoints()), confirm_timeout=30)
        try:
            await release(agents, ["vc101"])
        finally:
            await agents.close()

    asyncio.run(delete())
    assert not any("vc101" in lab.connection_names(h) for h in HOSTS)


def test_a_put_replaces_the_whole_connection_entry(lab: Lab) -> None:
    first = lab.changes("vc102")["vc102"]
    second = lab.changes("vc102")["vc102"]  # a new id and port: every field differs

    async def run() -> dict[str, list[object]]:
        agents = Agents(NetconfSouthbound(lab.endpoints()), confirm_timeout=30)
        try:
            await agents.transaction("req-102a", first)
            await agents.transaction("req-102b", second)
            got = {h: await agents.connections(h) for h in HOSTS}
            await release(agents, ["vc102"])
            return got  # type: ignore[return-value]
        finally:
            await agents.close()

    got = asyncio.run(run())
    for change in second:
        assert got[change.host] == [change.put[0]], change.host


def test_a_host_refusing_halfway_leaves_every_host_as_it_was(lab: Lab) -> None:
    changes = refused_on_h2(lab.changes("vc103")["vc103"])
    before = lab.running()
    called: list[bool] = []

    async def on_committed() -> None:
        called.append(True)

    async def run() -> AgentError:
        agents = Agents(NetconfSouthbound(lab.endpoints()), confirm_timeout=30)
        try:
            with pytest.raises(AgentError) as refused:
                await agents.transaction("req-103", changes, on_committed)
            return refused.value
        finally:
            await agents.close()

    err = asyncio.run(run())
    assert err.host == "h2" and "nosuch" in err.reason, err
    assert err.path is not None and "vc103" in err.path, err.path
    assert err.tag is not None  # the agent's own error tag
    assert called == []
    assert lab.running() == before
    for host in HOSTS:  # and nobody's candidate holds a leftover or a lock
        with lab.connect(host) as m:
            m.lock("candidate")
            m.unlock("candidate")


@pytest.mark.parametrize("group", [True, False], ids=["grouped", "one-by-one"])
def test_concurrent_transactions_on_the_same_hosts_all_land(lab: Lab, group: bool) -> None:
    names = [f"vc2{int(group)}{i}" for i in range(6)]
    changes = lab.changes(*names)

    async def run() -> int:
        agents = Agents(NetconfSouthbound(lab.endpoints()), confirm_timeout=30, group=group)
        try:
            await asyncio.gather(*(agents.transaction(f"req-{n}", changes[n]) for n in names))
            groups = agents.groups
            for host in HOSTS:
                assert {c.name for c in await agents.connections(host)} >= set(names)
            for host in HOSTS:
                assert set(names) <= lab.connection_names(host), host
            await release(agents, names)
            return groups
        finally:
            await agents.close()

    groups = asyncio.run(run())
    # all six were queued together: grouped, the five behind the first share one commit
    assert groups < len(names) if group else groups == len(names)


def with_unknown_locator_owner(change: HostChange) -> HostChange:
    """A locator owned by a VR h2 does not have: refused without naming a connection."""
    owner = Locator(prefix="fc00:99::/48", router="nosuch")
    return HostChange(change.host, put=change.put, locators=(*change.locators, owner))


@pytest.mark.parametrize(
    "spoil", [with_unknown_router, with_unknown_locator_owner], ids=["named", "unnamed"]
)
def test_a_refusing_member_of_a_group_fails_alone(
    lab: Lab, spoil: Callable[[HostChange], HostChange]
) -> None:
    names = [f"vc3{spoil.__name__[13]}{i}" for i in range(7)]  # r(outer) or l(ocator)
    changes = lab.changes(*names)
    bad = names[4]
    changes[bad] = [spoil(c) if c.host == "h2" else c for c in changes[bad]]

    async def run() -> list[BaseException | None]:
        agents = Agents(NetconfSouthbound(lab.endpoints()), confirm_timeout=30)
        try:
            results = await asyncio.gather(
                *(agents.transaction(f"req-{n}", changes[n]) for n in names),
                return_exceptions=True,
            )
            for host in HOSTS:
                held = lab.connection_names(host)
                assert set(names) - {bad} <= held and bad not in held, host
            await release(agents, names)
            return list(results)
        finally:
            await agents.close()

    results = asyncio.run(run())
    for name, result in zip(names, results, strict=True):
        if name == bad:
            assert isinstance(result, AgentError) and result.host == "h2", result
            assert "nosuch" in result.reason, result
        else:
            assert result is None, (name, result)


def test_a_single_host_refusing_at_commit_changes_nothing(lab: Lab) -> None:
    (change,) = [c for c in refused_on_h2(lab.changes("vc104")["vc104"]) if c.host == "h2"]
    before = lab.running()

    async def run() -> AgentError:
        agents = Agents(NetconfSouthbound(lab.endpoints()), confirm_timeout=30)
        try:
            with pytest.raises(AgentError) as refused:
                await agents.transaction("req-104", [change])
            return refused.value
        finally:
            await agents.close()

    err = asyncio.run(run())
    assert err.host == "h2" and "nosuch" in err.reason, err
    assert lab.running() == before
