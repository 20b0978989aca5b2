"""A lab with a `controller:` section (issue 12): `vnet lab up` starts the controller in the
lab's management namespace wired to the lab's agents; `vnet conn request|list|show|release`
work end to end through the command line; `vnet lab down` stops it by PID and leaves nothing.

The lab is the session's (conftest.py `controller_example_labs`, shared with
test_lab_controller_placement.py), once with SQLite (the default) and once with a real
PostgreSQL (vnet.tools.postgres). curl (an independent client) checks the API from the namespace.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from vnet.lab import lab as labmod
from vnet.lab.access import controller_access
from vnet.lab.controller import CONFIG, WHAT
from vnet.tools import processes

from .conftest import Labs, lab_namespaces, require_tools, vnet
from .world_support import SpendableLab, using

# a new database's URL (None: SQLite, the default)
Databases = Callable[[str], str | None]


@pytest.fixture(scope="module")
def databases(controller_databases: Databases) -> Databases:
    """Each lab's controller gets a database of its own: the inventory is one per database."""
    return controller_databases


@pytest.fixture(scope="module")
def lab(controller_example_labs: SpendableLab) -> tuple[str, Path]:
    """The session's lab of examples/controller.yaml on each database, borrowed (conftest.py
    guards it)."""
    return controller_example_labs.borrow()


def controller_pid(name: str) -> processes.ProcessRecord:
    rec = labmod.read_record(name)
    assert rec is not None
    return next(p for p in rec.processes if p.what == WHAT)


