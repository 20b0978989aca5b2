"""The controller's configuration (`agents:`, AgentAccess) as vnet.client Endpoints."""

from __future__ import annotations

from vnet.client import Endpoint
from vnet.model.controller_config import AgentAccess, ControllerConfig


class AccessError(Exception):
    """An agent's access cannot be used as configured (what, for which host, why)."""


def endpoint_of(access: AgentAccess, timeout: float = 30.0) -> Endpoint:
    """How to reach one agent; its password read from `password_file` (one line)."""
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
        hostkey=access.hostkey,
        key_file=str(access.key_file) if access.key_file is not None else None,
        timeout=timeout,
        host=access.host,
    )


def endpoints_of(config: ControllerConfig) -> dict[str, Endpoint]:
    """Host -> Endpoint for every agent of the configuration; a host named twice is refused."""
    out: dict[str, Endpoint] = {}
    for access in config.agents:
        if access.host in out:
            raise AccessError(f"agents: host {access.host!r} is given twice")
        out[access.host] = endpoint_of(access)
    return out
