"""The controller's HTTP layer (issue 12, part 4): JSON and XML, tokens and roles, precise
error bodies, the idempotency header, Server-Timing, OpenAPI and the event stream. The service
behind it is the in-memory one of tests/controller_api_support.py; the real Service is tested
through the same API in test_controller_api_service.py."""

from __future__ import annotations

import re
import sys
import types
from datetime import UTC, datetime, timedelta

import pytest
from fastapi import FastAPI, Request
from fastapi.testclient import TestClient
from lxml import etree
from sqlalchemy import update
from sqlalchemy.orm import Session, sessionmaker

from tests.controller_api_support import FakeService, Tokens
from vnet.controller.api import codec, make_app
from vnet.controller.api.auth import digest
from vnet.controller.db.models import ApiToken
from vnet.model.controller_api import (
    ConnectionAnswer,
    ConnectionChange,
    ConnectionCounters,
    ErrorBody,
)

V1 = "/api/v1"
XML = "application/xml"
REQUEST = {"name": "c1", "a": "e1", "b": "e2", "bandwidth": "100mbit", "protocol": "udp"}


def bearer(token: str, **more: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", **more}


def error(response) -> ErrorBody:  # type: ignore[no-untyped-def]
    """The ErrorBody of an answer, JSON or XML (read back with the API's own codec)."""
    if response.headers["content-type"].startswith(XML):
        return ErrorBody.model_validate(codec.parse_body(response.content, "xml", ErrorBody))
    return ErrorBody.model_validate_json(response.content)


# -- JSON and XML ------------------------------------------------------------------------------
def test_json_request_is_established_with_timing(client: TestClient, tokens: Tokens) -> None:
    r = client.post(f"{V1}/tenants/acme/connections", json=REQUEST, headers=bearer(tokens.acme))
    assert r.status_code == 201, r.text
    answer = ConnectionAnswer.model_validate_json(r.content)
    assert answer.connection.bandwidth == 100_000_000
    assert answer.connection.path == ["h1", "h2"]
    timing = dict(part.strip().split(";dur=") for part in r.headers["Server-Timing"].split(","))
    assert set(timing) == {"db", "path", "devices", "api"}
    assert float(timing["devices"]) == pytest.approx(10.0)  # the service's 10 ms, in ms
    assert float(timing["api"]) > 0  # measured apart from the service call


def test_xml_request_and_answer(client: TestClient, tokens: Tokens) -> None:
    body = (
        b"<ConnectionRequest><name>c1</name><a>e1</a><b>e2</b><bandwidth>20mbit</bandwidth>"
        b"<path>h1</path><path>h3</path><path>h2</path><bidirectional>true</bidirectional>"
        b"</ConnectionRequest>"
    )
    headers = bearer(tokens.acme, **{"Content-Type": XML, "Accept": XML})
    r = client.post(f"{V1}/tenants/acme/connections", content=body, headers=headers)
    assert r.status_code == 201, r.text
    assert r.headers["content-type"].startswith(XML)
    root = etree.fromstring(r.content)
    assert root.tag == "ConnectionAnswer"
    assert root.findtext("status") == "established"
    assert [p.text for p in root.findall("connection/path")] == ["h1", "h3", "h2"]
    assert root.findtext("connection/bandwidth") == "20000000"
    assert root.find("connection/protocol") is None  # null fields are left out
    # the same connection read back as JSON
    r = client.get(f"{V1}/tenants/acme/connections/c1", headers=bearer(tokens.acme))
    assert r.json()["path"] == ["h1", "h3", "h2"]


def test_xml_lists_are_wrapped_and_maps_keyed(client: TestClient, tokens: Tokens) -> None:
    r = client.get(f"{V1}/networks", headers=bearer(tokens.provider, Accept=XML))
    root = etree.fromstring(r.content)
    assert root.tag == "NetworkViewList"
    assert [n.findtext("name") for n in root.findall("NetworkView")] == ["acme-net", "beta-net"]
    guarantee = root.find("NetworkView/guarantees")
    assert (guarantee.get("key"), guarantee.text) == ("l1", "100000000")


def test_json_is_the_default_and_accept_any_is_json(client: TestClient, tokens: Tokens) -> None:
    for accept in (None, "*/*", "application/json, application/xml;q=0.5"):
        headers = bearer(tokens.provider, **({"Accept": accept} if accept else {}))
        r = client.get(f"{V1}/whoami", headers=headers)
        assert r.headers["content-type"] == "application/json"
        assert r.json() == {"role": "provider", "tenant": None}


def test_xml_sent_and_anything_accepted_is_answered_in_xml(
    client: TestClient, tokens: Tokens
) -> None:
    """curl sends `Accept: */*`: an application that posts XML gets XML back, errors too."""
    body = b"<TenantRequest><name>gamma</name></TenantRequest>"
    for accept in ("*/*", None):
        more = {"Content-Type": XML, **({"Accept": accept} if accept else {})}
        r = client.post(f"{V1}/tenants", content=body, headers=bearer(tokens.provider, **more))
        assert r.headers["content-type"].startswith(XML)
    assert etree.fromstring(r.content).findtext("code") == "conflict"  # the second: exists
    r = client.post(
        f"{V1}/tenants",
        content=body,
        headers=bearer(tokens.provider, **{"Content-Type": XML, "Accept": "application/json"}),
    )
    assert r.headers["content-type"] == "application/json"


# -- bad input ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("content", "ctype", "reason"),
    [
        (b'{"name": "c1",', "application/json", "not valid JSON"),
        (b"[1, 2]", "application/json", "must be a JSON object"),
        (b"<ConnectionRequest><name>c1</name>", XML, "not well-formed XML"),
        (b"<Other><name>c1</name></Other>", XML, "expected <ConnectionRequest>"),
        (
            b'<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x "y">]><ConnectionRequest>'
            b"<name>&x;</name></ConnectionRequest>",
            XML,
            "document type declaration",
        ),
        (b"<ConnectionRequest><name>a</name><name>b</name></ConnectionRequest>", XML, "twice"),
    ],
)
def test_malformed_bodies_are_400_and_change_nothing(
    client: TestClient,
    service: FakeService,
    tokens: Tokens,
    content: bytes,
    ctype: str,
    reason: str,
) -> None:
    headers = bearer(tokens.acme, **{"Content-Type": ctype})
    r = client.post(f"{V1}/tenants/acme/connections", content=content, headers=headers)
    assert r.status_code == 400, r.text
    body = error(r)
    assert body.code == "bad-request" and reason in body.reason
    assert service.conns == {} and service.keys == []


