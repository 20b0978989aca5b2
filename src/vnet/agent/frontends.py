"""The protocol front-ends of the agent. Each lives in its own package and
exposes `start(datastore, config)` returning something with `close()`;
adding a protocol means adding its loader and a line here, nothing else."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

from vnet.agent.datastore import Datastore
from vnet.model.agent_config import AgentConfig


class Running(Protocol):
    async def close(self) -> None: ...


Starter = Callable[[Datastore, AgentConfig], Awaitable[Running]]


def _netconf() -> Starter:
    from vnet.agent.netconf.frontend import start

    return start


def _restconf() -> Starter:
    from vnet.agent.restconf.frontend import start

    return start


def _snmp() -> Starter:
    from vnet.agent.snmp.frontend import start

    return start


# Each protocol's libraries load only when it is served (plain imports, so tools see them).
FRONTENDS: dict[str, Callable[[], Starter]] = {
    "netconf": _netconf,
    "restconf": _restconf,
    "snmp": _snmp,
}


def starter(name: str) -> Starter:
    return FRONTENDS[name]()
