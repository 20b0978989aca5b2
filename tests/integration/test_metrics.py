"""The agent's /metrics on a real agent, scraped with curl and read with Prometheus's text
parser: its values agree with what RESTCONF says of the same VRs, a commit through RESTCONF
and one through NETCONF show in the commit histogram by protocol, a NACM-less scrape without
credentials is refused as any RESTCONF request is."""

from __future__ import annotations

import json

from ncclient import manager

from tests.metrics_support import Samples, parse, value

from .agent_support import AgentUnderTest
from .test_restconf import JSON_T, agent, curl, router_url

ROUTERS = [
    {"name": "m1", "interface": [{"name": "eth0", "network": "n1", "ipv4": "10.1.0.1/24"}]},
    {
        "name": "m2",
        "admin-state": "down",
        "interface": [
            {"name": "eth0", "network": "n1", "ipv4": "10.1.0.2/24"},
            {"name": "eth1", "network": "n2", "ipv4": "10.2.0.2/24"},
        ],
    },
]
COMMITS = "vnet_agent_commit_duration_seconds_count"
__all__ = ["agent"]  # the RESTCONF tests' agent, with their networks


def scrape(agent: AgentUnderTest, accept: str | None = None) -> Samples:
    r = curl(agent, "GET", "/metrics", accept=accept)
    assert r.status == 200, r
    return parse(r.body)


def test_a_scrape_without_credentials_is_refused(agent: AgentUnderTest) -> None:
    for user in ("", "admin:wrong"):
        r = curl(agent, "GET", "/metrics", user=user)
        assert r.status == 401, r
        assert r.headers["www-authenticate"].startswith("Basic ")
        assert r.error()["error-tag"] == "access-denied"
    om = curl(agent, "GET", "/metrics", accept="application/openmetrics-text; version=1.0.0")
    assert om.status == 200 and om.headers["content-type"].startswith(
        "application/openmetrics-text"
    ), om
    assert om.body.rstrip().endswith("# EOF")
    r = curl(agent, "GET", "/metrics?name=x")
    assert r.status == 400 and "'name' is unknown" in r.error()["error-message"], r


def test_scrape_agrees_with_restconf(agent: AgentUnderTest) -> None:
    before = scrape(agent)
    for entry in ROUTERS:  # two commits through RESTCONF
        body = json.dumps({"vnet-router:router": [entry]})
        r = curl(agent, "POST", "/restconf/data/vnet-router:routers", body, JSON_T)
        assert r.status == 201, r
    try:
        _agrees(agent, before)
    finally:
        for name in ("m1", "m2"):
            assert curl(agent, "DELETE", router_url(name)).status == 204


def _agrees(agent: AgentUnderTest, before: Samples) -> None:
    with agent.netconf() as m:  # a commit through NETCONF, labelled netconf
        _netconf_commit(m)
    first = _state(agent)
    samples = scrape(agent)
    last = _state(agent)
    states = [r["oper-state"] for r in first]
    assert states == ["running", "stopped"], first
    for state in ("running", "stopped", "failed"):
        assert value(samples, "vnet_agent_routers", state=state) == states.count(state)
    for r_first, r_last in zip(first, last, strict=True):
        for i_first, i_last in zip(r_first["interface"], r_last["interface"], strict=True):
            labels = {"router": r_first["name"], "interface": i_first["name"]}
            for leaf, name, direction in (
                ("in-octets", "vnet_agent_interface_bytes_total", "in"),
                ("out-packets", "vnet_agent_interface_packets_total", "out"),
            ):
                low, high = int(i_first["statistics"][leaf]), int(i_last["statistics"][leaf])
                key = (name, frozenset({**labels, "direction": direction}.items()))
                assert key in samples, (key, sorted(samples))
                got = samples[key]
                assert low <= got <= high, (labels, leaf, low, got, high)
    for protocol, commits in (("restconf", 2), ("netconf", 1)):
        grown = value(samples, COMMITS, protocol=protocol, result="success") - value(
            before, COMMITS, protocol=protocol, result="success"
        )
        assert grown == commits, (protocol, grown)


def _state(agent: AgentUnderTest) -> list[dict]:  # type: ignore[type-arg]
    r = curl(agent, "GET", "/restconf/data/vnet-router:routers")
    assert r.status == 200, r
    return sorted(r.json()["vnet-router:routers"]["router"], key=lambda r: r["name"])


def _netconf_commit(m: manager.Manager) -> None:
    config = (
        '<config><routers xmlns="urn:vnet:yang:vnet-router"><router><name>m1</name>'
        "<route><destination>10.9.0.0/16</destination><next-hop>10.1.0.254</next-hop></route>"
        "</router></routers></config>"
    )
    m.edit_config(target="running", config=config)
