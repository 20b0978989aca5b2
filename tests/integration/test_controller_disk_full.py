"""`vnet controller run` whose SQLite database is on a full disk (issue 22): a change is
answered 503 `database-unavailable` naming the database's own reason, with Retry-After, on
a connection the client keeps using (reads still answer, nothing was added); once there is
room again the same change is made. The state directory is a 2 MB tmpfs made for the test,
filled with a file, unmounted after it; the client is Python's http.client, one keep-alive
connection."""

from __future__ import annotations

import http.client
import json
import ssl
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from vnet.tools.processes import stop_child

from .test_controller_api_process import Controller, free_port, start
from .test_durable_commit import fill

V1 = "/api/v1"


@pytest.fixture
def controller(tmp_path: Path) -> Iterator[Controller]:
    state = tmp_path / "state"
    state.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "vnet-test", state], check=True)
    try:
        config = tmp_path / "controller.yaml"
        YAML().dump({"state_dir": str(state), "port": free_port()}, config)
        c = start(config, tmp_path / "controller.log")
        try:
            yield c
        finally:
            stop_child(c.process)
    finally:
        subprocess.run(["umount", state], check=False)


def ask(
    connection: http.client.HTTPConnection, method: str, path: str, token: str, body: object = None
) -> tuple[int, dict[str, str], object]:
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    connection.request(method, V1 + path, json.dumps(body) if body else None, headers)
    answer = connection.getresponse()
    content = answer.read()
    return answer.status, dict(answer.getheaders()), json.loads(content)


def test_a_full_disk_is_503_with_its_reason_and_the_connection_stays(
    controller: Controller,
) -> None:
    c = controller
    token = c.config.provider_token_path.read_text().strip()
    host, port = c.url.removeprefix("https://").rsplit(":", 1)
    verified = ssl.create_default_context(cafile=c.certificate)  # the controller's own
    connection = http.client.HTTPSConnection(host, int(port), timeout=30, context=verified)
    try:
        fill(c.config.state_dir)
        status, headers, body = ask(connection, "POST", "/tenants", token, {"name": "gamma"})
        assert status == 503, body
        assert isinstance(body, dict) and body["code"] == "database-unavailable", body
        assert "full" in body["reason"], body
        assert int(headers["retry-after"]) > 0
        status, _, tenants = ask(connection, "GET", "/tenants", token)  # the same connection
        assert status == 200 and tenants == [], tenants
        (c.config.state_dir / "filler").unlink()
        status, _, body = ask(connection, "POST", "/tenants", token, {"name": "gamma"})
        assert status == 201, body
    finally:
        connection.close()