def curl(name: str, path: str) -> dict[str, object]:
    access = controller_access(name)
    token = Path(access.token_file).read_text().strip()
    done = subprocess.run(
        [
            *("ip", "netns", "exec", access.namespace, "curl", "-sS", "--max-time", "10"),
            # the lab's controller serves HTTPS with a certificate its clients verify
            *("--cacert", str(access.certificate)),
            *("-H", f"Authorization: Bearer {token}", f"{access.url}/api/v1{path}"),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)


@pytest.mark.both_databases
def test_the_controller_serves_in_the_management_namespace(lab: tuple[str, Path]) -> None:
    name, _ = lab
    proc = controller_pid(name)
    assert processes.is_running(proc)
    access = controller_access(name)
    assert access.namespace == f"vnet-{name}-mgmt"
    ns_of_pid = os.stat(f"/proc/{proc.pid}/ns/net").st_ino
    assert ns_of_pid == os.stat(f"/run/netns/{access.namespace}").st_ino
    assert os.stat(access.token_file).st_mode & 0o777 == 0o600
    assert curl(name, "/whoami") == {"role": "provider", "tenant": None}
    hosts = curl(name, "/hosts")
    assert sorted(h["name"] for h in hosts) == ["h1", "h2", "h3"]  # type: ignore[index]
    status = vnet("lab", "status", name).stdout
    assert f"controller: running (pid {proc.pid})" in " ".join(status.split())


def conn(name: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return vnet("conn", *args, "--lab", name, check=check, timeout=60)


def pieces_on(name: str, host: str) -> list[str]:
    tree = json.loads(conn(name, "list", "--host", host, "--json").stdout)
    return [c["name"] for c in tree.get("vnet-router:srv6", {}).get("connection", [])]


@pytest.mark.both_databases
def test_request_list_show_release_through_the_cli(lab: tuple[str, Path]) -> None:
    name, _ = lab
    args = ("voice", "pc1", "pc3", "--bandwidth", "20mbit", "--protocol", "udp", "--dport", "5060")
    answer = json.loads(conn(name, "request", *args, "--json").stdout)
    view = answer["connection"]
    assert (view["tenant"], view["status"], view["bandwidth"]) == (
        "acme",
        "established",
        20_000_000,
    )
    assert view["path"][0] == "h1" and view["path"][-1] == "h3"
    listed = json.loads(conn(name, "list", "--json").stdout)
    assert [(c["name"], c["status"]) for c in listed] == [("voice", "established")]
    table = conn(name, "list").stdout
    assert "voice" in table and "pc1 -> pc3" in table and "20mbit" in table
    shown = json.loads(conn(name, "show", "voice", "--json").stdout)
    assert shown["path"] == view["path"] and shown["history"]
    # the agents hold the pieces, named by the controller (vc<id>), on every host of the path
    for host in view["path"]:
        assert any(p.startswith("vc") for p in pieces_on(name, host)), host

    released = json.loads(conn(name, "release", "voice", "--json").stdout)
    assert released["status"] == "released"
    assert json.loads(conn(name, "list", "--json").stdout) == []
    for host in view["path"]:
        assert not any(p.startswith("vc") for p in pieces_on(name, host)), host


def test_a_retry_after_release_is_refused_not_established(lab: tuple[str, Path]) -> None:
    """A create retried with the key of a connection released since answers 410 naming it
    (exit 1), never "established" for a connection no agent holds; curl sees the same."""
    name, _ = lab
    args = ("keyed", "pc1", "pc3", "--bandwidth", "5mbit", "--protocol", "udp", "--dport", "5070")
    key = ("--idempotency-key", "order-410")
    first = json.loads(conn(name, "request", *args, *key, "--json").stdout)
    again = json.loads(conn(name, "request", *args, *key, "--json").stdout)
    assert again["connection"] == first["connection"]  # a retry while it lives: its answer
    conn(name, "release", "keyed")
    retried = conn(name, "request", *args, *key, check=False)
    assert retried.returncode == 1, retried
    assert "established" not in retried.stdout + retried.stderr
    assert "connection-released (HTTP 410)" in retried.stderr and "'keyed'" in retried.stderr
    for host in first["connection"]["path"]:
        assert not any(p.startswith("vc") for p in pieces_on(name, host)), host
    body = curl_post(name, "/tenants/acme/connections", first["connection"], "order-410")
    assert (body["status"], body["code"]) == (410, "connection-released"), body


def curl_post(name: str, path: str, view: dict[str, Any], key: str) -> dict[str, Any]:
    """POST a create of `view`'s connection with curl, from the controller's namespace."""
    access = controller_access(name)
    token = Path(access.token_file).read_text().strip()
    fields = ("name", "a", "b", "protocol", "src_port", "dst_port", "bandwidth", "bidirectional")
    request = {f: view[f] for f in fields}
    done = subprocess.run(
        [
            *("ip", "netns", "exec", access.namespace, "curl", "-sS", "--max-time", "10"),
            *("--cacert", str(access.certificate)),
            *("-H", f"Authorization: Bearer {token}", "-H", f"Idempotency-Key: {key}"),
            *("-H", "Content-Type: application/json", "--data-binary", json.dumps(request)),
            f"{access.url}/api/v1{path}",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return dict(json.loads(done.stdout))


def _udp_received_bps(name: str, port: int, offered: str) -> float:
    """Send UDP from pc1 to pc3:port at `offered` for 2 s; the bit/s pc3 received."""
    vnet("lab", "exec", "--lab", name, "pc3", "--", "iperf3", "-s", "-1", "-D", "-p", str(port))
    sent = vnet(
        "lab", "exec", "--lab", name, "pc1", "--",
        "iperf3", "-u", "-c", "10.50.3.1", "-p", str(port), "-b", offered,
        "-t", "2", "-l", "1000", "--connect-timeout", "3000", "-J",
        timeout=30,
    )  # fmt: skip
    return float(json.loads(sent.stdout)["end"]["sum"]["bits_per_second"]) * (
        1 - json.loads(sent.stdout)["end"]["sum"]["lost_percent"] / 100
    )


def test_a_requested_connection_shapes_its_flow_and_only_it(lab: tuple[str, Path]) -> None:
    """A lab with a controller gives its VRs locators and routes to each other's locators
    from the start: without them a controller's connection cut its end hosts apart."""
    require_tools("iperf3")
    name, _ = lab
    args = ("voice", "pc1", "pc3", "--bandwidth", "20mbit", "--protocol", "udp", "--dport", "5060")
    conn(name, "request", *args)
    try:
        # the flow takes the tunnel and its 20 Mbit/s shaper; other traffic keeps its route
        assert 12e6 < _udp_received_bps(name, 5060, "40M") < 24e6
        assert _udp_received_bps(name, 5201, "40M") > 30e6
        vnet("lab", "exec", "--lab", name, "pc1", "--", "ping", "-c1", "-W2", "10.50.3.1")
        # a second connection claiming the same packets is refused by the controller itself
        again = conn(name, "request", "all", "pc1", "pc3", "--bandwidth", "5mbit", check=False)
        assert again.returncode == 1 and "flow-in-use" in again.stderr, again.stderr
        assert "voice" in again.stderr
    finally:
        conn(name, "release", "voice")


def test_a_rejection_names_the_short_link_and_changes_nothing(lab: tuple[str, Path]) -> None:
    name, _ = lab
    voice = ("voice", "pc1", "pc3", "--bandwidth", "20mbit", "--protocol", "udp", "--dport", "5060")
    conn(name, "request", *voice)  # h1 -> h3 directly: 100mbit links, 5 % margin
    bulk = json.loads(
        conn(
            name,
            "request",
            "bulk",
            "pc1",
            "pc3",
            "--bandwidth",
            "85mbit",
            "--protocol",
            "tcp",
            "--json",
        ).stdout
    )
    assert bulk["connection"]["path"] == ["h1", "h2", "h3"]  # h1-h3 has no 85mbit left
    before = json.loads(conn(name, "list", "--json").stdout)
    more = ("more", "pc1", "pc3", "--bandwidth", "85mbit", "--protocol", "udp", "--dport", "6000")
    done = conn(name, "request", *more, check=False)
    assert done.returncode == 1, done
    lines = done.stderr.splitlines()
    assert lines[0].startswith("vnet: the controller says: no-capacity (HTTP 409): "), lines
    assert any(line.startswith("  link h1-h3 h1 -> h3: requested ") for line in lines[1:]), lines
    assert json.loads(conn(name, "list", "--json").stdout) == before
    too_big = conn(name, "request", "x", "pc2", "pc3", "--bandwidth", "150mbit", check=False)
    assert too_big.returncode == 1 and "(field bandwidth)" in too_big.stderr
    bad = conn(name, "request", "x", "pc1", "pc3", "--bandwidth", "lots", check=False)
    assert bad.returncode == 2
    for connection in ("voice", "bulk"):
        conn(name, "release", connection)
    assert json.loads(conn(name, "list", "--json").stdout) == []


def test_a_tenant_token_sees_only_its_tenant(lab: tuple[str, Path], tmp_path: Path) -> None:
    name, _ = lab
    access = controller_access(name)
    token = vnet(
        *("controller", "token", "create", "--config", str(Path(access.state_dir) / CONFIG)),
        *("--role", "tenant", "--tenant", "acme"),
    ).stdout.strip()
    (tmp_path / "acme.token").write_text(token + "\n")
    as_acme = ("--lab", name, "--token-file", str(tmp_path / "acme.token"))
    tenants = json.loads(vnet("tenant", "list", *as_acme, "--json").stdout)
    assert tenants == [{"name": "acme"}]
    refused = vnet("tenant", "create", "intruder", *as_acme, check=False)
    assert refused.returncode == 1
    assert "the controller says: forbidden (HTTP 403)" in refused.stderr
    assert [
        t["name"] for t in json.loads(vnet("tenant", "list", "--lab", name, "--json").stdout)
    ] == ["acme"]


def test_lab_down_stops_the_controller_by_pid_and_leaves_nothing(
    databases: Databases, module_labs: Labs
) -> None:
    name, path = module_labs.file("controller.yaml", using(databases("labctldown")))
    vnet("lab", "up", str(path), timeout=180)
    proc = controller_pid(name)
    state_dir = Path(controller_access(name).state_dir)
    assert processes.is_running(proc)
    down = vnet("lab", "down", name).stdout
    assert f"stopped controller (pid {proc.pid})" in down
    assert not processes.is_running(proc)
    assert lab_namespaces(name) == []
    assert not state_dir.exists() and labmod.read_record(name) is None


def test_reapplying_keeps_it_and_dropping_the_section_stops_it(module_labs: Labs) -> None:
    name, path = module_labs.file("controller.yaml")
    vnet("lab", "up", str(path), timeout=180)
    proc = controller_pid(name)
    vnet("lab", "up", str(path), timeout=180)  # nothing changed: the same controller runs on
    assert controller_pid(name) == proc and processes.is_running(proc)
    text = path.read_text()
    section = text[text.index("controller:\n") : text.index("tenants:")]
    path.write_text(text.replace(section, ""))
    vnet("lab", "up", str(path), timeout=180)
    assert not processes.is_running(proc)
    rec = labmod.read_record(name)
    assert rec is not None and rec.controller is None
    assert all(p.what != WHAT for p in rec.processes)