def test_billion_laughs_is_refused_without_expanding(client: TestClient, tokens: Tokens) -> None:
    entities = "".join(f'<!ENTITY l{i} "{f"&l{i - 1};" * 10}">' for i in range(1, 10))
    root = "<ConnectionRequest><name>&l9;</name></ConnectionRequest>"
    doc = f'<!DOCTYPE r [<!ENTITY l0 "lol">{entities}]>{root}'
    headers = bearer(tokens.acme, **{"Content-Type": XML})
    r = client.post(f"{V1}/tenants/acme/connections", content=doc.encode(), headers=headers)
    assert r.status_code == 400 and "document type" in error(r).reason


def test_oversized_body_is_413(client: TestClient, tokens: Tokens) -> None:
    headers = bearer(tokens.acme, **{"Content-Type": "application/json"})
    r = client.post(f"{V1}/tenants/acme/connections", content=b" " * (2 << 20), headers=headers)
    assert r.status_code == 413 and error(r).code == "too-large"


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"bandwidth": "0"}, "bandwidth"),
        ({"bandwidth": "fast"}, "bandwidth"),
        ({"dst_port": 70000}, "dst_port"),
        ({"colour": "red"}, "colour"),
        ({"name": "bad name!"}, "name"),
    ],
)
def test_invalid_fields_are_422_naming_the_field(
    client: TestClient, service: FakeService, tokens: Tokens, change: dict, field: str
) -> None:
    r = client.post(
        f"{V1}/tenants/acme/connections", json={**REQUEST, **change}, headers=bearer(tokens.acme)
    )
    assert r.status_code == 422, r.text
    body = error(r)
    assert (body.code, body.field) == ("invalid", field)
    assert body.reason.startswith(f"{field}: ")
    assert service.conns == {}


