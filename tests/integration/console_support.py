"""A real controller for the console's browser tests: a lab of two tenants on three hosts in a
line (real namespaces and agents), `vnet controller run` serving on loopback with the lab's
agents reached through the lab's management namespace, and Debian's Chromium driven by
Playwright (its own browser download is never used)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from vnet.lab import lab as labmod
from vnet.tools.wait import wait_until

from .conftest import ROOT, VNET, Labs, unique_lab

CHROMIUM = "/usr/bin/chromium"
# where the screenshots and the measured figures go (out/ is not committed)
OUTPUT = Path(os.environ.get("VNET_TEST_OUTPUT", ROOT / "out")) / "console"
HOSTS = ("h1", "h2", "h3")
TENANTS = ("red", "blue")
LINK_RATE = "200mbit"


def two_tenant_line(name: str) -> dict[str, Any]:
    """Hosts h1-h2-h3 in a line; each tenant has a VR on every host (consecutive VRs share a
    network) and an end host behind its first and last VR."""
    networks, routers, endhosts = [], [], []
    for t, tenant in enumerate(TENANTS):
        nets = [f"{tenant}-lan1", f"{tenant}-c12", f"{tenant}-c23", f"{tenant}-lan3"]
        for k, net in enumerate(nets):
            networks.append(
                {"name": net, "tenant": tenant, "vni": 600 + 10 * t + k,
                 "ipv4": f"10.6{t}.{k + 1}.0/24", "ipv6": f"fd00:6{t}:{k + 1}::/64"}
            )  # fmt: skip
        for i in (1, 2, 3):
            interfaces = [
                {"network": nets[k], "ipv4": f"10.6{t}.{k + 1}.{200 + i}/24",
                 "ipv6": f"fd00:6{t}:{k + 1}::{200 + i:x}/64"}
                for k in (i - 1, i)
            ]  # fmt: skip
            routers.append({"name": f"{tenant}-r{i}", "host": f"h{i}", "interfaces": interfaces})
        for i, k in ((1, 0), (3, 3)):
            endhosts.append(
                {"name": f"{tenant}-pc{i}", "host": f"h{i}", "network": nets[k],
                 "ipv4": f"10.6{t}.{k + 1}.1/24", "ipv6": f"fd00:6{t}:{k + 1}::1/64"}
            )  # fmt: skip
    return {
        "name": name,
        "hosts": [{"name": h} for h in HOSTS],
        "links": [{"a": a, "b": b, "rate": LINK_RATE} for a, b in (("h1", "h2"), ("h2", "h3"))],
        "management": {"user": "admin"},
        "tenants": [{"name": t, "routing": "auto"} for t in TENANTS],
        "networks": networks,
        "routers": routers,
        "endhosts": endhosts,
    }  # fmt: skip


@dataclass
class Controller:
    url: str  # http://127.0.0.1:port
    provider_token: str
    lab: str

    @property
    def console(self) -> str:
        return self.url + "/ui/"

    def api(self, method: str, path: str, token: str | None = None, **kw: Any) -> httpx.Response:
        """The JSON API, as an independent client would use it."""
        headers = {"Authorization": f"Bearer {token or self.provider_token}"}
        return httpx.request(method, self.url + "/api/v1" + path, headers=headers, timeout=60, **kw)

    def token(self, tenant: str | None = None, expires_in: int | None = None) -> str:
        body = {"role": "tenant" if tenant else "provider", "tenant": tenant}
        if expires_in:
            body["expires_in"] = expires_in
        answer = self.api("POST", "/tokens", json=body)
        assert answer.status_code in (200, 201), answer.text
        return answer.json()["token"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def controller_config(lab: str, lab_file: Path, state: Path) -> Path:
    """A ControllerConfig for the lab: inventory = the lab's file, its agents reached from the
    lab's management namespace with the lab's password (in a 0600 file)."""
    agents = []
    for host in HOSTS:
        ep = labmod.agent_endpoint(lab, host)
        secret = state / f"{host}.password"
        secret.write_text(ep.password or "")
        secret.chmod(0o600)
        agents.append(
            {"host": host, "address": ep.address, "netconf_port": ep.netconf_port,
             "user": ep.user, "password_file": str(secret), "namespace": ep.namespace}
        )  # fmt: skip
    config = {
        "state_dir": str(state),
        "listen": "127.0.0.1",
        "port": free_port(),
        "inventory": str(lab_file),
        "agents": agents,
        "utilisation_interval": 1.0,
    }
    path = state / "controller.yaml"
    path.write_text(json.dumps(config))  # JSON is YAML
    return path


def start_controller(labs: Labs) -> Iterator[Controller]:
    """For a module fixture: the lab up, its controller serving; both stopped afterwards."""
    name = unique_lab()
    lab_file = labs.tmp / f"{name}.yaml"
    lab_file.write_text(json.dumps(two_tenant_line(name)))
    labs.names.append(name)
    labmod.up(lab_file)
    state = labs.tmp / f"{name}-controller"
    state.mkdir(mode=0o700)
    config = controller_config(name, lab_file, state)
    log = (state / "controller.log").open("w")
    proc = subprocess.Popen(
        [VNET, "controller", "run", "--config", str(config)], stdout=log, stderr=subprocess.STDOUT
    )
    try:
        ready_file = state / "controller.ready"

        def exited() -> str | None:
            return None if proc.poll() is None else f"controller exited: {read(state)}"

        wait_until(ready_file.exists, 90, "the controller serves", interval=0.2, give_up=exited)
        ready = json.loads(ready_file.read_text())
        token = Path(ready["provider_token_file"]).read_text().strip()
        yield Controller(ready["url"], token, name)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def read(state: Path) -> str:
    return (state / "controller.log").read_text()[-3000:]
