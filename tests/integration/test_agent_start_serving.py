"""The front-ends answer while the agent reconciles the kernel at a start: the configuration
is read, a write gets a clear "reconciling, retry" error (issue 17, finding 9).

The reconcile is made long by the test hook that holds a transaction at its first step
(faulty_vnet.py); the reconcile has work to do because a VR's namespace was deleted
while the agent was stopped. Clients: ncclient and curl.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest
from ncclient.operations.rpc import RPCError

from vnet.lab.sandbox import HostSandbox, SandboxAgent
from vnet.tools import processes
from vnet.tools.wait import wait_until

from .agent_support import NETWORK_XML, AgentUnderTest, netconf_connect
from .conftest import require_tools, unique_lab

NS = "urn:vnet:yang:vnet-router"
VR = (
    f'<config><routers xmlns="{NS}"><router><name>r1</name>{{extra}}<interface><name>eth0</name>'
    "<network>n1</network><ipv4>10.1.0.254/24</ipv4></interface></router></routers></config>"
)
NETCONF, RESTCONF = AgentUnderTest.netconf_port, AgentUnderTest.restconf_port


@pytest.fixture
def agent() -> Iterator[SandboxAgent]:
    require_tools("curl")
    host = HostSandbox(scope=unique_lab())
    settings = {
        "ports": {"netconf": NETCONF, "restconf": RESTCONF},
        "restconf_plain_http": True,
        "drift_interval": 0,  # the restart, not the drift watcher, must find the deletion
    }
    sandbox = SandboxAgent(host, settings, password="s3cret")
    try:
        host.create()
        sandbox.start("netconf,restconf")
        yield sandbox
    finally:
        sandbox.stop(grace=2)
        problems = host.cleanup()
        assert not problems, f"agent test left things behind: {problems}"


def netconf(agent: SandboxAgent):  # type: ignore[no-untyped-def]
    return netconf_connect(agent.host.namespace, "127.0.0.1", NETCONF, agent.user, "s3cret")


def curl(agent: SandboxAgent, method: str, body: str | None = None) -> tuple[str, str]:
    """(status line, body) of a RESTCONF request on r1's admin-state."""
    url = f"http://127.0.0.1:{RESTCONF}/restconf/data/vnet-router:routers/router=r1"
    argv = ["curl", "-sS", "-i", "-X", method, "-u", f"{agent.user}:s3cret", "--max-time", "20"]
    if body is not None:
        argv += ["-H", "Content-Type: application/yang-data+json", "--data-binary", body]
    query = "?content=config" if method == "GET" else ""  # config only: no kernel read
    done = processes.run(agent.host.namespace, [*argv, url + query], timeout=30)
    head, _, rest = done.stdout.replace("\r\n", "\n").partition("\n\n")
    return head.splitlines()[0] if head else done.stderr, rest


def start_holding(agent: SandboxAgent) -> subprocess.Popen[bytes]:
    """`vnet agent run` whose start-up reconcile holds at its first kernel step."""
    argv = [sys.executable, "-m", "vnet", "agent", "run", "--config"]
    argv += [str(agent.state_dir / "agent.yaml"), "--frontends", "netconf,restconf"]
    os.environ["VNET_TEST_HANG_AT_STEP"] = "0"
    try:
        proc = agent.host.spawn(argv, agent.log)
    finally:
        del os.environ["VNET_TEST_HANG_AT_STEP"]
    agent.proc = proc
    log = agent.log

    def holding_and_listening() -> bool:
        text = log.read_text(errors="replace")
        return "holding at step 0" in text and "restconf listening" in text.split("agent run")[-1]

    wait_until(holding_and_listening, 60, "the front-ends during the reconcile", interval=0.1)
    return proc


def test_reads_are_served_and_writes_refused_during_the_start_up_reconcile(agent) -> None:  # type: ignore[no-untyped-def]
    with netconf(agent) as m:
        m.edit_config(target="running", config=NETWORK_XML)
        m.edit_config(target="running", config=VR.format(extra=""))
    agent.stop(grace=5)
    subprocess.run(["ip", "netns", "del", agent.host.prefix + "r1"], check=True)
    agent.log.write_text("agent run\n")
    start_holding(agent)
    assert agent.config.ready() is None  # still reconciling

    with netconf(agent) as m:
        config = m.get_config(source="running").data_xml
        assert "<name>r1</name>" in config
        with pytest.raises(RPCError) as err:
            m.edit_config(
                target="running", config=VR.format(extra="<admin-state>down</admin-state>")
            )
        assert err.value.tag == "in-use"
        assert "reconciling" in err.value.message and "retry" in err.value.message
    status, body = curl(agent, "GET")
    assert " 200" in status and '"name":"r1"' in body.replace(" ", ""), (status, body)
    status, body = curl(
        agent, "PATCH", '{"vnet-router:router":[{"name":"r1","admin-state":"down"}]}'
    )
    assert " 409" in status and "reconciling" in body, (status, body)

    agent.stop(grace=2)  # the held process ends by SIGKILL
    agent.start("netconf,restconf")  # this time the reconcile runs through and recreates r1
    with netconf(agent) as m:
        m.edit_config(target="running", config=VR.format(extra="<admin-state>down</admin-state>"))
    assert agent.frontends() == ["netconf", "restconf"]  # the ready file, after the reconcile
