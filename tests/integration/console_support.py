"""A real controller for the console's browser tests: the 40-end-host example lab of two
tenants on four hosts (real namespaces and agents), `vnet controller run` serving on loopback
with the lab's agents reached through the lab's management namespace, and Debian's Chromium
driven by Playwright (its own browser download is never used)."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import signal
import socket
import ssl
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from ruamel.yaml import YAML

from vnet.lab import lab as labmod
from vnet.lab.access import agent_endpoint
from vnet.tools.wait import wait_until

from .conftest import EXAMPLES, ROOT, VNET, Labs, unique_lab

CHROMIUM = "/usr/bin/chromium"
# where the screenshots and the measured figures go (out/ is not committed)
OUTPUT = Path(os.environ.get("VNET_TEST_OUTPUT", ROOT / "out")) / "console"
# paper 001's test size: 40 end hosts of tenants red and blue over 4 hosts (h1..h4, a square
# with the diagonal h1-h3, 1 Gbit/s links); the console's figures are measured on it
EXAMPLE = EXAMPLES / "controller-40.yaml"


def example_lab(name: str) -> dict[str, Any]:
    """The example under a new name, without its `controller:` section: the test runs its own
    controller on loopback, where the browser reaches it."""
    data = YAML(typ="safe").load(EXAMPLE.read_text())
    data.pop("controller", None)
    data["name"] = name
    return data


@dataclass
class Controller:
    url: str  # https://127.0.0.1:port
    provider_token: str
    lab: str
    certificate: str  # its self-signed certificate, which the clients verify

    @property
    def spki_sha256(self) -> str:
        """The base64 SHA-256 of the certificate's public key: what Chromium pins."""
        cert = x509.load_pem_x509_certificate(Path(self.certificate).read_bytes())
        spki = cert.public_key().public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        return base64.b64encode(hashlib.sha256(spki).digest()).decode()

    @property
    def console(self) -> str:
        return self.url + "/ui/"

    def api(self, method: str, path: str, token: str | None = None, **kw: Any) -> httpx.Response:
        """The JSON API, as an independent client would use it."""
        headers = {"Authorization": f"Bearer {token or self.provider_token}"}
        trust = ssl.create_default_context(cafile=self.certificate)
        return httpx.request(
            method, self.url + "/api/v1" + path, headers=headers, timeout=60, verify=trust, **kw
        )

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


def controller_config(lab: str, lab_file: Path, state: Path, hosts: list[str]) -> Path:
    """A ControllerConfig for the lab: inventory = the lab's file, its agents reached from the
    lab's management namespace with the lab's password (in a 0600 file)."""
    agents = []
    for host in hosts:
        ep = agent_endpoint(lab, host)
        secret = state / f"{host}.password"
        secret.write_text(ep.password or "")
        secret.chmod(0o600)
        agents.append(
            {"host": host, "address": ep.address, "netconf_port": ep.port,
             "user": ep.user, "password_file": str(secret), "namespace": ep.namespace,
             "hostkey": ep.hostkey}
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
    data = example_lab(name)
    lab_file.write_text(json.dumps(data))  # JSON is YAML
    labs.names.append(name)
    labmod.up(lab_file)
    state = labs.tmp / f"{name}-controller"
    state.mkdir(mode=0o700)
    config = controller_config(name, lab_file, state, [h["name"] for h in data["hosts"]])
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
        yield Controller(ready["url"], token, name, ready["certificate"])
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
