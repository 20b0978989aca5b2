"""The controller's log at idle: a lab made from examples/controller.yaml, its controller
polling every agent's class counters each second, writes a bounded number of log lines
however many polls go by (ncclient logged each RPC at INFO: ~150 MB a day), into a file
it owns and rotates by size; what escapes the log (a failed start) still reaches `lab up`."""

from __future__ import annotations

import json

from lxml import etree

from vnet.lab import record as records
from vnet.lab.access import agent_endpoint
from vnet.lab.controller import CONFIG, LOG, controller_dir
from vnet.tools.wait import wait_until

from .agent_support import netconf_connect
from .conftest import Labs, vnet

MONITORING = "urn:ietf:params:xml:ns:yang:ietf-netconf-monitoring"
POLLS = 10  # utilisation polls of one agent to sit through
INTERVAL = 0.2  # s: the lab's controller polls this often (a second by default)
MOST_LINES = 3  # lines an idle controller may write meanwhile, however many polls


def others_rpcs(m) -> int:  # type: ignore[no-untyped-def]
    """RPCs every other session of this agent (the controller's) has sent (RFC 6022)."""
    query = f'<netconf-state xmlns="{MONITORING}"><sessions/></netconf-state>'
    doc = etree.fromstring(m.get(filter=("subtree", query)).data_xml.encode())
    total = 0
    for session in doc.iter(f"{{{MONITORING}}}session"):
        if session.findtext(f"{{{MONITORING}}}session-id") != m.session_id:
            total += int(session.findtext(f"{{{MONITORING}}}in-rpcs") or 0)
    return total


def test_an_idle_controller_writes_a_bounded_log_it_rotates(labs: Labs) -> None:
    name, path = labs.file(
        "controller.yaml",
        lambda t: t.replace("controller:\n", f"controller:\n  utilisation_interval: {INTERVAL}\n"),
    )
    vnet("lab", "up", str(path), timeout=180)
    directory = controller_dir(records.RECORD_DIR, name)
    config = json.loads((directory / CONFIG).read_text())
    assert config["log_file"] == str(directory / LOG)  # the controller owns it: rotated
    assert config["utilisation_interval"] == INTERVAL
    assert config["log_max_bytes"] * (config["log_backups"] + 1) <= 64 * 2**20
    log = directory / LOG
    ep = agent_endpoint(name, "h1")
    with netconf_connect(ep.namespace, ep.address, ep.port, ep.user, ep.password) as m:
        wait_until(lambda: others_rpcs(m) > 0, 30, "the controller polling h1", interval=0.2)
        lines_before, rpcs_before = len(log.read_text().splitlines()), others_rpcs(m)
        wait_until(
            lambda: others_rpcs(m) >= rpcs_before + POLLS,
            POLLS * 5 * INTERVAL + 30,
            f"{POLLS} polls of h1",
            interval=0.5,
        )
    added = log.read_text().splitlines()[lines_before:]
    assert len(added) <= MOST_LINES, "\n".join(added[:20])
    assert not (directory / "controller.out").read_text()  # nothing escaped the log


def test_a_failed_start_shows_what_the_controller_said(labs: Labs) -> None:
    unreachable = "postgresql+psycopg://vnet@127.0.0.1:9/nothing"  # discard port: refused
    _, path = labs.file(
        "controller.yaml",
        lambda t: t.replace("controller:\n", f"controller:\n  database: '{unreachable}'\n"),
    )
    done = vnet("lab", "up", str(path), timeout=180, check=False)
    assert done.returncode != 0
    assert "the controller exited with 1" in done.stderr, done.stderr
    assert "127.0.0.1:9" in done.stderr, done.stderr  # its own words, from controller.out
