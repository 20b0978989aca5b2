"""A VR's namespace deleted behind the agent's back is seen, reported and repaired
(issue 17, finding 2). The deletion is `ip netns del`, the client ncclient."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager

from lxml import etree
from ncclient import manager

from tests.metrics_support import Samples, parse, value
from vnet.lab.sandbox import HostSandbox, SandboxAgent
from vnet.substrate import nsfs
from vnet.tools import processes

from .agent_support import NETWORK_XML, AgentUnderTest, netconf_connect
from .conftest import unique_lab

NS = "urn:vnet:yang:vnet-router"
VR = (
    f'<config><routers xmlns="{NS}"><router><name>r1</name>{{extra}}<interface><name>eth0</name>'
    "<network>n1</network><ipv4>10.1.0.254/24</ipv4></interface></router></routers></config>"
)
ROUTER_FILTER = f'<routers xmlns="{NS}"><router><name>r1</name></router></routers>'


@contextmanager
def agent_with(policy: str) -> Iterator[tuple[SandboxAgent, manager.Manager]]:
    host = HostSandbox(scope=unique_lab())
    settings = {
        "ports": {"netconf": AgentUnderTest.netconf_port, "restconf": AgentUnderTest.restconf_port},
        "drift_interval": 0.5,
        "drift_policy": policy,
    }
    sandbox = SandboxAgent(host, settings, password="s3cret")
    try:
        host.create()
        sandbox.start("netconf,restconf")
        port = AgentUnderTest.netconf_port
        with netconf_connect(host.namespace, "127.0.0.1", port, sandbox.user, "s3cret") as m:
            m.edit_config(target="running", config=NETWORK_XML)
            m.edit_config(target="running", config=VR.format(extra=""))
            m.create_subscription()
            yield sandbox, m
    finally:
        problems = host.cleanup()
        assert not problems, f"agent test left things behind: {problems}"


def next_event(m: manager.Manager, timeout: float = 30) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        n = m.take_notification(block=True, timeout=1)
        if n is not None:
            return n.notification_xml
    raise AssertionError("no notification")


def scrape(sandbox: SandboxAgent) -> Samples:
    """The agent's /metrics, with curl inside its host's namespace."""
    url = f"https://127.0.0.1:{AgentUnderTest.restconf_port}/metrics"
    argv = ["curl", "-sSfk", "--max-time", "20", "-u", f"{sandbox.user}:s3cret", url]
    return parse(processes.run(sandbox.host.namespace, argv, timeout=30).stdout)


def router_state(m: manager.Manager) -> etree._Element:
    reply = m.get(filter=("subtree", ROUTER_FILTER))
    [router] = reply.data_ele.iter(f"{{{NS}}}router")
    return router


def field(router: etree._Element, name: str) -> str | None:
    el = router.find(f"{{{NS}}}{name}")
    return None if el is None else el.text


def test_a_deleted_namespace_is_reported_and_repaired(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with agent_with("repair") as (sandbox, m):
        ns = sandbox.host.prefix + "r1"
        assert field(router_state(m), "oper-state") == "running"
        subprocess.run(["ip", "netns", "del", ns], check=True)
        failed = next_event(m)
        assert "<result>failure</result>" in failed and "vanished" in failed, failed
        repaired = next_event(m)
        assert "<result>success</result>" in repaired and "repaired" in repaired, repaired
        assert value(scrape(sandbox), "vnet_agent_drift_repairs_total", result="success") == 1
        assert nsfs.exists(ns)
        router = router_state(m)
        assert field(router, "oper-state") == "running"
        assert router.find(f"{{{NS}}}interface/{{{NS}}}oper-status").text == "up"


def test_without_repair_it_shows_failed_without_counters_and_a_write_repairs(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with agent_with("report") as (sandbox, m):
        ns = sandbox.host.prefix + "r1"
        subprocess.run(["ip", "netns", "del", ns], check=True)
        failed = next_event(m)
        assert "<result>failure</result>" in failed, failed
        router = router_state(m)
        assert field(router, "oper-state") == "failed"
        itf = router.find(f"{{{NS}}}interface")
        assert itf.find(f"{{{NS}}}oper-status").text == "down"
        assert itf.find(f"{{{NS}}}statistics") is None  # no counters from a dead handle
        samples = scrape(sandbox)
        assert value(samples, "vnet_agent_routers", state="failed") == 1
        assert value(samples, "vnet_agent_routers", state="running") == 0
        assert not [k for k in samples if k[0].startswith("vnet_agent_interface_")]
        assert not nsfs.exists(ns)
        m.edit_config(target="running", config=VR.format(extra="<admin-state>down</admin-state>"))
        assert nsfs.exists(ns)
        assert field(router_state(m), "oper-state") == "stopped"
        m.edit_config(target="running", config=VR.format(extra="<admin-state>up</admin-state>"))
        assert field(router_state(m), "oper-state") == "running"
