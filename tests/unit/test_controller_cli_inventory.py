"""`vnet net create|vr` against a controller (issue 12, part 4): what they send and print.
The controller is the stand-in of fake_controller (real HTTP on 127.0.0.1)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from vnet.cli import main

from .fake_controller import FakeController, serve

TENANT = (200, {"role": "tenant", "tenant": "red"}, {})


@pytest.fixture
def target(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    for var in ("VNET_CONTROLLER", "VNET_CONTROLLER_TOKEN_FILE", "VNET_AGENT_ADDRESS"):
        monkeypatch.delenv(var, raising=False)
    (tmp_path / "token").write_text("tok\n")
    with serve() as url:
        yield ["--controller", url, "--token-file", str(tmp_path / "token")]


def vnet(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def test_vr_without_host_is_placed_by_the_controller(target: list[str]) -> None:
    FakeController.answers["GET /api/v1/whoami"] = TENANT
    placed = {"tenant": "red", "name": "rx", "host": "h2", "networks": ["lan1", "c13"]}
    FakeController.answers["POST /api/v1/tenants/red/routers"] = (201, placed, {})
    result = vnet(
        "net", "vr", "rx", "--interface", "lan1=10.61.1.50/24",
        "--interface", "c13=10.61.5.50/24,fd00:61:5::50/64", *target,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "VR rx created on host h2" in result.stdout
    assert json.loads(FakeController.seen[-1]["body"]) == {
        "name": "rx",
        "interfaces": [
            {"network": "lan1", "ipv4": "10.61.1.50/24"},
            {"network": "c13", "ipv4": "10.61.5.50/24", "ipv6": "fd00:61:5::50/64"},
        ],
    }


def test_net_create_sends_the_network_and_bad_values_send_nothing(target: list[str]) -> None:
    made = {"tenant": "red", "name": "lan9", "vni": 609, "guarantees": {}}
    FakeController.answers["POST /api/v1/tenants/red/networks"] = (201, made, {})
    result = vnet(
        "net", "create", "lan9", "--vni", "609", "--ipv4", "10.61.9.0/24",
        "--bandwidth", "20mbit", "--tenant", "red", "--json", *target,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == made
    assert json.loads(FakeController.seen[-1]["body"]) == {
        "name": "lan9",
        "vni": 609,
        "ipv4": "10.61.9.0/24",
        "bandwidth": 20_000_000,
        "hosts": [],
    }
    sent = len(FakeController.seen)
    bad = vnet("net", "create", "lan9", "--vni", "0", "--tenant", "red", *target)
    assert bad.exit_code == 2 and "vni" in bad.output, bad.output
    assert len(FakeController.seen) == sent


def test_deletes_send_delete_and_a_refusal_names_what_holds_it(target: list[str]) -> None:
    FakeController.answers["GET /api/v1/whoami"] = TENANT
    gone = {"tenant": "red", "name": "rx", "host": "h2", "networks": ["lan1"]}
    FakeController.answers["DELETE /api/v1/tenants/red/routers/rx"] = (200, gone, {})
    held = {
        "status": 409,
        "code": "in-use",
        "reason": "network 'lan1' is in use by VR 'r1', end host 'pc1'",
        "field": "name",
        "holders": ["VR 'r1'", "end host 'pc1'"],
    }
    FakeController.answers["DELETE /api/v1/tenants/red/networks/lan1"] = (409, held, {})
    FakeController.answers["DELETE /api/v1/tenants/blue"] = (200, {"name": "blue"}, {})
    deleted = vnet("net", "vr-delete", "rx", *target)
    refused = vnet("net", "delete", "lan1", *target)
    tenant = vnet("tenant", "delete", "blue", "--json", *target)
    assert deleted.exit_code == 0 and "VR rx deleted" in deleted.stdout, deleted.output
    assert refused.exit_code != 0, refused.output
    assert "in use by VR 'r1', end host 'pc1'" in refused.output, refused.output
    assert tenant.exit_code == 0 and json.loads(tenant.stdout) == {"name": "blue"}
    methods = [s["method"] + " " + s["path"] for s in FakeController.seen]
    assert "DELETE /api/v1/tenants/red/routers/rx" in methods


def test_unmanaged_vrs_are_listed_and_adopted(target: list[str]) -> None:
    found = [{"host": "h2", "name": "ux", "networks": ["c12"], "addresses": ["10.61.2.61/24"]}]
    FakeController.answers["GET /api/v1/hosts/h2/unmanaged"] = (200, found, {})
    adopted = {"tenant": "red", "name": "ux", "host": "h2", "networks": ["c12"]}
    FakeController.answers["POST /api/v1/tenants/red/routers/adopt"] = (201, adopted, {})
    listed = vnet("net", "vr-unmanaged", "h2", *target)
    taken = vnet("net", "vr-adopt", "ux", "--host", "h2", "--tenant", "red", *target)
    assert listed.exit_code == 0 and "ux  c12  10.61.2.61/24" in listed.stdout, listed.output
    assert taken.exit_code == 0 and "VR ux on h2 adopted into red" in taken.stdout, taken.output
    assert json.loads(FakeController.seen[-1]["body"]) == {"host": "h2", "name": "ux"}


def test_host_add_sends_its_agent_and_an_agent_option_alone_sends_nothing(
    target: list[str],
) -> None:
    view = {"name": "h4", "agent": "10.0.0.4:830", "reachable": False}
    FakeController.answers["POST /api/v1/hosts"] = (201, view, {})
    agent = ("--agent", "10.0.0.4", "--hostkey", "ssh-ed25519 AAAAkey", "--password-file", "h4")
    result = vnet("controller", "host", "add", "h4", *agent, *target)
    assert result.exit_code == 0, result.output
    assert "its agent at 10.0.0.4:830 does not answer (yet)" in result.stdout
    assert json.loads(FakeController.seen[-1]["body"]) == {
        "name": "h4",
        "agent": {
            "address": "10.0.0.4",
            "netconf_port": 830,
            "user": "admin",
            "password_file": "h4",
            "hostkey": "ssh-ed25519 AAAAkey",
            "provision_networks": True,
        },
    }
    sent = len(FakeController.seen)
    alone = vnet("controller", "host", "add", "h4", "--hostkey", "AAAAkey", *target)
    assert alone.exit_code == 2 and "--agent ADDRESS" in alone.output
    assert len(FakeController.seen) == sent
