"""The controller's configuration (`agents:`, AgentAccess) as vnet.client Endpoints."""

from __future__ import annotations

from pathlib import Path

from vnet.client import Endpoint
from vnet.model.controller_config import AgentAccess, ControllerConfig
from vnet.tools.sshkeys import HostKeyError, key_base64


class AccessError(ValueError):
    """An agent's access cannot be used as configured (what, for which host, why)."""


def endpoint_of(
    access: AgentAccess, timeout: float = 30.0, known_hosts: Path | None = None
) -> Endpoint:
    """How to reach one agent; its password read from `password_file` (one line). Without
    a pinned `hostkey` the agent is refused unless `known_hosts` (trust on first use) is given."""
    hostkey = None
    if access.hostkey is not None:
        try:
            hostkey = key_base64(access.hostkey)
        except HostKeyError as err:
            raise AccessError(f"agent of host {access.host!r}: hostkey: {err}") from None
    elif known_hosts is None:
        raise AccessError(
            f"agent of host {access.host!r} ({access.address}): its SSH host key is not pinned;"
            f" run `vnet agent hostkey` on {access.host} and put what it prints in that agent's"
            " `hostkey`, or set `trust_on_first_use: true` to keep the key it shows first"
        )
    password = None
    if access.password_file is not None:
        try:
            password = access.password_file.read_text().strip()
        except OSError as err:
            raise AccessError(
                f"agent of host {access.host!r}: cannot read password_file "
                f"{str(access.password_file)!r}: {err.strerror}"
            ) from None
    return Endpoint(
        address=access.address,
        port=access.netconf_port,
        user=access.user,
        password=password,
        namespace=access.namespace,
        hostkey=hostkey,
        known_hosts=str(known_hosts) if hostkey is None and known_hosts else None,
        key_file=str(access.key_file) if access.key_file is not None else None,
        timeout=timeout,
        host=access.host,
    )


def endpoints_of(config: ControllerConfig) -> dict[str, Endpoint]:
    """Host -> Endpoint for every agent of the configuration; a host named twice is refused."""
    out: dict[str, Endpoint] = {}
    known_hosts = config.known_hosts_path if config.trust_on_first_use else None
    for access in config.agents:
        if access.host in out:
            raise AccessError(f"agents: host {access.host!r} is given twice")
        out[access.host] = endpoint_of(access, config.rpc_timeout, known_hosts)
    return out
