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

from vnet.client.controller import ControllerClient, read_token
from vnet.client.endpoint import DEFAULT_PORTS, Endpoint
from vnet.client.errors import AuthError, ClientError, ConnectError, ControllerError, TimedOut
from vnet.client.netconf import NetconfClient, connect_manager
from vnet.client.restconf import RestconfClient
from vnet.client.routers import InterfaceState, RouterState
from vnet.tools import netns

AgentClient = NetconfClient | RestconfClient


@contextlib.contextmanager
def connect(ep: Endpoint, via: str = "netconf") -> Iterator[AgentClient]:
    """A client of the agent, from inside the endpoint's namespace for the whole block
    (RESTCONF opens its connections lazily)."""
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
    "RestconfClient",
    "RouterState",
    "TimedOut",
    "connect",
    "connect_manager",
    "read_token",
]
