"""Bad input on every body of the controller's API is a precise 4xx that changes nothing
(issue 22): numbers of thousands of digits or beyond 64 bits, bodies nested 100 000 deep,
members given twice, fractional or non-ASCII numbers, strings for numbers, tenant names
outside the naming rule, token lifetimes past any date. And a failure of the controller itself
names its cause (503 with Retry-After for a database that cannot write) and keeps the
client's connection open for its next request (a real uvicorn server, one HTTP connection)."""

from __future__ import annotations

import http.client
import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import uvicorn
from fastapi.testclient import TestClient
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session, sessionmaker

from tests.controller_api_support import FakeService, Tokens
from tests.unit.test_controller_api import REQUEST, V1, XML, bearer, error
from vnet.controller.api import make_app
from vnet.controller.api.codec import parse_body
from vnet.model import strict
from vnet.model.controller_api import HostRequest
from vnet.tools.wait import wait_until

BIG = "9" * 5000
# (route, a valid body, a number field of it) for every route that takes a body
ROUTES = [
    ("POST", "/tokens", {"role": "tenant", "tenant": "acme", "expires_in": 60}, "expires_in"),
    ("POST", "/tenants", {"name": "gamma"}, None),
    ("POST", "/tenants/acme/networks", {"name": "n1", "vni": 7}, "vni"),
    (
        "POST",
        "/tenants/acme/routers",
        {"name": "r9", "interfaces": [{"network": "lan1"}]},
        None,
    ),
    ("POST", "/tenants/acme/connections", REQUEST, "packet_size"),
    ("PATCH", "/tenants/acme/connections/c1", {"bandwidth": "10mbit"}, "bandwidth"),
]


def send(client: TestClient, method: str, path: str, body: bytes, token: str, **headers: str):  # type: ignore[no-untyped-def]
    headers = {"Content-Type": "application/json", **headers}
    return client.request(method, V1 + path, content=body, headers=bearer(token, **headers))


def with_member(body: dict[str, Any], field: str, literal: str) -> bytes:
    """`body` as JSON with `field`'s value spelled `literal` (a number json.dumps cannot)."""
    text = json.dumps({**body, field: 0})
    return text.replace(f'"{field}": 0', f'"{field}": {literal}').encode()


@pytest.fixture
def nothing_changes(service: FakeService) -> Iterator[None]:
    before = (dict(service.conns), list(service.tenants_), list(service.keys))
    yield
    assert (service.conns, service.tenants_, service.keys) == before


@pytest.mark.usefixtures("nothing_changes")
@pytest.mark.parametrize(("method", "path", "body", "number"), ROUTES)
def test_malformed_bodies_are_400_on_every_route(
    client: TestClient, tokens: Tokens, method: str, path: str, body: dict, number: str | None
) -> None:
    token = tokens.provider
    deep = b'{"name": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    twice = json.dumps(body)[:-1].encode() + b', "' + next(iter(body)).encode() + b'": "x"}'
    cases = [(deep, "deep"), (twice, "given twice")]
    if number:
        cases.append((with_member(body, number, BIG), "5000 digits"))
    for content, reason in cases:
        r = send(client, method, path, content, token)
        assert r.status_code == 400, (path, reason, r.text)
        assert error(r).code == "bad-request" and reason in error(r).reason, r.text
    if number is None:
        return
    strings_allowed = number == "bandwidth"  # a rate may be a string ("5", "20mbit")
    for literal in ("1e30", "1" + "0" * 30, "1.5", "true", *([] if strings_allowed else ['"5"'])):
        r = send(client, method, path, with_member(body, number, literal), token)
        assert r.status_code in (400, 422), (path, literal, r.text)
        assert error(r).field == number or "digits" in error(r).reason, (literal, r.text)


@pytest.mark.usefixtures("nothing_changes")
@pytest.mark.parametrize(
    "bandwidth",
    [1.5, "1.5", "\u0661\u0660\u0660mbit", "\uff11\uff10\uff10", 2**63, "10000000tbit", "0.5bit"],
)
def test_bandwidths_are_whole_ascii_bit_rates(
    client: TestClient, tokens: Tokens, bandwidth: object
) -> None:
    r = client.post(
        f"{V1}/tenants/acme/connections",
        json={**REQUEST, "bandwidth": bandwidth},
        headers=bearer(tokens.acme),
    )
    assert (r.status_code, error(r).field) == (422, "bandwidth"), r.text


