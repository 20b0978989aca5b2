"""NETCONF over SSH (RFC 6242) with asyncssh: the "netconf" subsystem, password
or public-key login for the users in the agent's configuration."""

from __future__ import annotations

import asyncio
import hmac
import logging
from pathlib import Path
from typing import Any

import asyncssh

from vnet.agent.datastore import Datastore
from vnet.agent.logins import LoginThrottle
from vnet.agent.netconf.session import Session
from vnet.agent.private_files import write_private
from vnet.model.agent_config import HOSTKEY_FILE, AgentConfig

log = logging.getLogger("vnet.agent.netconf")


def host_key(state_dir: Path) -> asyncssh.SSHKey:
    """The agent's SSH host key, made on first start so clients can pin it."""
    path = state_dir / HOSTKEY_FILE
    if not path.exists():
        key = asyncssh.generate_private_key("ssh-ed25519")
        write_private(path, key.export_private_key())
    return asyncssh.read_private_key(str(path))


class _Auth(asyncssh.SSHServer):
    def __init__(self, config: AgentConfig, throttle: LoginThrottle):
        self.config = config
        self.throttle = throttle
        self.conn: asyncssh.SSHServerConnection | None = None

    def connection_made(self, conn: asyncssh.SSHServerConnection) -> None:
        self.conn = conn

    def begin_auth(self, username: str) -> bool:
        user = self.config.user(username)
        if user is not None and user.authorized_keys and self.conn is not None:
            self.conn.set_authorized_keys(
                asyncssh.import_authorized_keys("\n".join(user.authorized_keys))
            )
        return True

    def password_auth_supported(self) -> bool:
        return True

    def public_key_auth_supported(self) -> bool:
        return True

    def validate_password(self, username: str, password: str) -> bool:
        user = self.config.user(username)
        peer = self.conn.get_extra_info("peername") if self.conn is not None else None
        source = str(peer[0]) if peer else "?"
        return self.throttle.check(
            source,
            username,
            lambda: bool(
                user
                and user.password is not None
                and hmac.compare_digest(user.password.encode(), password.encode())
            ),
        )


async def serve(ds: Datastore, config: AgentConfig) -> asyncssh.SSHAcceptor:
    async def handle(process: asyncssh.SSHServerProcess[bytes]) -> None:
        if process.subsystem != "netconf":
            process.stderr.write(b"only the netconf subsystem is offered here\n")
            process.exit(1)
            return
        user = process.get_extra_info("username")

        def close() -> None:
            if not process.is_closing():
                process.exit(0)

        session = Session(ds, user, process.stdin.read, process.stdout.write, close)
        session.reader.max_message = config.netconf_max_message
        await session.run()

    throttle = LoginThrottle("NETCONF/SSH")
    return await asyncssh.create_server(
        lambda: _Auth(config, throttle),
        config.address,
        config.ports.netconf,
        server_host_keys=[host_key(config.state_dir)],
        process_factory=handle,
        encoding=None,
        allow_pty=False,
        x11_forwarding=False,
        agent_forwarding=False,
        line_editor=False,
        keepalive_interval=30,
    )


async def wait_closed(server: Any) -> None:
    server.close()
    await asyncio.wait_for(server.wait_closed(), 5)
