"""The agent's event metrics (vnet.agent.telemetry): NACM denials by kind, failed and
throttled logins by protocol (never by user or source), commit durations by protocol and
outcome. The state metrics are checked against RESTCONF on a real agent
(tests/integration/test_metrics.py)."""

from __future__ import annotations

import asyncio
import copy
from pathlib import Path

import httpx
import pytest
from prometheus_client import generate_latest

from tests.metrics_support import Samples, parse, value
from tests.nokernel_support import NoKernelDatastore
from tests.unit.test_nacm import VRS, _config, _tree
from vnet.agent.logins import LoginThrottle
from vnet.agent.nacm import Nacm
from vnet.agent.restconf.app import create_app
from vnet.agent.telemetry import REGISTRY, commit_timer, protocol_of
from vnet.model.agent_config import AgentConfig
from vnet.model.yang.errors import ErrorTag, RpcError

KINDS = ("data-write", "operation", "notification")


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def denials() -> dict[str, float]:
    return {kind: sample("vnet_agent_nacm_denials_total", kind=kind) for kind in KINDS}


def test_nacm_denials_are_counted_by_kind(tmp_path: Path) -> None:
    nacm = Nacm(_config(tmp_path))
    old = _tree()
    new = copy.deepcopy(old)
    new[VRS]["router"][0]["admin-state"] = "down"
    before = denials()
    nacm.authorise_write("root", old, new)  # permitted: not counted
    with pytest.raises(RpcError):
        nacm.authorise_write("carol", old, new)  # write-default deny
    assert not nacm.may_exec("carol", old, "ietf-netconf", "kill-session")
    assert nacm.may_exec("carol", old, "ietf-netconf", "get-config")
    assert not nacm.may_read_router("alice", old, "rb")  # another tenant's VR
    assert nacm.may_read_router("alice", old, "ra")
    after = denials()
    assert {kind: after[kind] - before[kind] for kind in KINDS} == dict.fromkeys(KINDS, 1)


def test_logins_are_counted_per_protocol_without_user_or_source() -> None:
    now = [0.0]
    throttle = LoginThrottle("RESTCONF", free=1, clock=lambda: now[0])
    failures = sample("vnet_agent_login_failures_total", protocol="restconf")
    throttled = sample("vnet_agent_login_throttled_total", protocol="restconf")
    throttle.failed("192.0.2.9", "mallory")
    throttle.failed("192.0.2.9", "mallory")  # past the free one: the next waits 1 s
    assert not throttle.check("192.0.2.9", "mallory", lambda: True)
    assert sample("vnet_agent_login_failures_total", protocol="restconf") == failures + 2
    assert sample("vnet_agent_login_throttled_total", protocol="restconf") == throttled + 1
    body = generate_latest(REGISTRY).decode()
    assert "mallory" not in body and "192.0.2.9" not in body


def test_commits_are_timed_by_protocol_and_outcome() -> None:
    assert [protocol_of(s) for s in ("17", "restconf", "snmp", "", "other")] == [
        "netconf",
        "restconf",
        "snmp",
        "agent",
        "agent",
    ]
    count = "vnet_agent_commit_duration_seconds_count"
    ok = sample(count, protocol="snmp", result="success")
    failed = sample(count, protocol="netconf", result="failure")
    with commit_timer("snmp"):
        pass
    with pytest.raises(RpcError), commit_timer("3"):
        raise RpcError(ErrorTag.OPERATION_FAILED, "the kernel refused")
    assert sample(count, protocol="snmp", result="success") == ok + 1
    assert sample(count, protocol="netconf", result="failure") == failed + 1


def test_a_scrape_shows_what_the_user_may_read(tmp_path: Path) -> None:
    """/metrics is a RESTCONF request: 401 without credentials, and a tenant's user counts
    its own VRs only (NACM), as its GET of the datastore shows them."""
    config = AgentConfig.model_validate(
        {
            "state_dir": tmp_path,
            "host": "h1",
            "users": [
                {"name": "admin", "password": "s3cret"},
                {"name": "alice", "password": "pw", "tenant": "A"},
            ],
        }
    )

    async def scrapes() -> tuple[httpx.Response, Samples, Samples, int]:
        ds = NoKernelDatastore(config, kernel_pause=0.002)
        ds.running = _tree()
        transport = httpx.ASGITransport(app=create_app(ds, config))
        async with httpx.AsyncClient(transport=transport, base_url="https://agent") as c:
            refused = await c.get("/metrics")
            admin = parse((await c.get("/metrics", auth=("admin", "s3cret"))).text)
            alice = parse((await c.get("/metrics", auth=("alice", "pw"))).text)
            got = await c.get("/restconf/data/vnet-router:routers", auth=("alice", "pw"))
        ds._kx.shutdown(wait=False)
        return refused, admin, alice, len(got.json()["vnet-router:routers"]["router"])

    refused, admin, alice, alice_reads = asyncio.run(scrapes())
    assert refused.status_code == 401 and refused.headers["www-authenticate"].startswith("Basic")
    assert value(admin, "vnet_agent_routers", state="running") == 2
    assert value(alice, "vnet_agent_routers", state="running") == alice_reads == 1