def test_invalid_xml_field_names_the_field_too(client: TestClient, tokens: Tokens) -> None:
    body = (
        b"<ConnectionRequest><name>c1</name><a>e1</a><b>e2</b>"
        b"<bandwidth>0</bandwidth></ConnectionRequest>"
    )
    headers = bearer(tokens.acme, **{"Content-Type": XML, "Accept": XML})
    r = client.post(f"{V1}/tenants/acme/connections", content=body, headers=headers)
    assert r.status_code == 422
    root = etree.fromstring(r.content)
    assert (root.tag, root.findtext("field"), root.findtext("status")) == (
        "ErrorBody",
        "bandwidth",
        "422",
    )


def test_unsupported_media_types(client: TestClient, tokens: Tokens) -> None:
    r = client.post(
        f"{V1}/tenants/acme/connections",
        content=b"name=c1",
        headers=bearer(tokens.acme, **{"Content-Type": "application/x-www-form-urlencoded"}),
    )
    assert (r.status_code, error(r).field) == (415, "Content-Type")
    r = client.get(f"{V1}/whoami", headers=bearer(tokens.acme, Accept="text/html"))
    assert (r.status_code, error(r).code) == (406, "not-acceptable")


def test_service_refusals_keep_their_status_and_detail(client: TestClient, tokens: Tokens) -> None:
    r = client.post(
        f"{V1}/tenants/acme/connections",
        json={**REQUEST, "bandwidth": "2gbit"},
        headers=bearer(tokens.acme),
    )
    assert r.status_code == 409
    body = error(r)
    assert body.code == "no-capacity"
    assert [(s.link, s.missing_bps) for s in body.shortfalls] == [("l1", 1_000_000_000)]
    assert "Server-Timing" in r.headers  # refusals are timed too
    r = client.post(
        f"{V1}/tenants/acme/connections",
        json={**REQUEST, "bandwidth": "2gbit"},
        headers=bearer(tokens.acme, Accept=XML),
    )
    assert error(r).shortfalls == body.shortfalls  # the same, through XML and back
    r = client.get(f"{V1}/tenants/acme/connections/nope", headers=bearer(tokens.acme))
    assert (r.status_code, error(r).field) == (404, "name")
    r = client.get(f"{V1}/no/such/route", headers=bearer(tokens.acme))
    assert (r.status_code, error(r).code) == (404, "not-found")


def test_unexpected_failure_is_500_without_a_traceback(
    client: TestClient, service: FakeService, tokens: Tokens
) -> None:
    async def broken(*args: object) -> None:
        raise RuntimeError("secret internals")

    service.hosts = broken  # type: ignore[method-assign]
    r = client.get(f"{V1}/hosts", headers=bearer(tokens.provider))
    assert r.status_code == 500
    body = error(r)
    assert body.code == "internal-error"
    assert "secret internals" not in r.text and "Traceback" not in r.text


# -- tokens and roles --------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("headers", "reason"),
    [
        ({}, "no token"),
        ({"Authorization": "Basic dXNlcjpwdw=="}, "must be 'Bearer <token>'"),
        ({"Authorization": "Bearer vnet_wrong"}, "not known"),
    ],
)
def test_missing_or_wrong_token_is_401(
    client: TestClient, service: FakeService, tokens: Tokens, headers: dict, reason: str
) -> None:
    r = client.post(f"{V1}/tenants/acme/connections", json=REQUEST, headers=headers)
    assert r.status_code == 401
    body = error(r)
    assert (body.code, body.field) == ("unauthorized", "Authorization")
    assert reason in body.reason
    assert r.headers["WWW-Authenticate"].startswith("Bearer")
    assert service.conns == {}


