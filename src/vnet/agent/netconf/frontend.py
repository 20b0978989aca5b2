"""Registers NETCONF with the agent (see vnet.agent.frontends)."""

from __future__ import annotations

from vnet.agent.datastore import Datastore
from vnet.agent.netconf.server import serve, wait_closed
from vnet.model.agent_config import AgentConfig


class NetconfFrontend:
    def __init__(self, server: object):
        self.server = server

    async def close(self) -> None:
        await wait_closed(self.server)


async def start(ds: Datastore, config: AgentConfig) -> NetconfFrontend:
    return NetconfFrontend(await serve(ds, config))
