"""`vnet conn|tenant|net` against a controller: what they send, print, and exit with.

The controller is the stand-in of fake_controller (real HTTP on 127.0.0.1): these tests are
about the command line (options, which counterpart, tables/JSON, exit codes), not the service.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from vnet.cli import main

from .fake_controller import NO_CAPACITY, VIEW, FakeController, serve

TENANT = (200, {"role": "tenant", "tenant": "red"}, {})
PROVIDER = (200, {"role": "provider", "tenant": None}, {})


@pytest.fixture
def target(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    for var in ("VNET_CONTROLLER", "VNET_CONTROLLER_TOKEN_FILE", "VNET_AGENT_ADDRESS"):
        monkeypatch.delenv(var, raising=False)
    (tmp_path / "token").write_text("tok\n")
    with serve() as url:
        yield ["--controller", url, "--token-file", str(tmp_path / "token")]


def vnet(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def test_request_established_as_json(target: list[str]) -> None:
    FakeController.answers["GET /api/v1/whoami"] = TENANT
    FakeController.answers["POST /api/v1/tenants/red/connections"] = (
        201,
        {"status": "established", "connection": VIEW, "moved": []},
        {},
    )
    args = ("c1", "red-a", "red-b", "--bandwidth", "20mbit", "--protocol", "udp", "--dport", "5201")
    result = vnet("conn", "request", *args, "--path", "h1,h2", "--json", *target)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["connection"]["path"] == ["h1", "h2"]
    sent = FakeController.seen[-1]
    assert sent["headers"]["Authorization"] == "Bearer tok"
    assert len(sent["headers"]["Idempotency-Key"]) == 36  # a fresh UUID unless one is given
    assert json.loads(sent["body"]) == {
        "name": "c1",
        "a": "red-a",
        "b": "red-b",
        "protocol": "udp",
        "dst_port": 5201,
        "bandwidth": 20_000_000,
        "bidirectional": False,
        "path": ["h1", "h2"],
        "packet_size": 1500,
    }


def test_rejection_prints_reason_and_every_shortfall(target: list[str]) -> None:
    FakeController.answers["GET /api/v1/whoami"] = TENANT
    FakeController.answers["POST /api/v1/tenants/red/connections"] = (409, NO_CAPACITY, {})
    result = vnet("conn", "request", "c1", "red-a", "red-b", "--bandwidth", "900mbit", *target)
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        "vnet: the controller says: no-capacity (HTTP 409): no path has 900mbit free",
        "  link h1-h2 h1 -> h2: requested 900mbit, free 100mbit, missing 800mbit",
        "  link h1-h3 h1 -> h3: requested 900mbit, free 0, missing 900mbit",
    ]
    with_json = vnet(
        "conn", "request", "c1", "red-a", "red-b", "--bandwidth", "900mbit", "--json", *target
    )
    assert with_json.exit_code == 1
    assert json.loads(with_json.stdout)["error"]["shortfalls"][1]["link"] == "h1-h3"


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--bandwidth", "fast"], "--bandwidth"),
        (["--bandwidth", "1mbit", "--sport", "70000"], "--sport"),
        (["--bandwidth", "1mbit", "--path", ","], "--path"),
    ],
)
def test_bad_values_are_usage_errors_and_send_nothing(
    target: list[str], args: list[str], says: str
) -> None:
    FakeController.answers["GET /api/v1/whoami"] = TENANT
    result = vnet("conn", "request", "c1", "red-a", "red-b", *args, *target)
    assert result.exit_code == 2, result.output
    assert says in result.stderr
    assert [s for s in FakeController.seen if s["method"] != "GET"] == []


def test_provider_finds_the_tenant_by_name(target: list[str]) -> None:
    FakeController.answers["GET /api/v1/whoami"] = PROVIDER
    FakeController.answers["GET /api/v1/connections"] = (200, [VIEW], {})
    FakeController.answers["DELETE /api/v1/tenants/red/connections/c1"] = (
        200,
        {**VIEW, "status": "released"},
        {},
    )
    result = vnet("conn", "release", "c1", *target)
    assert result.exit_code == 0, result.output
    assert "connection red/c1 released" in result.stdout
    unknown = vnet("conn", "release", "nope", *target)
    assert unknown.exit_code == 2
    assert "give --tenant" in unknown.stderr


def test_list_and_show_ask_the_controller_without_host(target: list[str]) -> None:
    FakeController.answers["GET /api/v1/connections?tenant=red"] = (200, [VIEW], {})
    FakeController.answers["GET /api/v1/whoami"] = TENANT
    FakeController.answers["GET /api/v1/tenants/red/connections/c1"] = (200, VIEW, {})
    history = [{"at": "2026-11-23T08:00:00Z", "kind": "created", "detail": "h1 -> h2"}]
    FakeController.answers["GET /api/v1/tenants/red/connections/c1/history"] = (200, history, {})
    listed = vnet("conn", "list", "--tenant", "red", *target)
    assert listed.exit_code == 0, listed.output
    row = next(line for line in listed.stdout.splitlines() if " c1 " in line)
    assert all(word in row for word in ("red", "established", "red-a -> red-b", "20mbit"))
    shown = vnet("conn", "show", "c1", "--json", *target)
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["history"][0]["kind"] == "created"


def test_agent_and_controller_options_do_not_mix(target: list[str]) -> None:
    both = vnet("conn", "list", "--host", "h1", *target)
    assert both.exit_code == 2
    assert "--controller asks the controller" in both.stderr
    # --host alone is the agent form, unchanged: it needs --lab, as before
    agent = vnet("conn", "list", "--host", "h1")
    assert agent.exit_code == 2
    assert "give --lab too" in agent.stderr
    tenant_for_agent = vnet("conn", "show", "c1", "--address", "10.0.0.1", "--tenant", "red")
    assert tenant_for_agent.exit_code == 2
    assert FakeController.seen == []


def test_no_controller_named_is_usage(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VNET_CONTROLLER", raising=False)
    result = vnet("conn", "request", "c1", "a", "b", "--bandwidth", "1mbit")
    assert result.exit_code == 2
    assert "--controller URL --token-file F, or --lab NAME" in result.stderr


def test_a_lab_without_controller_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from vnet.lab import record as records

    monkeypatch.setattr(records, "RECORD_DIR", tmp_path)
    result = vnet("conn", "list", "--lab", "nosuch")
    assert result.exit_code == 1
    assert "lab 'nosuch' is not up" in result.stderr


def test_unreachable_controller_exits_1(tmp_path: Path) -> None:
    (tmp_path / "t").write_text("x")
    result = vnet(
        "tenant", "list", "--controller", "http://127.0.0.1:9", "--token-file", str(tmp_path / "t")
    )
    assert result.exit_code == 1
    assert "cannot reach the controller at http://127.0.0.1:9" in result.stderr


def test_tenant_and_net_commands(target: list[str]) -> None:
    FakeController.answers["POST /api/v1/tenants"] = (201, {"name": "blue"}, {})
    nets = [{"tenant": "red", "name": "red-core", "vni": 100, "guarantees": {"h1-h2": 10**8}}]
    FakeController.answers["GET /api/v1/networks?tenant=red"] = (200, nets, {})
    created = vnet("tenant", "create", "blue", *target)
    assert created.exit_code == 0, created.output
    assert json.loads(FakeController.seen[-1]["body"]) == {"name": "blue"}
    listed = vnet("net", "list", "--tenant", "red", *target)
    assert listed.exit_code == 0, listed.output
    assert "h1-h2 100mbit" in listed.stdout
    as_json = vnet("net", "list", "--tenant", "red", "--json", *target)
    assert json.loads(as_json.stdout) == nets