def test_expired_and_revoked_tokens_are_401_saying_so(
    client: TestClient, sessions: sessionmaker[Session], tokens: Tokens
) -> None:
    client.app.state.authenticator.cache_seconds = 0  # type: ignore[attr-defined]
    r = client.post(
        f"{V1}/tokens",
        json={"role": "tenant", "tenant": "acme", "expires_in": 3600},
        headers=bearer(tokens.provider),
    )
    assert r.status_code == 201, r.text
    short = r.json()["token"]
    assert client.get(f"{V1}/whoami", headers=bearer(short)).json()["tenant"] == "acme"
    with sessions.begin() as session:  # an hour passes
        past = datetime.now(UTC) - timedelta(seconds=1)
        session.execute(
            update(ApiToken).where(ApiToken.sha256 == digest(short)).values(expires=past)
        )
    r = client.get(f"{V1}/whoami", headers=bearer(short))
    assert r.status_code == 401 and "expired at" in error(r).reason
    with sessions.begin() as session:
        now = datetime.now(UTC)
        session.execute(
            update(ApiToken).where(ApiToken.sha256 == digest(tokens.beta)).values(revoked=now)
        )
    r = client.get(f"{V1}/whoami", headers=bearer(tokens.beta))
    assert r.status_code == 401 and "revoked at" in error(r).reason


def test_tokens_are_stored_only_as_their_hash(
    client: TestClient, sessions: sessionmaker[Session], tokens: Tokens
) -> None:
    r = client.post(f"{V1}/tokens", json={"role": "provider"}, headers=bearer(tokens.provider))
    token = r.json()["token"]
    with sessions() as session:
        stored = [row.sha256 for row in session.query(ApiToken)]
    assert digest(token) in stored and token not in stored


@pytest.mark.parametrize(
    ("ask", "status", "field"),
    [
        ({"role": "tenant"}, 400, "tenant"),
        ({"role": "tenant", "tenant": "nobody"}, 404, "tenant"),
        ({"role": "provider", "tenant": "acme"}, 400, "tenant"),
        ({"role": "king"}, 422, "role"),
        ({"role": "tenant", "tenant": "acme", "expires_in": 0}, 422, "expires_in"),
    ],
)
def test_bad_token_requests(
    client: TestClient, tokens: Tokens, ask: dict, status: int, field: str
) -> None:
    r = client.post(f"{V1}/tokens", json=ask, headers=bearer(tokens.provider))
    assert (r.status_code, error(r).field) == (status, field)


def test_only_the_provider_makes_tokens_and_tenants(client: TestClient, tokens: Tokens) -> None:
    r = client.post(f"{V1}/tokens", json={"role": "provider"}, headers=bearer(tokens.acme))
    assert (r.status_code, error(r).code) == (403, "forbidden")
    r = client.post(f"{V1}/tenants", json={"name": "gamma"}, headers=bearer(tokens.acme))
    assert r.status_code == 403
    r = client.post(f"{V1}/tenants", json={"name": "gamma"}, headers=bearer(tokens.provider))
    assert (r.status_code, r.json()) == (201, {"name": "gamma"})


