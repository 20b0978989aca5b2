"""`vnet controller run`'s process life in-process (issue 12, part 1): migrate, provider token
file, ready file once listening, real HTTP, clean stop on SIGTERM; the CLI's token and migrate
commands and its precise errors. The service is the HTTP-layer tests' in-memory one; the
real-process test with the real Service is tests/integration/test_controller_api_process.py."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import socket
import ssl
import stat
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner
from sqlalchemy import select

from tests.controller_api_support import FakeService
from vnet.cli import main
from vnet.client import ConnectError, ControllerClient
from vnet.controller import server
from vnet.controller.api.auth import Authenticator, digest
from vnet.controller.db import default_url, make_engine, session_factory
from vnet.controller.db.models import ApiToken
from vnet.controller.errors import Unauthorized
from vnet.model.controller_config import ControllerConfig
from vnet.tools.tls import fingerprint


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def fake_service(*_: object) -> FakeService:
    return FakeService()


def stored_hashes(state_dir: Path) -> list[str]:
    engine = make_engine(default_url(state_dir))
    try:
        with session_factory(engine)() as session:
            return list(session.scalars(select(ApiToken.sha256)))
    finally:
        engine.dispose()


def refused_by_client(url: str, token: str) -> str:
    """What `vnet conn ...` says to a controller whose certificate it was not given."""
    with ControllerClient(url, token) as client, pytest.raises(ConnectError) as caught:
        client.whoami()
    return str(caught.value)


def test_serves_until_sigterm_and_cleans_up(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "vnet.controller")
    config = ControllerConfig(state_dir=tmp_path / "state", port=free_port())
    seen: dict[str, object] = {}

    async def client_then_stop() -> None:
        while not config.ready_path.exists():
            await asyncio.sleep(0.02)
        ready = seen["ready"] = json.loads(config.ready_path.read_text())
        token = config.provider_token_path.read_text().strip()
        # HTTPS by default, verified against the self-signed certificate the ready file names
        trust = ssl.create_default_context(cafile=ready["certificate"])
        async with httpx.AsyncClient(base_url=ready["url"], verify=trust) as http:
            r = await http.get("/api/v1/whoami", headers={"Authorization": f"Bearer {token}"})
            seen["whoami"] = r.json()
        async with httpx.AsyncClient(base_url=ready["url"]) as unverified:  # the system's CAs
            with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
                await unverified.get("/api/v1/whoami")
        seen["refused"] = await asyncio.to_thread(refused_by_client, ready["url"], token)
        os.kill(os.getpid(), signal.SIGTERM)

    async def both() -> None:
        await asyncio.gather(server.serve(config, None, fake_service), client_then_stop())

    asyncio.run(asyncio.wait_for(both(), 60))
    assert seen["whoami"] == {"role": "provider", "tenant": None}
    assert seen["ready"]["pid"] == os.getpid()  # type: ignore[index]
    assert seen["ready"]["url"].startswith("https://")  # type: ignore[index]
    assert "does not trust" in str(seen["refused"]) and "--ca-file" in str(seen["refused"])
    assert "SHA-256 fingerprint " + fingerprint(config.certificate_path) in caplog.text
    assert not config.ready_path.exists()  # removed on the way out
    token_file = config.provider_token_path
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    assert digest(token_file.read_text().strip()) in stored_hashes(config.state_dir)


def test_the_provider_token_file_is_kept_and_registered(tmp_path: Path) -> None:
    """A token file that is there (a new database behind it) is kept and its hash stored."""
    state = tmp_path / "state"
    state.mkdir()
    token_file = tmp_path / "provider.token"
    token_file.write_text("vnet_handmade\n")
    token_file.chmod(0o600)
    config = ControllerConfig(state_dir=state, provider_token_file=token_file)
    server.prepare_database(config).dispose()
    server.prepare_database(config).dispose()  # twice: still one row
    assert token_file.read_text() == "vnet_handmade\n"
    assert stored_hashes(state) == [digest("vnet_handmade")]


def test_a_port_in_use_is_a_precise_start_error(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        config = ControllerConfig(state_dir=tmp_path, port=port)
        with pytest.raises(server.StartError, match=f"cannot listen on 127.0.0.1:{port}"):
            asyncio.run(server.serve(config, None, fake_service))
    assert not config.ready_path.exists()


def test_cli_token_create_and_migrate(tmp_path: Path) -> None:
    config_file = tmp_path / "controller.yaml"
    config_file.write_text(f"state_dir: {tmp_path / 'state'}\n")
    runner = CliRunner()
    r = runner.invoke(main, ["controller", "migrate", "--config", str(config_file)])
    assert r.exit_code == 0, r.output
    assert "is at the current schema" in r.output
    r = runner.invoke(
        main,
        ["controller", "token", "create", "--config", str(config_file), "--role", "provider"],
    )
    assert r.exit_code == 0, r.output
    token = r.output.strip()
    assert token.startswith("vnet_")
    assert digest(token) in stored_hashes(tmp_path / "state")
    r = runner.invoke(
        main,
        [
            *("controller", "token", "create", "--config", str(config_file)),
            *("--role", "tenant", "--tenant", "nobody"),
        ],
    )
    assert r.exit_code != 0
    assert "--tenant: unknown tenant 'nobody'" in r.output


def test_cli_configuration_errors_name_the_setting(tmp_path: Path) -> None:
    config_file = tmp_path / "controller.yaml"
    config_file.write_text(f"state_dir: {tmp_path}\nport: 99999\ncolour: red\n")
    r = CliRunner().invoke(main, ["controller", "run", "--config", str(config_file)])
    assert r.exit_code != 0
    assert "port: Input should be less than or equal to 65535" in r.output
    assert "colour: Extra inputs are not permitted" in r.output
    r = CliRunner().invoke(main, ["controller", "migrate"])
    assert "state_dir: Field required" in r.output


def test_cli_token_revoke(tmp_path: Path) -> None:
    config_file = tmp_path / "controller.yaml"
    config_file.write_text(f"state_dir: {tmp_path / 'state'}\n")
    runner = CliRunner()
    common = ["controller", "token"]
    made = runner.invoke(
        main, [*common, "create", "--config", str(config_file), "--role", "provider"]
    )
    token = made.output.strip()
    r = runner.invoke(main, [*common, "revoke", "--config", str(config_file), "-"], input=token)
    assert (r.exit_code, r.output.strip()) == (0, "revoked")
    engine = make_engine(default_url(tmp_path / "state"))
    try:
        authenticator = Authenticator(session_factory(engine))
        with pytest.raises(Unauthorized, match="the token was revoked at"):
            asyncio.run(authenticator.authenticate(token))
    finally:
        engine.dispose()
    r = runner.invoke(main, [*common, "revoke", "--config", str(config_file), token])
    assert r.exit_code != 0 and "revoked already" in r.output
