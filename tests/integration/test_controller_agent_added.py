"""A host's agent given through the API while `vnet controller run` runs (a real process on
the session's triangle lab, driven with curl): the controller's configuration names the
agents of h1 and h2 only, so a connection to pc3 (on h3) is refused; POST /hosts with h3's
agent (its address, user, pinned host key and a password file in the controller's
agent_secrets_dir) makes the controller reach it at once: the connection is established on
every host of its path, h3's agent holding its pieces (read with an independent NETCONF
session). After a restart with the same configuration (its inventory file too) the
controller reaches h3's agent again (kept in the database): h3 is up and the release
removes the pieces from it; a host and a link added through the API before the restart are
still there."""

from __future__ import annotations

import json
from pathlib import Path

from vnet.lab.access import agent_endpoint
from vnet.tools.processes import stop_child
from vnet.tools.wait import wait_until

from .controller_service_support import HOSTS, Lab
from .test_controller_api_process import Controller, curl, lab, post_json, start, write_config

__all__ = ["lab"]  # the fixture, borrowed

VIDEO = {"name": "video", "a": "pc1", "b": "pc3", "protocol": "udp", "dst_port": 5004}


def h3_agent(c: Controller, lab: Lab) -> dict[str, object]:
    """What POST /hosts carries for h3: its password in the secrets directory, named."""
    ep = agent_endpoint(lab.name, "h3")
    c.config.secrets_dir.mkdir(parents=True, exist_ok=True)
    (c.config.secrets_dir / "h3.password").write_text(f"{ep.password}\n")
    return {
        "address": ep.address,
        "netconf_port": ep.port,
        "user": ep.user,
        "password_file": "h3.password",
        "hostkey": ep.hostkey,
        "namespace": ep.namespace,
    }


def status_of(c: Controller, provider: str, host: str) -> str:
    hosts = curl(c, "GET", "/hosts", provider).json()
    return next(h["status"]["state"] for h in hosts if h["name"] == host)  # type: ignore[attr-defined]


def test_an_agent_given_through_the_api_is_reached_at_once_and_after_a_restart(
    lab: Lab, tmp_path: Path
) -> None:
    config = write_config(lab, tmp_path, None, hosts=("h1", "h2"))
    c = start(config, tmp_path / "controller.log")
    try:
        provider = c.config.provider_token_path.read_text().strip()
        body = {**VIDEO, "bandwidth": "5mbit"}
        refused = post_json(c, "/tenants/acme/connections", provider, body)
        assert (refused.status, refused.json()["code"]) == (409, "no-agent"), refused.body  # type: ignore[index]
        assert "h3" in refused.json()["reason"]  # type: ignore[index]
        assert lab.controller_pieces() == {host: set() for host in HOSTS}

        added = post_json(c, "/hosts", provider, {"name": "h3", "agent": h3_agent(c, lab)})
        assert added.status == 201, added.body
        view = added.json()
        assert (view["name"], view["reachable"]) == ("h3", True)  # type: ignore[index]
        wait_until(lambda: status_of(c, provider, "h3") == "up", 10, "h3 up")

        made = post_json(c, "/tenants/acme/connections", provider, body)
        assert made.status == 201, made.body
        assert made.json()["connection"]["path"][-1] == "h3"  # type: ignore[index]
        held = lab.controller_pieces()
        assert held["h3"] and held["h3"] == held["h1"]  # its pieces, on both ends

        # a host and a link added through the API: the restart below, with the same
        # inventory file, keeps them (it used to refuse to start)
        assert post_json(c, "/hosts", provider, {"name": "h4"}).status == 201
        link = {"a": "h3", "b": "h4", "rate": "1gbit"}
        assert post_json(c, "/links", provider, link).status == 201

        stop_child(c.process)
        c = start(config, tmp_path / "controller-again.log")
        provider = c.config.provider_token_path.read_text().strip()
        wait_until(lambda: status_of(c, provider, "h3") == "up", 10, "h3 up after a restart")
        hosts = json.loads(curl(c, "GET", "/hosts", provider).body)
        assert {h["name"]: h["agent"] for h in hosts}["h3"] == view["agent"]  # type: ignore[index]
        assert "h4" in {h["name"] for h in hosts}
        assert "h3-h4" in {x["name"] for x in json.loads(curl(c, "GET", "/links", provider).body)}
    finally:
        # released whatever happened (the lab is shared): its pieces go from every host
        gone = curl(c, "DELETE", "/tenants/acme/connections/video", provider)
        stop_child(c.process)
    assert gone.status == 200, gone.body
    assert lab.controller_pieces() == {host: set() for host in HOSTS}
