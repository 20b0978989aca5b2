"""The agent's ready file is a typed contract (AgentReady): it says which front-ends
serve, and whoever started the agent reads that instead of the agent's log."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from vnet.lab.sandbox import HostSandbox, SandboxAgent
from vnet.model.agent_config import AgentReady

from .agent_support import AgentUnderTest
from .conftest import unique_lab


@pytest.fixture
def agent() -> Iterator[SandboxAgent]:
    host = HostSandbox(scope=unique_lab())
    ports = {"netconf": AgentUnderTest.netconf_port, "snmp": 8161}
    sandbox = SandboxAgent(host, {"ports": ports}, password="s3cret")
    try:
        host.create()
        yield sandbox
    finally:
        sandbox.stop()
        problems = host.cleanup()
        assert not problems, f"agent test left things behind: {problems}"


def test_the_ready_file_names_the_front_ends_served_and_goes_with_the_agent(
    agent: SandboxAgent,
) -> None:
    agent.start("netconf,snmp")
    assert agent.proc is not None
    ready = agent.config.ready()
    assert ready == AgentReady(
        pid=agent.proc.pid,
        address="127.0.0.1",
        ports=agent.config.ports,
        frontends=["netconf", "snmp"],
    )
    assert agent.frontends() == ["netconf", "snmp"]
    agent.stop()
    assert agent.config.ready() is None and not agent.config.ready_path.exists()
