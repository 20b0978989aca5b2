"""Hosts and links added and removed through the controller's API and `vnet controller
host|link` on the session's lab of examples/controller.yaml (real controller process, real
agents): a removed link is drained first, make-before-break, and the agents hold the moved
connection on its new path; a removal that cannot drain is a 409 naming each connection,
and nothing changes; adding is idempotent (201, then 200), in JSON and XML; a tenant's
token may do none of it. curl (an independent client) speaks to the API from the lab's
management namespace. The lab is left as found: the link is put back, connections released.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from lxml import etree

from vnet.lab.access import controller_access

from .conftest import vnet
from .test_lab_controller import conn, lab, pieces_on  # noqa: F401 (lab: the fixture)


def curl(
    name: str, method: str, path: str, body: str | None = None, xml: bool = False, token: str = ""
) -> tuple[int, str]:
    """(status, body) of one request to the lab's controller (the provider's token)."""
    access = controller_access(name)
    token = token or Path(access.token_file).read_text().strip()
    media = "application/xml" if xml else "application/json"
    argv = [
        *("ip", "netns", "exec", access.namespace, "curl", "-sS", "--max-time", "60"),
        *("--cacert", str(access.certificate), "-X", method, "-w", "\n%{http_code}"),
        *("-H", f"Authorization: Bearer {token}", "-H", f"Accept: {media}"),
    ]
    if body is not None:
        argv += ["-H", f"Content-Type: {media}", "--data-binary", body]
    done = subprocess.run(
        [*argv, f"{access.url}/api/v1{path}"], capture_output=True, text=True, check=True
    )
    text, _, status = done.stdout.rpartition("\n")
    return int(status), text


def controller(name: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return vnet("controller", *args, "--lab", name, check=check, timeout=120)


def link_names(name: str) -> list[str]:
    return sorted(x["name"] for x in json.loads(curl(name, "GET", "/links")[1]))


def test_a_link_removed_through_the_cli_is_drained_onto_the_agents_first(
    lab: tuple[str, Path],  # noqa: F811
) -> None:
    name, _ = lab
    request = ("voice", "pc1", "pc3", "--bandwidth", "20mbit", "--protocol", "udp")
    made = json.loads(conn(name, "request", *request, "--dport", "5060", "--json").stdout)
    assert made["connection"]["path"] == ["h1", "h3"]
    pinned = ("pinned", "pc1", "pc3", "--bandwidth", "5mbit", "--protocol", "udp")
    conn(name, "request", *pinned, "--dport", "5070", "--path", "h1,h2,h3")
    try:
        removed = json.loads(controller(name, "link", "remove", "h1-h3", "--json").stdout)
        assert removed["kind"] == "link" and removed["name"] == "h1-h3"
        assert [(m["connection"], m["new_path"]) for m in removed["moved"]] == [
            ("voice", ["h1", "h2", "h3"])
        ]
        assert "h1-h3" not in link_names(name)
        shown = json.loads(conn(name, "show", "voice", "--json").stdout)
        assert shown["path"] == ["h1", "h2", "h3"]
        assert [e["kind"] for e in shown["history"]][-1] == "rerouted"
        assert any(p.startswith("vc") for p in pieces_on(name, "h2"))
        # h2 cannot be drained (both connections end beyond it on no other path): refused
        before = conn(name, "list", "--json").stdout, link_names(name)
        status, text = curl(name, "DELETE", "/hosts/h2")
        assert status == 409, text
        refused = json.loads(text)
        assert refused["code"] == "in-use"
        assert sorted(u["connection"] for u in refused["unmovable"]) == ["pinned", "voice"]
        pinned_why = next(u["reason"] for u in refused["unmovable"] if u["connection"] == "pinned")
        assert pinned_why == "its path h1 -> h2 -> h3 was asked for explicitly"
        assert (conn(name, "list", "--json").stdout, link_names(name)) == before
        cli = controller(name, "host", "remove", "h2", check=False)
        assert cli.returncode == 1 and "pinned" in cli.stderr and "in-use" in cli.stderr
    finally:
        for connection in ("voice", "pinned"):
            conn(name, "release", connection, check=False)
        # put back as the lab has it (the same fields: the link returns to service)
        xml = "<LinkRequest><a>h1</a><b>h3</b><rate>100mbit</rate></LinkRequest>"
        status, text = curl(name, "POST", "/links", xml, xml=True)
        assert status in (200, 201), text
    assert status == 201
    assert etree.fromstring(text.encode()).findtext("name") == "h1-h3"
    assert curl(name, "POST", "/links", xml, xml=True)[0] == 200  # there already
    assert "h1-h3" in link_names(name)


def test_a_host_is_added_and_removed_by_the_provider_only(
    lab: tuple[str, Path],  # noqa: F811
) -> None:
    name, _ = lab
    status, text = curl(name, "POST", "/tokens", json.dumps({"role": "tenant", "tenant": "acme"}))
    assert status == 201, text
    tenant = json.loads(text)["token"]
    status, text = curl(name, "POST", "/hosts", json.dumps({"name": "h9"}), token=tenant)
    assert (status, json.loads(text)["code"]) == (403, "forbidden")
    assert curl(name, "DELETE", "/links/h1-h2", token=tenant)[0] == 403
    status, text = curl(name, "POST", "/hosts", json.dumps({"name": "h9"}))
    assert (status, json.loads(text)["name"]) == (201, "h9"), text
    assert curl(name, "POST", "/hosts", json.dumps({"name": "h9"}))[0] == 200
    hosts = controller(name, "host", "list", "--json").stdout
    assert "h9" in [h["name"] for h in json.loads(hosts)]
    status, text = curl(name, "POST", "/links", json.dumps({"a": "h9", "b": "h8", "rate": 10}))
    assert status == 404 and json.loads(text)["field"] == "b", text
    status, text = curl(name, "POST", "/hosts", json.dumps({"name": "pc1"}))  # an end host's
    assert (status, json.loads(text)["code"]) == (409, "inventory-conflict"), text
    status, text = curl(name, "POST", "/hosts", json.dumps({"name": "9bad"}))
    assert (status, json.loads(text)["field"]) == (422, "name"), text
    removed = json.loads(controller(name, "host", "remove", "h9", "--json").stdout)
    assert (removed["kind"], removed["name"], removed["moved"]) == ("host", "h9", [])
    assert "h9" not in [h["name"] for h in json.loads(curl(name, "GET", "/hosts")[1])]
    status, text = curl(name, "DELETE", "/hosts/h99")
    assert (status, json.loads(text)["code"]) == (404, "unknown-host")


@pytest.fixture(autouse=True)
def _no_connections_left(lab: tuple[str, Path]) -> None:  # noqa: F811
    """Each test starts on a lab without the controller's connections."""
    assert json.loads(conn(lab[0], "list", "--json").stdout) == []
