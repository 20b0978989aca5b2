"""vnet.client.ControllerClient over real HTTP: what it sends, and how every answer maps.

A small stdlib HTTP server on 127.0.0.1 plays the controller with canned answers, so the
client's own behaviour (headers, bodies, error mapping) is tested without the service.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from typing import Any

import pytest

from vnet.client import ConnectError, ControllerClient, ControllerError, read_token
from vnet.client.controller import server_timing
from vnet.model.controller_api import ConnectionRequest, ModifyRequest

from .fake_controller import NO_CAPACITY, VIEW, FakeController, serve


@pytest.fixture
def controller() -> Iterator[str]:
    with serve() as url:
        yield url


def test_request_sends_token_key_and_body_and_reads_answer(controller: str) -> None:
    FakeController.answers["POST /api/v1/tenants/red/connections"] = (
        201,
        {"status": "established", "connection": VIEW, "moved": []},
        {"Server-Timing": "db;dur=1.5, path;dur=0.5, devices;dur=40, api;dur=2"},
    )
    request = ConnectionRequest(name="c1", a="red-a", b="red-b", bandwidth="20mbit")
    with ControllerClient(controller, "s3cret") as client:
        answer = client.request_connection("red", request, idempotency_key="k-1")
        timings = client.last_timings
    assert answer.connection.path == ["h1", "h2"]
    assert answer.connection.hops[1].sid == "fc00::1"
    sent = FakeController.seen[0]
    assert sent["headers"]["Authorization"] == "Bearer s3cret"
    assert sent["headers"]["Idempotency-Key"] == "k-1"
    assert json.loads(sent["body"]) == {
        "name": "c1",
        "a": "red-a",
        "b": "red-b",
        "bandwidth": 20_000_000,
        "bidirectional": False,
        "packet_size": 1500,
    }
    assert timings == pytest.approx({"db": 0.0015, "path": 0.0005, "devices": 0.04, "api": 0.002})


def test_rejection_carries_every_shortfall(controller: str) -> None:
    FakeController.answers["POST /api/v1/tenants/red/connections"] = (409, NO_CAPACITY, {})
    request = ConnectionRequest(name="c1", a="red-a", b="red-b", bandwidth="900mbit")
    with ControllerClient(controller, "t") as client, pytest.raises(ControllerError) as caught:
        client.request_connection("red", request)
    err = caught.value
    assert (err.status, err.code, err.reason) == (409, "no-capacity", "no path has 900mbit free")
    assert [s.link for s in err.shortfalls] == ["h1-h2", "h1-h3"]
    text = str(err).splitlines()
    assert text[0] == "no-capacity (HTTP 409): no path has 900mbit free"
    assert text[1] == "  link h1-h2 h1 -> h2: requested 900mbit, free 100mbit, missing 800mbit"
    assert text[2] == "  link h1-h3 h1 -> h3: requested 900mbit, free 0, missing 900mbit"
    assert "Idempotency-Key" not in FakeController.seen[0]["headers"]


def test_agent_refusal_and_field_errors_keep_host_and_field(controller: str) -> None:
    FakeController.answers["PATCH /api/v1/tenants/red/connections/c1"] = (
        502,
        {"status": 502, "code": "agent-refused", "reason": "validation failed", "host": "h2"},
        {},
    )
    FakeController.answers["DELETE /api/v1/tenants/red/connections/c%2F2"] = (
        400,
        {"status": 400, "code": "bad-request", "reason": "no such name", "field": "name"},
        {},
    )
    with ControllerClient(controller, "t") as client:
        with pytest.raises(ControllerError) as refused:
            client.modify("red", "c1", ModifyRequest(bandwidth="30mbit"))
        with pytest.raises(ControllerError) as bad:
            client.release("red", "c/2")  # quoted: one path segment
    assert refused.value.host == "h2"
    assert str(refused.value) == "agent-refused (HTTP 502) on host h2: validation failed"
    assert json.loads(FakeController.seen[0]["body"]) == {"bandwidth": 30_000_000}
    assert (bad.value.status, bad.value.field) == (400, "name")
    assert str(bad.value) == "bad-request (HTTP 400): no such name (field name)"


def test_an_answer_that_is_no_error_body_still_maps(controller: str) -> None:
    FakeController.answers["GET /api/v1/whoami"] = (500, "Internal Server Error\n", {})
    with ControllerClient(controller, "t") as client, pytest.raises(ControllerError) as caught:
        client.whoami()
    assert (caught.value.status, caught.value.code) == (500, "http-500")
    assert caught.value.reason == "Internal Server Error"


def test_lists_send_their_filters(controller: str) -> None:
    FakeController.answers["GET /api/v1/connections?tenant=red&released=true"] = (200, [VIEW], {})
    FakeController.answers["GET /api/v1/connections"] = (200, [], {})
    with ControllerClient(controller, "t") as client:
        assert [c.name for c in client.connections("red", released=True)] == ["c1"]
        assert client.connections() == []


def test_no_controller_is_a_connect_error() -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with (
        ControllerClient(f"http://127.0.0.1:{port}", "t", timeout=2) as client,
        pytest.raises(
            ConnectError, match=f"cannot reach the controller at http://127.0.0.1:{port}"
        ),
    ):
        client.whoami()


def test_token_file(tmp_path: Any) -> None:
    (tmp_path / "t").write_text("abc\n")
    assert read_token(tmp_path / "t") == "abc"
    with pytest.raises(ConnectError, match="cannot read the API token"):
        read_token(tmp_path / "missing")
    (tmp_path / "empty").write_text("\n")
    with pytest.raises(ConnectError, match="is empty"):
        read_token(tmp_path / "empty")


def test_server_timing_header() -> None:
    assert server_timing(None) == {}
    assert server_timing("db;dur=2;desc=x, bogus, api;dur=oops") == {"db": 0.002}


def test_a_token_is_not_sent_in_clear_to_another_machine() -> None:
    with pytest.raises(ConnectError, match="in clear over plain HTTP; use the controller's https"):
        ControllerClient("http://192.0.2.1:8480", "t")
    for url in ("http://127.0.0.1:8480", "http://[::1]:8480", "https://192.0.2.1:8480"):
        ControllerClient(url, "t").close()  # this machine itself, or HTTPS
