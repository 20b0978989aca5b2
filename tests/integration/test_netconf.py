"""NETCONF over SSH against a real agent, with ncclient as the client."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from ncclient import manager
from ncclient.operations import RPCError
from ncclient.transport.errors import AuthenticationError

from vnet.substrate import Kernel, nsfs, observe
from vnet.tools.wait import WaitTimeout, wait_until

from .agent_support import NETWORK_XML, AgentUnderTest, running_agent, start_agent_process

NS = "urn:vnet:yang:vnet-router"
NC = "urn:ietf:params:xml:ns:netconf:base:1.0"


def connect(a: AgentUnderTest, password: str | None = None) -> manager.Manager:
    return a.netconf(password)


def vr_xml(
    name: str, network: str = "n1", ipv4: str = "10.1.0.254/24", extra: str = "", op: str = ""
) -> str:
    attr = f' xmlns:nc="{NC}" nc:operation="{op}"' if op else ""
    return (
        f'<config><routers xmlns="{NS}"><router{attr}><name>{name}</name>{extra}'
        f"<interface><name>eth0</name><network>{network}</network><ipv4>{ipv4}</ipv4>"
        f"</interface></router></routers></config>"
    )


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AgentUnderTest]:
    with running_agent(tmp_path_factory.mktemp("netconf"), frontends="netconf") as a:
        with connect(a) as m:
            m.edit_config(target="running", config=NETWORK_XML)
        yield a


@pytest.fixture
def m(agent: AgentUnderTest) -> Iterator[manager.Manager]:
    session = connect(agent)
    yield session
    if session.connected:
        session.close_session()
    # leave the datastore with only the networks for the next test (the agent may
    # have been restarted by the test, so connect afresh)
    with connect(agent) as cleaner:
        for name in routers(cleaner):
            cleaner.edit_config(target="running", config=vr_xml(name, op="remove"))


def routers(m: manager.Manager) -> list[str]:
    data = m.get_config("running").data
    return [n.text for n in data.iterfind(f".//{{{NS}}}router/{{{NS}}}name")]


def vr_namespaces(a: AgentUnderTest) -> list[str]:
    with Kernel() as k:
        return sorted(observe(k, a.scope, a.prefix).state.namespaces)


def test_hello_offers_base_11_candidate_and_yang_library(m: manager.Manager) -> None:
    caps = list(m.server_capabilities)
    for cap in (
        "urn:ietf:params:netconf:base:1.1",
        "urn:ietf:params:netconf:base:1.0",
        "urn:ietf:params:netconf:capability:candidate:1.0",
        "urn:ietf:params:netconf:capability:rollback-on-error:1.0",
        "urn:ietf:params:netconf:capability:notification:1.0",
    ):
        assert cap in caps
    assert any(c.startswith("urn:ietf:params:netconf:capability:yang-library:1.1") for c in caps)
    lib = m.get(
        filter=("subtree", '<yang-library xmlns="urn:ietf:params:xml:ns:yang:ietf-yang-library"/>')
    ).data_xml
    assert "vnet-router" in lib and "2026-11-22" in lib


def test_create_shows_in_the_kernel_and_in_get(agent: AgentUnderTest, m: manager.Manager) -> None:
    m.edit_config(target="running", config=vr_xml("r1"))
    assert agent.node_ns("r1") in vr_namespaces(agent)
    data = m.get(
        filter=("subtree", f'<routers xmlns="{NS}"><router><name>r1</name></router></routers>')
    ).data
    assert data.findtext(f".//{{{NS}}}oper-state") == "running"
    assert data.findtext(f".//{{{NS}}}index") == "1"
    addrs = subprocess.run(
        ["ip", "-n", agent.node_ns("r1"), "-br", "addr"], text=True, capture_output=True, check=True
    ).stdout
    assert "10.1.0.254/24" in addrs
    hyp = m.get(filter=("subtree", f'<hypervisor xmlns="{NS}"/>')).data
    assert hyp.findtext(f".//{{{NS}}}configured-routers") == "1"
    assert hyp.findtext(f".//{{{NS}}}next-available-index") == "2"


def test_delete_removes_it_everywhere(agent: AgentUnderTest, m: manager.Manager) -> None:
    m.edit_config(target="running", config=vr_xml("r1"))
    m.edit_config(target="running", config=vr_xml("r1", op="delete"))
    assert routers(m) == []
    assert vr_namespaces(agent) == []
    with pytest.raises(RPCError) as info:
        m.edit_config(target="running", config=vr_xml("r1", op="delete"))
    assert info.value.tag == "data-missing"


@pytest.mark.parametrize(
    ("config", "tag", "path_part", "words"),
    [
        (vr_xml("bad name!"), "invalid-value", "router", "letter"),
        (
            vr_xml("r1", network="nope"),
            "invalid-value",
            "interface[vr:name='eth0']/vr:network",
            "unknown network",
        ),
        (vr_xml("r1", ipv4="10.9.0.1/24"), "invalid-value", "vr:ipv4", "outside"),
        (vr_xml("r1", extra="<index>x</index>"), "invalid-value", "vr:index", "not a valid"),
        (vr_xml("r1").replace(NS, "urn:not:ours"), "unknown-namespace", "routers", "namespace"),
        (
            vr_xml("r1").replace("<ipv4>", "<colour>red</colour><ipv4>"),
            "unknown-element",
            "colour",
            "not an element",
        ),
        (
            vr_xml("r1", extra="<oper-state>running</oper-state>"),
            "invalid-value",
            "oper-state",
            "state data",
        ),
    ],
)
def test_invalid_edits_are_precise_and_change_nothing(
    agent: AgentUnderTest,
    m: manager.Manager,
    config: str,
    tag: str,
    path_part: str,
    words: str,
) -> None:
    before = m.get_config("running").data_xml
    with pytest.raises(RPCError) as info:
        m.edit_config(target="running", config=config)
    err = info.value
    assert err.tag == tag, err.message
    assert path_part in (err.path or ""), (err.path, err.message)
    assert words in err.message
    assert m.get_config("running").data_xml == before
    assert vr_namespaces(agent) == []


def test_duplicate_index_is_rejected(agent: AgentUnderTest, m: manager.Manager) -> None:
    m.edit_config(target="running", config=vr_xml("r1", extra="<index>7</index>"))
    with pytest.raises(RPCError) as info:
        m.edit_config(
            target="running", config=vr_xml("r2", ipv4="10.1.0.253/24", extra="<index>7</index>")
        )
    assert "index 7" in info.value.message and "r1" in info.value.message
    assert info.value.path.endswith("vr:router[vr:name='r2']/vr:index")
    assert vr_namespaces(agent) == [agent.node_ns("r1")]


def test_malformed_xml_gets_an_rpc_error(agent: AgentUnderTest) -> None:
    """ncclient cannot send broken XML, so this speaks NETCONF 1.0 framing by hand."""
    script = (
        "import asyncio, asyncssh, sys\n"
        "async def main():\n"
        f"    async with asyncssh.connect('{agent.address}', {agent.netconf_port}, "
        f"username='{agent.user}', password='{agent.password}', known_hosts=None) as c:\n"
        "        w, r, _ = await c.open_session(subsystem='netconf', encoding=None)\n"
        '        hello = b\'<hello xmlns="urn:ietf:params:xml:ns:netconf:base:1.0"><capabilities>'
        "<capability>urn:ietf:params:netconf:base:1.0</capability></capabilities></hello>]]>]]>'\n"
        "        w.write(hello)\n"
        "        buf = b''\n"
        "        while buf.count(b']]>]]>') < 1: buf += await r.read(65536)\n"
        '        w.write(b\'<rpc message-id="7" xmlns="urn:ietf:params:xml:ns:netconf:base:1.0">'
        "<get-config><source><running/></get-config></rpc>]]>]]>')\n"
        "        buf = b''\n"
        "        while buf.count(b']]>]]>') < 1: buf += await r.read(65536)\n"
        "        sys.stdout.write(buf.decode())\n"
        "asyncio.run(main())\n"
    )
    from vnet.tools import processes

    done = processes.run(
        agent.namespace, [os.environ.get("PYTHON", _python()), "-c", script], timeout=20
    )
    assert "<error-tag>malformed-message</error-tag>" in done.stdout, done.stdout + done.stderr
    assert "<error-type>rpc</error-type>" in done.stdout


def _python() -> str:
    import sys

    return sys.executable


def test_wrong_password_is_rejected(agent: AgentUnderTest) -> None:
    with pytest.raises(AuthenticationError):
        connect(agent, password="wrong")


def test_lock_contention_between_sessions(agent: AgentUnderTest, m: manager.Manager) -> None:
    with connect(agent) as other:
        m.lock("running")
        try:
            with pytest.raises(RPCError) as info:
                other.lock("running")
            assert info.value.tag == "lock-denied"
            with pytest.raises(RPCError) as info:
                other.edit_config(target="running", config=vr_xml("r1"))
            assert info.value.tag == "in-use"
        finally:
            m.unlock("running")
        other.edit_config(target="running", config=vr_xml("r1"))
    assert routers(m) == ["r1"]


def test_lock_is_released_when_its_session_is_killed(
    agent: AgentUnderTest, m: manager.Manager
) -> None:
    other = connect(agent)
    other.lock("running")
    with pytest.raises(RPCError) as held:
        m.lock("running")
    assert held.value.tag == "lock-denied"
    m.kill_session(other.session_id)
    m.lock("running")  # the killed session's lock went with it
    m.unlock("running")


def test_candidate_commit_and_discard(agent: AgentUnderTest, m: manager.Manager) -> None:
    m.edit_config(target="candidate", config=vr_xml("r1"))
    assert vr_namespaces(agent) == [], "the candidate must not touch the kernel"
    assert routers(m) == []
    m.discard_changes()
    assert vr_namespaces(agent) == []
    m.edit_config(target="candidate", config=vr_xml("r1"))
    m.validate(source="candidate")
    m.commit()
    assert routers(m) == ["r1"] and vr_namespaces(agent) == [agent.node_ns("r1")]


def test_test_only_validates_without_applying(agent: AgentUnderTest, m: manager.Manager) -> None:
    m.edit_config(target="running", config=vr_xml("r1"), test_option="test-only")
    assert routers(m) == [] and vr_namespaces(agent) == []


def test_notifications_reach_a_subscribed_session(
    agent: AgentUnderTest, m: manager.Manager
) -> None:
    with connect(agent) as listener:
        listener.create_subscription()
        m.edit_config(target="running", config=vr_xml("r1"))
        m.edit_config(target="running", config=vr_xml("r1", op="delete"))
        seen = []
        for _ in range(2):
            n = listener.take_notification(timeout=5)
            assert n is not None, f"only {seen} arrived"
            seen.append(n.notification_xml)
    assert "<operation>create</operation>" in seen[0] and "<result>success</result>" in seen[0]
    assert "<operation>delete</operation>" in seen[1]


def test_subtree_filter_selects_one_router(agent: AgentUnderTest, m: manager.Manager) -> None:
    m.edit_config(target="running", config=vr_xml("r1"))
    m.edit_config(target="running", config=vr_xml("r2", network="n2", ipv4="10.2.0.1/24"))
    data = m.get_config(
        "running",
        filter=(
            "subtree",
            f'<routers xmlns="{NS}"><router><name>r2</name><interface/></router></routers>',
        ),
    ).data
    names = [n.text for n in data.iterfind(f".//{{{NS}}}router/{{{NS}}}name")]
    assert names == ["r2"]
    assert data.find(f".//{{{NS}}}admin-state") is None  # not selected
    assert data.findtext(f".//{{{NS}}}interface/{{{NS}}}ipv4") == "10.2.0.1/24"


def test_get_schema_returns_the_module(m: manager.Manager) -> None:
    text = m.get_schema("vnet-router").data
    assert "module vnet-router" in text


def test_restart_keeps_configuration_and_reconciles(
    agent: AgentUnderTest, m: manager.Manager
) -> None:
    m.edit_config(target="running", config=vr_xml("r1"))
    m.close_session()
    os.kill(agent.proc.pid, signal.SIGKILL)
    agent.proc.wait(5)
    nsfs.remove(agent.node_ns("r1"))  # the kernel lost it while the agent was down
    agent.proc = start_agent_process(agent, "netconf")
    with connect(agent) as again:
        assert routers(again) == ["r1"]
    assert vr_namespaces(agent) == [agent.node_ns("r1")]


def test_kill_9_mid_commit_then_restart_agrees(
    agent: AgentUnderTest, tmp_path: Path, m: manager.Manager
) -> None:
    """The agent holds at the third kernel step of a commit; kill -9 there."""
    m.edit_config(target="running", config=vr_xml("r1"))
    m.close_session()
    os.kill(agent.proc.pid, signal.SIGTERM)
    agent.proc.wait(10)
    os.environ["VNET_TEST_HANG_AT_STEP"] = "2"
    try:
        agent.proc = start_agent_process(agent, "netconf")
    finally:
        del os.environ["VNET_TEST_HANG_AT_STEP"]
    # the hook applies to the first apply after start: the startup reconcile has none to do,
    # so it is the commit below that holds
    session = connect(agent)
    session.async_mode = True
    session.edit_config(target="running", config=vr_xml("r2", network="n2", ipv4="10.2.0.1/24"))
    log = agent.state_dir / "agent.log"
    try:
        wait_until(lambda: "holding at step 2" in log.read_text(), 10, "the commit to hold", 0.05)
    except WaitTimeout:
        pytest.fail(log.read_text()[-2000:])
    os.kill(agent.proc.pid, signal.SIGKILL)
    agent.proc.wait(5)
    agent.proc = start_agent_process(agent, "netconf")
    with connect(agent) as again:
        assert routers(again) == ["r1"], "the interrupted commit must not be in the datastore"
    assert vr_namespaces(agent) == [agent.node_ns("r1")], "kernel and datastore disagree"


def test_get_with_more_routers_than_cached_sockets(
    agent: AgentUnderTest, m: manager.Manager
) -> None:
    """Regression: reading state of >128 VRs once closed a socket still in use."""
    many = "".join(
        f"<router><name>m{i}</name><interface><name>eth0</name><network>n1</network>"
        f"<ipv4>10.1.0.{i + 1}/24</ipv4></interface></router>"
        for i in range(140)
    )
    m.edit_config(
        target="running", config=f'<config><routers xmlns="{NS}">{many}</routers></config>'
    )
    full = m.get(filter=("subtree", f'<routers xmlns="{NS}"/>')).data
    states = [e.text for e in full.iterfind(f".//{{{NS}}}oper-state")]
    assert len(states) == 140 and set(states) == {"running"}
    one = m.get(
        filter=("subtree", f'<routers xmlns="{NS}"><router><name>m139</name></router></routers>')
    ).data
    # connected routes: 10.1.0.0/24 and the IPv6 link-local fe80::/64
    assert one.findtext(f".//{{{NS}}}route-count") == "2"
    hyp = m.get(filter=("subtree", f'<hypervisor xmlns="{NS}"/>')).data
    assert hyp.findtext(f".//{{{NS}}}active-routers") == "140"


def test_hello_offers_writable_running(m: manager.Manager) -> None:
    # edit-config on running works (every test here does it), so the hello says so
    assert "urn:ietf:params:netconf:capability:writable-running:1.0" in m.server_capabilities


NCM = "urn:ietf:params:xml:ns:yang:ietf-netconf-monitoring"


def test_netconf_state_has_schemas_sessions_and_statistics(m: manager.Manager) -> None:
    caps = list(m.server_capabilities)
    assert any(c.startswith(NCM) for c in caps)
    state = m.get(filter=("subtree", f'<netconf-state xmlns="{NCM}"/>')).data_ele
    ns = {"ncm": NCM}
    schemas = state.xpath("//ncm:schemas/ncm:schema/ncm:identifier/text()", namespaces=ns)
    assert "vnet-router" in schemas
    sessions = state.xpath("//ncm:sessions/ncm:session", namespaces=ns)
    assert sessions, "at least this session is live"
    mine = [s for s in sessions if s.findtext("ncm:session-id", namespaces=ns) == m.session_id]
    assert mine and mine[0].findtext("ncm:username", namespaces=ns) == "admin"
    assert int(mine[0].findtext("ncm:in-rpcs", namespaces=ns)) >= 1
    stats = state.xpath("//ncm:statistics", namespaces=ns)[0]
    assert int(stats.findtext("ncm:in-sessions", namespaces=ns)) >= 1
    assert stats.findtext("ncm:netconf-start-time", namespaces=ns)
    caps_served = state.xpath("//ncm:capabilities/ncm:capability/text()", namespaces=ns)
    assert set(caps_served) == set(caps)


def test_get_schema_returns_the_module_text(m: manager.Manager) -> None:
    for identifier in ("vnet-router", "ietf-netconf-monitoring"):
        reply = m.get_schema(identifier)
        assert f"module {identifier} {{" in reply.data