@pytest.mark.usefixtures("nothing_changes")
@pytest.mark.parametrize(
    "name", ["<script>x</script>", "a/../acme", "\U0001f600", "1abc", "a" * 33, "null x"]
)
def test_tenant_names_follow_the_naming_rule_in_json_and_xml(
    client: TestClient, tokens: Tokens, name: str
) -> None:
    r = client.post(f"{V1}/tenants", json={"name": name}, headers=bearer(tokens.provider))
    assert (r.status_code, error(r).field) == (422, "name"), r.text
    escaped = name.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    body = f"<TenantRequest><name>{escaped}</name></TenantRequest>".encode()
    r = send(client, "POST", "/tenants", body, tokens.provider, **{"Content-Type": XML})
    assert (r.status_code, error(r).field) == (422, "name"), r.text


def test_a_token_lifetime_past_any_date_is_422(client: TestClient, tokens: Tokens) -> None:
    ask = {"role": "tenant", "tenant": "acme", "expires_in": 10**12}
    r = client.post(f"{V1}/tokens", json=ask, headers=bearer(tokens.provider))
    assert (r.status_code, error(r).field) == (422, "expires_in"), r.text


def test_xml_numbers_are_ascii_digits_and_xml_types_are_json_types(
    client: TestClient, service: FakeService, tokens: Tokens
) -> None:
    def xml(port: str) -> bytes:
        return (
            "<ConnectionRequest><name>c1</name><a>e1</a><b>e2</b><bandwidth>1mbit</bandwidth>"
            f"<dst_port>{port}</dst_port><bidirectional>true</bidirectional></ConnectionRequest>"
        ).encode()

    for port in ("\u0668\u0660", "8_0", "80.0", "１"):
        r = send(
            client,
            "POST",
            "/tenants/acme/connections",
            xml(port),
            tokens.acme,
            **{"Content-Type": XML},
        )
        assert (r.status_code, error(r).field) == (422, "dst_port"), (port, r.text)
    assert service.conns == {}
    r = send(
        client,
        "POST",
        "/tenants/acme/connections",
        xml(" 80 "),
        tokens.acme,
        **{"Content-Type": XML},
    )
    assert r.status_code == 201, r.text  # strict validation took the text as the integer 80
    assert len(service.conns) == 1


def test_a_database_that_cannot_write_is_503_naming_it(
    client: TestClient, service: FakeService, tokens: Tokens
) -> None:
    async def full(*args: object) -> None:
        raise OperationalError("INSERT ...", {}, Exception("database or disk is full"))

    service.create_tenant = full  # type: ignore[method-assign]
    r = client.post(f"{V1}/tenants", json={"name": "gamma"}, headers=bearer(tokens.provider))
    assert r.status_code == 503, r.text
    body = error(r)
    assert body.code == "database-unavailable" and "database or disk is full" in body.reason
    assert int(r.headers["Retry-After"]) > 0


# -- a real server: the connection outlives a 500 ----------------------------------------------
@pytest.fixture
def served(service: FakeService, sessions: sessionmaker[Session]) -> Iterator[int]:
    config = uvicorn.Config(make_app(service, sessions), host="127.0.0.1", port=0, log_config=None)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        wait_until(lambda: server.started, 10, "uvicorn to listen", interval=0.02)
        yield server.servers[0].sockets[0].getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(10)


def test_a_500_keeps_the_connection_usable(
    served: int, service: FakeService, tokens: Tokens
) -> None:
    async def broken(*args: object) -> None:
        raise RuntimeError("a bug")

    service.hosts = broken  # type: ignore[method-assign]
    connection = http.client.HTTPConnection("127.0.0.1", served, timeout=10)
    try:
        for path, status in (("/hosts", 500), ("/whoami", 200), ("/hosts", 500), ("/links", 200)):
            connection.request("GET", V1 + path, headers=bearer(tokens.provider))
            answer = connection.getresponse()
            body = answer.read()
            assert answer.status == status, body
            assert answer.getheader("connection") != "close"
    finally:
        connection.close()


def test_bounds_are_those_of_the_model() -> None:
    """The API reads bodies with the model's one reader (not a copy of its own)."""
    assert strict.MAX_DEPTH >= 6 and strict.MAX_DIGITS >= 20


def test_an_xml_object_field_spelled_null_is_null() -> None:
    """`<agent>null</agent>` is JSON's `"agent": null` (no agent), as for any other field,
    not an agent with every field missing (schemathesis sent it: the answer was 422)."""
    raw = b"<HostRequest><agent>null</agent><name>h9</name></HostRequest>"
    assert parse_body(raw, "xml", HostRequest) == {"agent": None, "name": "h9"}
    assert HostRequest.model_validate(parse_body(raw, "xml", HostRequest)).agent is None
