"""Typed clients of a vnet agent: NETCONF (ncclient) and RESTCONF (httpx), and of the
controller's API (`ControllerClient`, httpx).

Everything that talks to an agent (the CLI, the lab, benchmarks, tests)
uses these; nothing outside vnet.agent imports server code. Both return
vnet.model objects (VirtualRouter, VirtualNetwork) or `RouterState`, and
raise ClientError (the agent's tag, path and message), ConnectError or
AuthError. The controller's client raises ControllerError (its ErrorBody) or ConnectError.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from vnet.client.endpoint import DEFAULT_PORTS, Endpoint
from vnet.client.errors import (
    AuthError,
    ClientError,
    ConnectError,
    ControllerError,
    Refused,
    TimedOut,
)
from vnet.tools import netns

if TYPE_CHECKING:
    from vnet.client.controller import ControllerClient, read_token
    from vnet.client.netconf import NetconfClient, connect_manager
    from vnet.client.restconf import RestconfClient
    from vnet.client.routers import InterfaceState, RouterState

    AgentClient = NetconfClient | RestconfClient


def __getattr__(name: str) -> Any:
    """The clients, each loaded when first asked for: the controller and a lab's `lab up`
    talk NETCONF only (no httpx), `vnet conn` talks to the controller only (no ncclient)."""
    module: Any
    if name in ("ControllerClient", "read_token"):
        from vnet.client import controller as module
    elif name in ("NetconfClient", "connect_manager"):
        from vnet.client import netconf as module
    elif name == "RestconfClient":
        from vnet.client import restconf as module
    elif name in ("InterfaceState", "RouterState"):
        from vnet.client import routers as module
    elif name == "AgentClient":
        from vnet.client.netconf import NetconfClient
        from vnet.client.restconf import RestconfClient

        return NetconfClient | RestconfClient
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(module, name)


@contextlib.contextmanager
def connect(ep: Endpoint, via: str = "netconf") -> Iterator[AgentClient]:
    """A client of the agent, from inside the endpoint's namespace for the whole block
    (RESTCONF opens its connections lazily)."""
    from vnet.client.netconf import NetconfClient
    from vnet.client.restconf import RestconfClient

    with netns.entered(ep.namespace):
        client: AgentClient = NetconfClient(ep) if via == "netconf" else RestconfClient(ep)
        with client:
            yield client


__all__ = [
    "DEFAULT_PORTS",
    "AgentClient",
    "AuthError",
    "ClientError",
    "ConnectError",
    "ControllerClient",
    "ControllerError",
    "Endpoint",
    "InterfaceState",
    "NetconfClient",
    "Refused",
    "RestconfClient",
    "RouterState",
    "TimedOut",
    "connect",
    "connect_manager",
    "read_token",
]