def test_a_tenant_touching_another_tenant_is_403_and_changes_nothing(
    client: TestClient, service: FakeService, tokens: Tokens
) -> None:
    r = client.post(f"{V1}/tenants/acme/connections", json=REQUEST, headers=bearer(tokens.acme))
    assert r.status_code == 201
    other = bearer(tokens.beta)
    attempts = [
        client.post(
            f"{V1}/tenants/acme/connections", json={**REQUEST, "name": "c2"}, headers=other
        ),
        client.get(f"{V1}/tenants/acme/connections/c1", headers=other),
        client.patch(
            f"{V1}/tenants/acme/connections/c1", json={"bandwidth": "1mbit"}, headers=other
        ),
        client.delete(f"{V1}/tenants/acme/connections/c1", headers=other),
        client.get(f"{V1}/connections?tenant=acme", headers=other),
        client.get(f"{V1}/networks?tenant=acme", headers=other),
    ]
    for r in attempts:
        assert (r.status_code, error(r).code) == (403, "forbidden"), r.text
        assert "'beta' may not act on tenant 'acme'" in error(r).reason
    assert list(service.conns) == [("acme", "c1")]
    assert service.conns["acme", "c1"].bandwidth == 100_000_000
    # and what beta lists holds nothing of acme's
    assert client.get(f"{V1}/connections", headers=other).json() == []
    assert [n["tenant"] for n in client.get(f"{V1}/networks", headers=other).json()] == ["beta"]


# -- idempotency, modify, release --------------------------------------------------------------
def test_idempotency_key_reaches_the_service(
    client: TestClient, service: FakeService, tokens: Tokens
) -> None:
    headers = bearer(tokens.acme, **{"Idempotency-Key": "k-42"})
    first = client.post(f"{V1}/tenants/acme/connections", json=REQUEST, headers=headers)
    again = client.post(f"{V1}/tenants/acme/connections", json=REQUEST, headers=headers)
    assert first.status_code == again.status_code == 201
    assert service.keys == ["k-42", "k-42"]
    assert first.json()["connection"] == again.json()["connection"]
    long_key = bearer(tokens.acme, **{"Idempotency-Key": "k" * 129})
    r = client.post(f"{V1}/tenants/acme/connections", json=REQUEST, headers=long_key)
    assert (r.status_code, error(r).field) == (422, "Idempotency-Key")


def test_modify_and_release_are_timed(client: TestClient, tokens: Tokens) -> None:
    me = bearer(tokens.acme)
    client.post(f"{V1}/tenants/acme/connections", json=REQUEST, headers=me)
    r = client.patch(f"{V1}/tenants/acme/connections/c1", json={"bandwidth": "200mbit"}, headers=me)
    assert r.status_code == 200 and r.json()["connection"]["bandwidth"] == 200_000_000
    assert "api;dur=" in r.headers["Server-Timing"]
    r = client.patch(f"{V1}/tenants/acme/connections/c1", json={}, headers=me)
    assert (r.status_code, error(r).field) == (422, "body")  # the document says minProperties 1
    r = client.delete(f"{V1}/tenants/acme/connections/c1", headers=me)
    assert r.status_code == 200 and r.json()["status"] == "released"
    assert "Server-Timing" in r.headers


