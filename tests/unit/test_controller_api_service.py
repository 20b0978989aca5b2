"""The API over the real Service (vnet.controller.service.core) on a database holding an
inventory, without agents: what the caller may see, in JSON and XML, and every refusal that
comes before any agent is asked (precise status, code and field; nothing written). Run on
SQLite here and on PostgreSQL by tests/integration/test_controller_api_postgres.py; requests
that reach the agents are tested on a lab (tests/integration/test_controller_api_process.py).
"""

from __future__ import annotations

import json
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from lxml import etree
from prometheus_client import generate_latest
from sqlalchemy import func, select

from tests.controller_api_support import Tokens
from tests.metrics_support import label_values, parse, value
from vnet.controller.agents.netconf import NetconfSouthbound
from vnet.controller.api import make_app
from vnet.controller.api.auth import create_token
from vnet.controller.api.metrics import ServiceCollector
from vnet.controller.db import (
    Connection,
    ConnectionEvent,
    Reservation,
    session_factory,
)
from vnet.controller.server import prepare_database
from vnet.controller.service.core import Service
from vnet.controller.service.recovery import Settled
from vnet.model import build_topology
from vnet.model.controller_api import HostView
from vnet.model.controller_config import ControllerConfig
from vnet.tools.metrics import Combined

V1 = "/api/v1"
XML = "application/xml"
INVENTORY = {
    "name": "apisvc",
    "hosts": [{"name": "h1"}, {"name": "h2"}, {"name": "h3"}],
    "links": [
        {"a": "h1", "b": "h2", "rate": "1gbit"},
        {"a": "h2", "b": "h3", "rate": "1gbit"},
        {"a": "h1", "b": "h3", "rate": "100mbit"},
    ],
    "management": {"user": "admin"},
    "tenants": [{"name": "acme", "routing": "auto"}, {"name": "beta", "routing": "auto"}],
    "networks": [
        {
            "name": "lan1",
            "tenant": "acme",
            "vni": 601,
            "ipv4": "10.61.1.0/24",
            "ipv6": "fd00:61:1::/64",
        },
        {
            "name": "c13",
            "tenant": "acme",
            "vni": 605,
            "ipv4": "10.61.5.0/24",
            "ipv6": "fd00:61:5::/64",
        },
        {
            "name": "lan3",
            "tenant": "acme",
            "vni": 604,
            "ipv4": "10.61.4.0/24",
            "ipv6": "fd00:61:4::/64",
        },
        {
            "name": "blan",
            "tenant": "beta",
            "vni": 611,
            "ipv4": "10.62.1.0/24",
            "ipv6": "fd00:62:1::/64",
        },
    ],
    "routers": [
        {
            "name": "r1",
            "host": "h1",
            "interfaces": [
                {"network": "lan1", "ipv4": "10.61.1.254/24", "ipv6": "fd00:61:1::fe/64"},
                {"network": "c13", "ipv4": "10.61.5.1/24", "ipv6": "fd00:61:5::1/64"},
            ],
        },
        {
            "name": "r3",
            "host": "h3",
            "interfaces": [
                {"network": "c13", "ipv4": "10.61.5.3/24", "ipv6": "fd00:61:5::3/64"},
                {"network": "lan3", "ipv4": "10.61.4.254/24", "ipv6": "fd00:61:4::fe/64"},
            ],
        },
        {
            "name": "rb",
            "host": "h2",
            "interfaces": [
                {"network": "blan", "ipv4": "10.62.1.254/24", "ipv6": "fd00:62:1::fe/64"}
            ],
        },
    ],
    "endhosts": [
        {
            "name": "pc1",
            "host": "h1",
            "network": "lan1",
            "ipv4": "10.61.1.1/24",
            "ipv6": "fd00:61:1::1/64",
        },
        {
            "name": "pc3",
            "host": "h3",
            "network": "lan3",
            "ipv4": "10.61.4.3/24",
            "ipv6": "fd00:61:4::3/64",
        },
        {
            "name": "qb",
            "host": "h2",
            "network": "blan",
            "ipv4": "10.62.1.1/24",
            "ipv6": "fd00:62:1::1/64",
        },
    ],
}
BETA_OBJECTS = {"blan", "rb", "qb", "beta"}


@pytest.fixture
def url(tmp_path: Path, migrated: Callable[[Path], str]) -> str:
    """A copy of the session's migrated database (the controller's start finds it at head)."""
    return migrated(tmp_path / "db")


