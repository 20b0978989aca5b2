"""The protocol front-ends of the agent. Each lives in its own package and
exposes `start(datastore, config)` returning something with `close()`;
adding a protocol means adding a line here, nothing else."""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from vnet.agent.datastore import Datastore
from vnet.model.agent_config import AgentConfig


class Running(Protocol):
    async def close(self) -> None: ...


Starter = Callable[[Datastore, AgentConfig], Awaitable[Running]]

FRONTENDS: dict[str, str] = {
    "netconf": "vnet.agent.netconf.frontend:start",
    "restconf": "vnet.agent.restconf.frontend:start",
    "snmp": "vnet.agent.snmp.frontend:start",
}


def starter(name: str) -> Starter:
    module, attr = FRONTENDS[name].split(":")
    fn: Any = getattr(importlib.import_module(module), attr)
    return fn  # type: ignore[no-any-return]
