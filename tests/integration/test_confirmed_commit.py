"""Confirmed commit (RFC 6241 Sec. 8.4, :confirmed-commit:1.1) on real agents, with ncclient
as the client: unconfirmed, running AND the kernel go back (at the timeout, on
<cancel-commit>, when the session ends without <persist>, after kill -9 and a restart);
confirmed, the change stays; on two agents at once, as a manager changing two hosts."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from ncclient import manager
from ncclient.operations.rpc import RPCError

from vnet.client import ClientError, Endpoint, NetconfClient
from vnet.controller.agents.transaction import nothing_pending as settles_nothing
from vnet.substrate import nsfs
from vnet.tools.wait import wait_until

from .agent_support import NETWORK_XML, AgentUnderTest, running_agent

NS = "urn:vnet:yang:vnet-router"
NC = "urn:ietf:params:xml:ns:netconf:base:1.0"
SHORT = 2  # s: the confirm-timeout of the tests that let it expire
WAIT = 30.0  # s: the longest a rollback may take to show (a loaded machine)


def vr_config(name: str, address: str) -> str:
    return (
        f'<config><routers xmlns="{NS}"><router><name>{name}</name><interface><name>eth0'
        f"</name><network>n1</network><ipv4>{address}</ipv4></interface></router></routers>"
        "</config>"
    )


def routers(m: manager.Manager) -> list[str]:
    data = m.get_config("running").data
    return sorted(n.text for n in data.iterfind(f".//{{{NS}}}router/{{{NS}}}name"))


def in_kernel(a: AgentUnderTest, name: str) -> bool:
    return nsfs.exists(a.node_ns(name))


def stage(m: manager.Manager, name: str, address: str) -> None:
    m.discard_changes()
    m.edit_config(target="candidate", config=vr_config(name, address))


def gone(a: AgentUnderTest, name: str) -> None:
    """Until VR `name` has left both running (asked on a fresh session) and the kernel."""

    def back() -> bool:
        with a.netconf() as m:
            return name not in routers(m) and not in_kernel(a, name)

    wait_until(back, WAIT, f"VR {name} rolled back", interval=0.2)


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AgentUnderTest]:
    with running_agent(tmp_path_factory.mktemp("confirmed"), frontends="netconf") as a:
        with a.netconf() as m:
            m.edit_config(target="running", config=NETWORK_XML)
            m.edit_config(target="running", config=vr_config("base", "10.1.0.1/24"))
        yield a


def test_the_capability_is_announced(agent: AgentUnderTest) -> None:
    with agent.netconf() as m:
        assert "urn:ietf:params:netconf:capability:confirmed-commit:1.1" in m.server_capabilities


def test_unconfirmed_goes_back_in_running_and_kernel(agent: AgentUnderTest) -> None:
    with agent.netconf() as m:
        stage(m, "r1", "10.1.0.11/24")
        m.commit(confirmed=True, timeout=str(SHORT))
        assert routers(m) == ["base", "r1"] and in_kernel(agent, "r1")
        gone(agent, "r1")
        assert routers(m) == ["base"] and in_kernel(agent, "base")


def delete_config(name: str) -> str:
    return (
        f'<config><routers xmlns="{NS}"><router xmlns:nc="{NC}" nc:operation="delete">'
        f"<name>{name}</name></router></routers></config>"
    )


def nothing_pending(m: manager.Manager) -> bool:
    with pytest.raises(RPCError, match="no confirmed commit is pending"):
        m.cancel_commit()
    return True


def test_confirmed_stays(agent: AgentUnderTest) -> None:
    with agent.netconf() as m:
        stage(m, "r2", "10.1.0.12/24")
        m.commit(confirmed=True, timeout=str(SHORT))
        m.commit()  # the confirming commit
        assert nothing_pending(m)
        time.sleep(SHORT + 1)  # a timer left running would have rolled back by now
        assert "r2" in routers(m) and in_kernel(agent, "r2")
        m.edit_config(target="running", config=delete_config("r2"))


def test_cancel_commit_goes_back_at_once(agent: AgentUnderTest) -> None:
    with agent.netconf() as m:
        stage(m, "r3", "10.1.0.13/24")
        m.commit(confirmed=True)  # the default timeout: 600 s
        assert in_kernel(agent, "r3")
        m.cancel_commit()
        assert routers(m) == ["base"] and not in_kernel(agent, "r3")


def test_session_end_without_persist_goes_back(agent: AgentUnderTest) -> None:
    with agent.netconf() as m:
        stage(m, "r4", "10.1.0.14/24")
        m.commit(confirmed=True)
        assert in_kernel(agent, "r4")
    gone(agent, "r4")


def test_persist_outlives_the_session_and_another_confirms(agent: AgentUnderTest) -> None:
    with agent.netconf() as m:
        stage(m, "r5", "10.1.0.15/24")
        m.commit(confirmed=True, persist="change-42")
    with agent.netconf() as other:
        assert "r5" in routers(other) and in_kernel(agent, "r5")
        with pytest.raises(RPCError) as info:
            other.commit()  # without the token
        assert info.value.tag == "invalid-value" and "persist-id" in info.value.message
        other.commit(persist_id="change-42")
        assert nothing_pending(other)
        other.edit_config(target="running", config=delete_config("r5"))


def test_bad_timeout_is_rejected_and_changes_nothing(agent: AgentUnderTest) -> None:
    with agent.netconf() as m:
        stage(m, "r6", "10.1.0.16/24")
        with pytest.raises(RPCError) as info:
            m.commit(confirmed=True, timeout="soon")
        assert info.value.tag == "invalid-value" and "confirm-timeout" in info.value.message
        assert routers(m) == ["base"] and not in_kernel(agent, "r6")
        m.discard_changes()


def test_kill_9_while_pending_then_restart_brings_the_previous_configuration_back(
    tmp_path: Path,
) -> None:
    with running_agent(tmp_path, frontends="netconf") as a:
        m = a.netconf()  # not closed: the agent dies under it
        m.edit_config(target="running", config=NETWORK_XML)
        m.edit_config(target="running", config=vr_config("before", "10.1.0.1/24"))
        m.edit_config(target="candidate", config=delete_config("before"))
        m.edit_config(target="candidate", config=vr_config("pending", "10.1.0.2/24"))
        m.commit(confirmed=True, persist="p")
        assert routers(m) == ["pending"] and in_kernel(a, "pending")
        os.kill(a.proc.pid, signal.SIGKILL)
        a.proc.wait(10)
        assert in_kernel(a, "pending"), "kill -9 leaves the kernel as it was"
        a.sandbox.start("netconf")
        with a.netconf() as m:
            assert routers(m) == ["before"]
            assert nothing_pending(m)
        assert in_kernel(a, "before") and not in_kernel(a, "pending")


def test_kill_9_after_the_confirm_then_restart_keeps_the_confirmed_configuration(
    tmp_path: Path,
) -> None:
    """The confirm of an unchanged candidate only rewrites the disk without the rollback
    point: a restart must find the confirmed configuration, not go back."""
    with running_agent(tmp_path, frontends="netconf") as a:
        m = a.netconf()  # not closed: the agent dies under it
        m.edit_config(target="running", config=NETWORK_XML)
        m.edit_config(target="running", config=vr_config("before", "10.1.0.1/24"))
        m.edit_config(target="candidate", config=vr_config("after", "10.1.0.2/24"))
        m.commit(confirmed=True, persist="p")
        m.commit(persist_id="p")  # the confirming commit
        assert nothing_pending(m)
        os.kill(a.proc.pid, signal.SIGKILL)
        a.proc.wait(10)
        a.sandbox.start("netconf")
        with a.netconf() as m:
            assert routers(m) == ["after", "before"] and nothing_pending(m)
        assert in_kernel(a, "before") and in_kernel(a, "after")


@pytest.fixture
def two_agents(tmp_path: Path) -> Iterator[tuple[AgentUnderTest, AgentUnderTest]]:
    with (
        running_agent(tmp_path / "a", frontends="netconf") as a,
        running_agent(tmp_path / "b", frontends="netconf") as b,
    ):
        for agent in (a, b):
            with agent.netconf() as m:
                m.edit_config(target="running", config=NETWORK_XML)
        yield a, b


def test_two_agents_as_one_transaction(two_agents: tuple[AgentUnderTest, ...]) -> None:
    """A manager's pattern: a confirmed commit on every host; not confirmed, all go back;
    confirmed on each, all stay."""
    sessions = [a.netconf() for a in two_agents]
    try:
        for m, address in zip(sessions, ("10.1.0.21/24", "10.1.0.22/24"), strict=True):
            stage(m, "t1", address)
            m.commit(confirmed=True, timeout=str(SHORT))
        assert all(in_kernel(a, "t1") for a in two_agents)
        for a in two_agents:
            gone(a, "t1")
        for m, address in zip(sessions, ("10.1.0.21/24", "10.1.0.22/24"), strict=True):
            stage(m, "t2", address)
            m.commit(confirmed=True, timeout=str(SHORT))
        for m in sessions:
            m.commit()
        time.sleep(SHORT + 1)
        for m, a in zip(sessions, two_agents, strict=True):
            assert routers(m) == ["t2"] and in_kernel(a, "t2") and not in_kernel(a, "t1")
    finally:
        for m in sessions:
            m.close_session()


def test_the_typed_client_confirms_and_cancels(agent: AgentUnderTest) -> None:
    """vnet.client.NetconfClient, as the lab, the CLI and a manager use it."""
    ep = Endpoint(agent.address, agent.netconf_port, agent.user, agent.password, agent.namespace)
    with NetconfClient(ep) as client:
        client.edit(
            vr_config("c1", "10.1.0.31/24").removeprefix("<config>").removesuffix("</config>"),
            target="candidate",
        )
        client.commit(confirmed=True, timeout=600, persist="typed")
        assert in_kernel(agent, "c1")
        with pytest.raises(ClientError) as info:
            client.cancel_commit(persist_id="other")
        assert info.value.tag == "invalid-value"
        client.cancel_commit(persist_id="typed")
        assert not in_kernel(agent, "c1")
        assert [r.name for r in client.routers(state=False)] == ["base"]


def test_every_nothing_pending_refusal_carries_the_app_tag_the_controller_matches(
    agent: AgentUnderTest,
) -> None:
    """Confirm or cancel under a token with nothing pending for it: none pending at all,
    one pending under another token, one pending without a token. The controller tells
    these from other refusals by error-app-tag (transaction.nothing_pending)."""
    ep = Endpoint(agent.address, agent.netconf_port, agent.user, agent.password, agent.namespace)
    with NetconfClient(ep) as client, agent.netconf() as raw:
        refusals = []
        for settle in (
            client.cancel_commit,
            lambda: client.cancel_commit(persist_id="gone"),
            lambda: client.commit(persist_id="gone"),
        ):
            with pytest.raises(ClientError) as info:
                settle()
            refusals.append(info.value)
        stage(raw, "t1", "10.1.0.41/24")
        raw.commit(confirmed=True, persist="mine")
        for persist_id in ("other", None):
            with pytest.raises(ClientError) as info:
                client.cancel_commit(persist_id=persist_id)
            refusals.append(info.value)
        raw.cancel_commit(persist_id="mine")
        stage(raw, "t2", "10.1.0.42/24")
        raw.commit(confirmed=True)  # no <persist>: only this session may settle it
        with pytest.raises(ClientError) as info:
            client.cancel_commit()
        refusals.append(info.value)
        with pytest.raises(RPCError) as raw_info:
            raw.cancel_commit(persist_id="mine")  # it has no token
        raw.cancel_commit()
        assert raw_info.value.app_tag == "vnet-nothing-pending"
    assert [settles_nothing(r) for r in refusals] == [True] * 6, [str(r) for r in refusals]
    assert not in_kernel(agent, "t1") and not in_kernel(agent, "t2")