@pytest.fixture
def api(url: str, tmp_path: Path) -> Iterator[tuple[TestClient, Tokens, Any]]:
    """The app over a real Service whose database holds INVENTORY; the controller has no
    agent (a request that reaches realisation fails there: 409 no-agent)."""
    config = ControllerConfig(state_dir=tmp_path / "state", database=url)
    engine = prepare_database(config, build_topology(INVENTORY))
    sessions = session_factory(engine)
    with sessions.begin() as session:
        tokens = Tokens(
            provider=config.provider_token_path.read_text().strip(),
            acme=create_token(session, "tenant", "acme").token,
            beta=create_token(session, "tenant", "beta").token,
        )
    service = Service(config, engine, NetconfSouthbound({}))
    with TestClient(make_app(service, sessions, config), raise_server_exceptions=False) as client:
        yield client, tokens, engine
    engine.dispose()


def bearer(token: str, **more: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", **more}


def names_in(value: Any) -> set[str]:
    """Every "name"/"tenant" value anywhere in a JSON answer."""
    if isinstance(value, dict):
        own = {str(v) for k, v in value.items() if k in ("name", "tenant") and v}
        return own.union(*(names_in(v) for v in value.values()))
    if isinstance(value, list):
        return set().union(*(names_in(v) for v in value))
    return set()


def test_a_tenant_sees_only_its_own_objects(api: tuple[TestClient, Tokens, Any]) -> None:
    client, tokens, _ = api
    everything = client.get(f"{V1}/topology", headers=bearer(tokens.provider)).json()
    assert names_in(everything) >= BETA_OBJECTS
    acme = client.get(f"{V1}/topology", headers=bearer(tokens.acme)).json()
    assert not BETA_OBJECTS & names_in(acme)
    assert {h["name"] for h in acme["hosts"]} == {"h1", "h2", "h3"}  # hosts and links: all
    assert len(acme["links"]) == 3
    for route in ("/networks", "/routers", "/endhosts", "/tenants"):
        assert not BETA_OBJECTS & names_in(
            client.get(V1 + route, headers=bearer(tokens.acme)).json()
        )
    xml = client.get(f"{V1}/topology", headers=bearer(tokens.acme, Accept=XML))
    root = etree.fromstring(xml.content)
    assert root.tag == "TopologyView"
    assert {e.text for e in root.iter("name")} & BETA_OBJECTS == set()
    directions = root.findall("links/directions")
    assert len(directions) == 6 and all(d.findtext("free_bps") for d in directions)


def held(engine: Any) -> tuple[int, int]:
    with session_factory(engine)() as session:
        return (
            session.scalar(select(func.count()).select_from(Connection)) or 0,
            session.scalar(select(func.count()).select_from(Reservation)) or 0,
        )


REQUEST = {"name": "c1", "a": "pc1", "b": "pc3", "bandwidth": "10mbit"}


@pytest.mark.parametrize(
    ("tenant", "change", "status", "code", "field"),
    [
        ("acme", {"a": "nobody"}, 404, None, "a"),
        ("acme", {"b": "qb"}, 404, None, "b"),  # beta's end host does not exist for acme
        ("acme", {"bandwidth": "100gbit"}, 400, "bad-request", "bandwidth"),
        ("acme", {"path": ["h3", "h1"]}, 400, "bad-request", "path"),
        ("acme", {"path": ["h1", "h9"]}, None, None, "path"),
        ("nobody", {}, 404, "unknown-tenant", None),
    ],
)
def test_refusals_before_any_agent_change_nothing(
    api: tuple[TestClient, Tokens, Any],
    tenant: str,
    change: dict[str, Any],
    status: int | None,
    code: str | None,
    field: str | None,
) -> None:
    client, tokens, engine = api
    r = client.post(
        f"{V1}/tenants/{tenant}/connections",
        json={**REQUEST, **change},
        headers=bearer(tokens.provider),
    )
    body = r.json()
    assert r.status_code in ((status,) if status else (400, 404)), body
    assert body["reason"]
    assert code is None or body["code"] == code
    assert field is None or body["field"] == field
    assert "Server-Timing" in r.headers
    assert held(engine) == (0, 0)


def test_no_capacity_names_the_link_direction_in_json_and_xml(
    api: tuple[TestClient, Tokens, Any],
) -> None:
    client, tokens, engine = api
    ask = {**REQUEST, "bandwidth": "95mbit", "path": ["h1", "h3"]}
    r = client.post(f"{V1}/tenants/acme/connections", json=ask, headers=bearer(tokens.acme))
    assert r.status_code == 409, r.text
    body = r.json()
    assert body["code"] == "no-capacity"
    assert [s["direction"] for s in body["shortfalls"]] == ["h1 -> h3"]
    xml = client.post(
        f"{V1}/tenants/acme/connections", json=ask, headers=bearer(tokens.acme, Accept=XML)
    )
    root = etree.fromstring(xml.content)
    assert root.findtext("shortfalls/direction") == "h1 -> h3"
    assert int(root.findtext("shortfalls/missing_bps") or 0) == body["shortfalls"][0]["missing_bps"]
    assert held(engine) == (0, 0)


def test_other_tenants_and_unknown_connections(api: tuple[TestClient, Tokens, Any]) -> None:
    client, tokens, engine = api
    r = client.post(f"{V1}/tenants/acme/connections", json=REQUEST, headers=bearer(tokens.beta))
    assert (r.status_code, r.json()["code"]) == (403, "forbidden")
    for method in ("GET", "DELETE"):
        r = client.request(method, f"{V1}/tenants/acme/connections/c1", headers=bearer(tokens.acme))
        assert r.status_code == 404 and r.json()["reason"]
    r = client.patch(
        f"{V1}/tenants/acme/connections/c1",
        json={"bandwidth": "1mbit"},
        headers=bearer(tokens.acme),
    )
    assert r.status_code == 404
    r = client.post(f"{V1}/tenants", json={"name": "acme"}, headers=bearer(tokens.provider))
    assert (r.status_code, r.json()["code"]) == (409, "conflict")
    r = client.post(f"{V1}/tenants", json={"name": "gamma"}, headers=bearer(tokens.provider))
    assert r.status_code == 201
    r = client.post(
        f"{V1}/tokens", json={"role": "tenant", "tenant": "gamma"}, headers=bearer(tokens.provider)
    )
    assert r.status_code == 201
    gamma = r.json()["token"]
    assert client.get(f"{V1}/whoami", headers=bearer(gamma)).json()["tenant"] == "gamma"
    assert client.get(f"{V1}/connections", headers=bearer(gamma)).json() == []
    assert held(engine) == (0, 0)


def test_events_carry_the_links_the_caller_may_see(api: tuple[TestClient, Tokens, Any]) -> None:
    client, tokens, _ = api
    r = client.get(f"{V1}/events?limit=1", headers=bearer(tokens.acme))
    assert r.headers["content-type"].startswith("text/event-stream")
    kind, data = r.text.strip().split("\n")
    assert kind == "event: links"
    links = json.loads(data.removeprefix("data: "))
    assert sorted(link["name"] for link in links) == ["h1-h2", "h1-h3", "h2-h3"]
    assert all(len(link["directions"]) == 2 for link in links)


def _set_state(engine: Any, state: str, created: bool) -> None:
    """The key's connection (the only one) put in `state`, with or without a `created` event
    in its history (whether it was ever established)."""
    with session_factory(engine).begin() as session:
        conn = session.scalars(select(Connection)).one()
        conn.state = state
        events = select(ConnectionEvent).where(ConnectionEvent.connection_id == conn.id)
        for event in session.scalars(events):
            if event.kind == "created":
                session.delete(event)
        if created:
            session.add(ConnectionEvent(connection_id=conn.id, kind="created", detail=""))


@pytest.mark.parametrize(
    ("state", "created", "status", "code"),
    [
        ("established", True, 201, None),
        ("requested", False, 409, "request-in-flight"),
        ("modifying", True, 409, "request-in-flight"),
        ("released", True, 410, "connection-released"),
    ],
)
def test_a_retried_key_answers_what_its_connection_is_now(
    api: tuple[TestClient, Tokens, Any], state: str, created: bool, status: int, code: str | None
) -> None:
    """Never "established" for a connection that is not: each state of the key's connection
    has its own answer, and the retry makes nothing new."""
    client, tokens, engine = api
    headers = bearer(tokens.acme, **{"Idempotency-Key": "order-7"})
    first = client.post(f"{V1}/tenants/acme/connections", json=REQUEST, headers=headers)
    assert first.status_code == 409, first.text  # no agent: the attempt failed, nothing made
    _set_state(engine, state, created)
    again = client.post(f"{V1}/tenants/acme/connections", json=REQUEST, headers=headers)
    body = again.json()
    assert again.status_code == status, body
    if code is None:
        assert body["status"] == body["connection"]["status"] == "established"
    else:
        assert (body["code"], body["field"]) == (code, "Idempotency-Key")
        assert "'c1'" in body["reason"] and state in body["reason"]
    assert held(engine)[0] == 1  # no second connection


def test_a_key_whose_attempt_failed_is_tried_afresh(api: tuple[TestClient, Tokens, Any]) -> None:
    """A first attempt that failed made nothing: the retry is a new admission (here it fails
    again, no agent there), never the failed attempt's row as "established"."""
    client, tokens, engine = api
    headers = bearer(tokens.acme, **{"Idempotency-Key": "order-8"})
    for attempt in (1, 2):
        r = client.post(f"{V1}/tenants/acme/connections", json=REQUEST, headers=headers)
        assert (r.status_code, r.json()["code"]) == (409, "no-agent"), r.text
        assert held(engine)[0] == attempt  # each attempt's history kept
    with session_factory(engine)() as session:
        keys = list(session.scalars(select(Connection.idempotency_key).order_by(Connection.id)))
    assert keys == [None, "order-8"]  # the key names the latest attempt


# -- /metrics ----------------------------------------------------------------------------------
CONNECTIONS_ROUTE = "/api/v1/tenants/{tenant}/connections"


def test_metrics_agree_with_the_api(api: tuple[TestClient, Tokens, Any]) -> None:
    """Scraped with Prometheus's parser: per link direction what /links says, requests by
    route template (never the path sent), the Server-Timing phases, rejections by reason."""
    client, tokens, _ = api
    assert client.get("/metrics").status_code == 401
    refused = client.get("/metrics", headers=bearer(tokens.acme))
    assert (refused.status_code, refused.json()["code"]) == (403, "forbidden")
    ask = {**REQUEST, "bandwidth": "95mbit", "path": ["h1", "h3"]}
    for _ in range(2):
        r = client.post(f"{V1}/tenants/acme/connections", json=ask, headers=bearer(tokens.acme))
        assert r.status_code == 409, r.text
    assert client.get(f"{V1}/no/such/{'x' * 40}").status_code == 404  # unmatched route
    links = client.get(f"{V1}/links", headers=bearer(tokens.provider)).json()
    r = client.get("/metrics", headers=bearer(tokens.provider))
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain"), r.text
    samples = parse(r.text)
    for link in links:
        for d in link["directions"]:
            src, dst = d["direction"].split(" -> ")
            where = {"link": link["name"], "source": src, "target": dst}
            for metric, expected in (
                ("reserved", d["reserved_bps"]),
                ("free", d["free_bps"]),
                ("capacity", link["capacity_bps"]),
            ):
                assert value(samples, f"vnet_controller_link_{metric}_bps", **where) == expected
    rejected = {"operation": "create", "outcome": "rejected", "reason": "no-capacity"}
    assert value(samples, "vnet_controller_admissions_total", **rejected) == 2
    posts = {"route": CONNECTIONS_ROUTE, "method": "POST"}
    assert value(samples, "vnet_controller_requests_total", status="409", **posts) == 2
    for phase in ("db", "path", "devices", "api", "total"):
        count = "vnet_controller_request_duration_seconds_count"
        assert value(samples, count, phase=phase, **posts) == 2, phase
    scrapes = {"route": "/metrics", "method": "GET"}
    for status in ("401", "403"):
        assert value(samples, "vnet_controller_requests_total", status=status, **scrapes) == 1
    assert label_values(samples, "route") <= {
        CONNECTIONS_ROUTE,
        "/metrics",
        "/api/v1/links",
        "unmatched",
    }


def test_metrics_of_liveness_and_recovery() -> None:
    """An agent that did not answer is 0, one never asked is absent; what recovery settled
    and restored at start is counted by operation and outcome, and per host."""
    hosts = [
        HostView(name="h1", agent="a:830", reachable=True),
        HostView(name="h2", agent="b:830", reachable=False),
        HostView(name="h3", agent="c:830"),
    ]
    settled = [Settled("x-1", "create", "finished"), Settled("x-2", "create", "finished")]
    service = types.SimpleNamespace(recovered=settled, restored={"h1": ["r1", "r2"]})
    samples = parse(generate_latest(Combined(ServiceCollector([], hosts, service))).decode())
    assert value(samples, "vnet_controller_agent_up", host="h1") == 1
    assert value(samples, "vnet_controller_agent_up", host="h2") == 0
    assert label_values(samples, "host") == {"h1", "h2"}
    recovered = {"operation": "create", "outcome": "finished"}
    assert value(samples, "vnet_controller_recovered_requests", **recovered) == 2
    assert value(samples, "vnet_controller_restored_routers", host="h1") == 2
