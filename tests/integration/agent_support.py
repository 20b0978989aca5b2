"""A real `vnet agent run` inside a namespace of its own, for front-end tests
(built on vnet.lab.sandbox, which the benchmarks use too)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ncclient.transport.session
from ncclient import manager

from vnet.lab.sandbox import HostSandbox, SandboxAgent
from vnet.substrate import nsfs

from .conftest import unique_lab

ncclient.transport.session.TICK = 0.001  # or every RPC waits ~100 ms


def netconf_connect(
    namespace: str | None, address: str, port: int, user: str, password: str, timeout: float = 10
) -> manager.Manager:
    """The tests' one way to open a raw ncclient session: the independent client that
    protocol-level assertions are made with (its socket stays in `namespace`)."""
    with nsfs.entered(namespace):
        return manager.connect(
            host=address,
            port=port,
            username=user,
            password=password,
            hostkey_verify=False,
            allow_agent=False,
            look_for_keys=False,
            timeout=timeout,
        )


NETWORK_XML = """<config><virtual-networks xmlns="urn:vnet:yang:vnet-router"><network>
<name>n1</name><tenant>a</tenant><vni>10</vni><ipv4-prefix>10.1.0.0/24</ipv4-prefix>
<ipv6-prefix>fd00:1::/64</ipv6-prefix></network><network><name>n2</name><tenant>a</tenant>
<vni>11</vni><ipv4-prefix>10.2.0.0/24</ipv4-prefix></network></virtual-networks></config>"""


@dataclass
class AgentUnderTest:
    sandbox: SandboxAgent

    scope = property(lambda self: self.sandbox.host.scope)
    namespace = property(lambda self: self.sandbox.host.namespace)
    prefix = property(lambda self: self.sandbox.host.prefix)
    state_dir = property(lambda self: self.sandbox.state_dir)
    address = "127.0.0.1"
    netconf_port = 8830
    restconf_port = 8443
    user = "admin"
    password = "s3cret"

    @property
    def proc(self) -> subprocess.Popen[bytes]:
        assert self.sandbox.proc is not None
        return self.sandbox.proc

    @proc.setter
    def proc(self, value: subprocess.Popen[bytes]) -> None:
        self.sandbox.proc = value

    def node_ns(self, vr: str) -> str:
        return self.prefix + vr

    def netconf(self, password: str | None = None) -> manager.Manager:
        """A raw ncclient session to this agent."""
        return netconf_connect(
            self.namespace, self.address, self.netconf_port, self.user, password or self.password
        )


def start_agent_process(a: AgentUnderTest, frontends: str) -> subprocess.Popen[bytes]:
    a.sandbox.start(frontends)
    return a.proc


def stop_agent(a: AgentUnderTest) -> None:
    a.sandbox.stop(grace=5)


@contextmanager
def running_agent(
    tmp: Path, frontends: str = "netconf,restconf", snmp: dict[str, Any] | None = None
) -> Iterator[AgentUnderTest]:
    """`snmp`: the agent configuration's `snmp:` section (communities, users, targets)."""
    host = HostSandbox(scope=unique_lab())
    settings: dict[str, Any] = {
        "ports": {"netconf": AgentUnderTest.netconf_port, "restconf": AgentUnderTest.restconf_port}
    }
    if snmp is not None:
        settings["snmp"] = snmp
    agent = SandboxAgent(host, settings, user=AgentUnderTest.user, password=AgentUnderTest.password)
    try:
        host.create()
        agent.start(frontends)
        yield AgentUnderTest(agent)
    finally:
        problems = host.cleanup()
        assert not problems, f"agent test left things behind: {problems}"