# -- OpenAPI and events ------------------------------------------------------------------------
def test_openapi_describes_json_and_xml(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    create = spec["paths"][f"{V1}/tenants/{{tenant}}/connections"]["post"]
    assert set(create["requestBody"]["content"]) == {"application/json", XML}
    assert set(create["responses"]["201"]["content"]) == {"application/json", XML}
    schemas = spec["components"]["schemas"]
    assert {"ConnectionRequest", "ModifyRequest", "TokenRequest", "ErrorBody"} <= set(schemas)
    listing = spec["paths"][f"{V1}/connections"]["get"]["responses"]["200"]["content"][XML]
    assert listing["schema"]["xml"] == {"name": "ConnectionViewList", "wrapped": True}
    assert client.get("/docs").status_code == 200


def test_events_stream_the_links(client: TestClient, tokens: Tokens) -> None:
    client.post(f"{V1}/tenants/acme/connections", json=REQUEST, headers=bearer(tokens.acme))
    client.app.state.utilisation_interval = 0.01  # type: ignore[attr-defined]
    r = client.get(f"{V1}/events?limit=2", headers=bearer(tokens.acme))
    assert r.headers["content-type"].startswith("text/event-stream")
    events = [e for e in r.text.split("\n\n") if e]
    assert len(events) == 2
    kind, data = events[0].split("\n")
    assert kind == "event: links"
    assert '"reserved_bps":100000000' in data
    assert client.get(f"{V1}/events?limit=1").status_code == 401


def test_events_carry_each_connection_change_before_the_links(
    client: TestClient, tokens: Tokens, service: FakeService
) -> None:
    """`event: connection` for each history line written since the last tick (the service
    says which: it filters them by tenant), then `event: links`."""
    asked: list[int | None] = []

    async def changes(who: object, after: int | None) -> tuple[int, list[ConnectionChange]]:
        asked.append(after)
        at = datetime(2026, 1, 1, tzinfo=UTC)
        line = ConnectionChange(tenant="acme", name="v", at=at, kind="degraded", detail="why")
        return 7, ([] if after is None else [line])

    service.connection_changes = changes  # type: ignore[method-assign]
    client.app.state.utilisation_interval = 0.01  # type: ignore[attr-defined]
    r = client.get(f"{V1}/events?limit=2", headers=bearer(tokens.acme))
    kinds = [e.split("\n")[0] for e in r.text.split("\n\n") if e]
    assert kinds == ["event: links", "event: connection", "event: links"]
    assert asked == [None, 7]
    data = r.text.split("event: connection\ndata: ")[1].split("\n")[0]
    assert ConnectionChange.model_validate_json(data).kind == "degraded"


def test_the_console_is_mounted_at_ui_with_the_apis_authenticator(
    monkeypatch: pytest.MonkeyPatch,
    service: FakeService,
    sessions: sessionmaker[Session],
    tokens: Tokens,
) -> None:
    """make_app(..., ui=True) mounts vnet.controller.ui's app (a stand-in here, with the
    console's interface: make_console(service, authenticate, refresh_seconds))."""

    def make_console(svc: object, authenticate, refresh_seconds: float) -> FastAPI:  # type: ignore[no-untyped-def]
        console = FastAPI()

        @console.get("/")
        async def page(request: Request) -> dict[str, object]:
            who = await authenticate(request.cookies["c"])
            return {"same": svc is service, "tenant": who.tenant, "refresh": refresh_seconds}

        return console

    monkeypatch.setitem(
        sys.modules, "vnet.controller.ui", types.SimpleNamespace(make_console=make_console)
    )
    with TestClient(make_app(service, sessions, ui=True)) as client:
        client.cookies.set("c", tokens.acme)
        assert client.get("/ui/").json() == {"same": True, "tenant": "acme", "refresh": 1.0}


def test_docs_page_uses_the_controllers_own_swagger_ui(client: TestClient) -> None:
    """/docs works without internet: every script and style it loads is served here."""
    page = client.get("/docs")
    assert page.status_code == 200
    assets = re.findall(r"""(?:src|href)=['"]([^'"]+)['"]""", page.text)
    assert assets and all(a.startswith("/docs-assets/") for a in assets), assets
    for asset in assets:
        assert client.get(asset).status_code == 200, asset


def test_counters_of_a_connection_in_json_and_xml(client: TestClient, tokens: Tokens) -> None:
    client.post(f"{V1}/tenants/acme/connections", json=REQUEST, headers=bearer(tokens.acme))
    name = REQUEST["name"]
    path = f"{V1}/tenants/acme/connections/{name}/counters"
    r = client.get(path, headers=bearer(tokens.acme))
    assert r.status_code == 200, r.text
    [shaper] = ConnectionCounters.model_validate_json(r.content).shapers
    assert (shaper.host, shaper.router, shaper.bytes) == ("h1", "r1", 1500)
    xml = client.get(path, headers={**bearer(tokens.acme), "Accept": "application/xml"})
    assert xml.status_code == 200 and "<bytes>1500</bytes>" in xml.text, xml.text
    assert client.get(path, headers=bearer(tokens.beta)).status_code == 403
