"""The southbound seam over NETCONF: each step of a transaction is an RPC to a real agent.

One persistent session per host (session.py: RPCs on worker threads of a pool owned here);
a lease is the session's generation, so the steps after <lock> run on the session that holds
the lock. Connection pieces are one <edit-config> (edits.py), inventory edits the typed
calls of vnet.client.NetconfClient; reads decode with the model's YANG codec.
"""

from __future__ import annotations

import contextlib
from collections.abc import Collection, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

from vnet.client import ClientError, ConnectError, Endpoint, NetconfClient
from vnet.controller.agents.access import endpoint_of, endpoints_of
from vnet.controller.agents.edits import edit_xml
from vnet.controller.agents.notifications import NetconfSubscription
from vnet.controller.agents.session import HostSession
from vnet.controller.southbound import (
    AddRoutes,
    Counters,
    CreateNetwork,
    CreateRouter,
    DeleteNetwork,
    DeleteRouter,
    Edit,
    HostChange,
    Lease,
    RemoveRoutes,
)
from vnet.model.controller_config import AgentAccess, AgentEndpoint, ControllerConfig
from vnet.model.host_guarantees import ConnectionPieces, Locator
from vnet.model.topology import VirtualRouter
from vnet.model.yang.guarantees import (
    connection_of,
    connections_of,
    guarantees_data,
    underlay_of,
)
from vnet.model.yang.module import NAMESPACE

RUNNING, CANDIDATE = "running", "candidate"
# the bytes of the two classes besides the networks', under names no network can have
RESERVED_CLASS, BEST_EFFORT_CLASS = "(reserved)", "(best-effort)"
SRV6 = f'<srv6 xmlns="{NAMESPACE}"/>'


class NetconfSouthbound:
    """The controller's NETCONF sessions to every agent it manages."""

    def __init__(
        self,
        endpoints: Mapping[str, Endpoint],
        timeout: float = 30.0,
        known_hosts: Path | None = None,
    ):
        """`timeout`, `known_hosts`: how the agents added later are reached (endpoint_of)."""
        self.timeout, self.known_hosts = timeout, known_hosts
        self.endpoints: dict[str, Endpoint] = {}
        self.sessions: dict[str, HostSession] = {}
        # the subscriptions' connects, state reads and probes: apart from the transactions'
        self._watch_pools: dict[str, ThreadPoolExecutor] = {}
        for host, endpoint in endpoints.items():
            self._add(host, endpoint)

    @classmethod
    def from_config(cls, config: ControllerConfig) -> NetconfSouthbound:
        """The agents of a controller's configuration (AccessError if one is unusable)."""
        known_hosts = config.known_hosts_path if config.trust_on_first_use else None
        return cls(endpoints_of(config), config.rpc_timeout, known_hosts)

    @property
    def hosts(self) -> Collection[str]:
        return self.sessions.keys()

    def add_agent(self, host: str, access: AgentEndpoint) -> None:
        whole = AgentAccess(host=host, **access.model_dump())
        endpoint = endpoint_of(whole, self.timeout, self.known_hosts)  # AccessError: unusable
        if self.endpoints.get(host) != endpoint:
            self._add(host, endpoint)

    def _add(self, host: str, endpoint: Endpoint) -> None:
        # Each host's threads are its own: one RPC at a time per session needs one (and a
        # host added while the controller runs needs no pool to grow). Made on first use.
        self.endpoints[host] = endpoint
        self.sessions[host] = HostSession(
            host, endpoint, ThreadPoolExecutor(1, thread_name_prefix=f"vnet-agent-{host}")
        )
        # two: a subscription is closed (abort) while its probe may still wait for an answer
        self._watch_pools[host] = ThreadPoolExecutor(2, thread_name_prefix=f"vnet-watch-{host}")

    # -- the steps of a transaction ------------------------------------------------------
    async def lock(self, host: str) -> Lease:
        session = self.sessions[host]

        def lock(client: NetconfClient) -> Lease:
            client.lock(CANDIDATE)
            return session.generation  # the worker thread's: the session just used

        return await session.call(lock)

    async def edit(self, host: str, lease: Lease, edits: Sequence[Edit]) -> None:
        await self.sessions[host].call(lambda c: _apply(c, edits), lease)

    async def validate(self, host: str, lease: Lease) -> None:
        await self.sessions[host].call(lambda c: c.validate(CANDIDATE), lease)

    async def commit(self, host: str, lease: Lease, token: str, timeout: int) -> None:
        await self.sessions[host].call(
            lambda c: c.commit(confirmed=True, timeout=timeout, persist=token), lease
        )

    async def confirm(self, host: str, token: str) -> None:
        await self.sessions[host].call(lambda c: c.commit(persist_id=token))

    async def cancel(self, host: str, token: str) -> None:
        await self.sessions[host].call(lambda c: c.cancel_commit(persist_id=token))

    async def discard(self, host: str, lease: Lease) -> None:
        await self.sessions[host].call(lambda c: c.discard(), lease)

    async def unlock(self, host: str, lease: Lease | None) -> None:
        await self.sessions[host].call(lambda c: c.unlock(CANDIDATE), lease)

    # -- reads -------------------------------------------------------------------------------
    async def _tree(self, host: str, subtree: str, source: str | None) -> dict[str, Any]:
        return await self.sessions[host].call(lambda c: c.get_tree(subtree, source))

    async def connections(self, host: str) -> list[ConnectionPieces]:
        tree = await self._tree(host, SRV6, RUNNING)
        return [connection_of(e) for e in connections_of(tree)]

    async def locators(self, host: str) -> list[Locator]:
        tree = await self._tree(host, SRV6, RUNNING)
        return [Locator.model_validate(x) for x in guarantees_data(tree)["srv6"]["locators"]]

    async def routers(self, host: str) -> list[str]:
        held = await self.sessions[host].call(lambda c: c.routers(state=False))
        return [r.name for r in held]

    async def router_configs(self, host: str) -> list[VirtualRouter]:
        held = await self.sessions[host].call(lambda c: c.routers(state=False))
        return [r.router.model_copy(update={"host": host}) for r in held]

    async def class_bytes(self, host: str) -> dict[tuple[str, str], int]:
        """The reserved and best-effort classes under RESERVED_CLASS and BEST_EFFORT_CLASS."""
        tree = await self._tree(host, f'<underlay xmlns="{NAMESPACE}"/>', None)
        out: dict[tuple[str, str], int] = {}
        for itf in underlay_of(tree):
            name = itf["name"]
            for cls in itf.get("class", []):
                out[(name, cls["network"])] = _bytes(cls.get("statistics"))
            out[(name, RESERVED_CLASS)] = _bytes(itf.get("reserved-statistics"))
            out[(name, BEST_EFFORT_CLASS)] = _bytes(itf.get("best-effort-statistics"))
        return out

    async def shaper_counters(self, host: str, connection: str) -> dict[str, Counters]:
        """The ingress pieces of both IP families share one shaper: each VR appears once."""
        tree = await self._tree(
            host,
            f'<srv6 xmlns="{NAMESPACE}"><connection><name>{escape(connection)}</name>'
            "</connection></srv6>",
            None,
        )
        return {
            ingress["router"]: _counters(ingress.get("statistics"))
            for entry in connections_of(tree)
            if entry.get("name") == connection
            for ingress in entry.get("ingress", [])
        }

    async def reachable(self, host: str) -> bool:
        try:
            await self._tree(host, f'<srv6 xmlns="{NAMESPACE}"><locator/></srv6>', RUNNING)
        except ClientError:
            return True  # the agent answered (even a refusal): it is there
        except ConnectError:
            return False
        return True

    async def subscribe(self, host: str) -> NetconfSubscription:
        return await NetconfSubscription.open(host, self.endpoints[host], self._watch_pools[host])

    async def close(self) -> None:
        for session in self.sessions.values():
            with contextlib.suppress(Exception):
                await session.close()
            session.pool.shutdown(wait=False)
        for pool in self._watch_pools.values():
            pool.shutdown(wait=False)


def _apply(client: NetconfClient, edits: Sequence[Edit]) -> None:
    """The edits into the candidate: connection pieces as one <edit-config>, then each
    inventory edit as the client's call."""
    pieces = [e for e in edits if isinstance(e, HostChange)]
    if pieces:
        client.edit(edit_xml(pieces), CANDIDATE)
    for edit in edits:
        if isinstance(edit, CreateRouter):
            client.create_router(edit.router, target=CANDIDATE)
        elif isinstance(edit, AddRoutes):
            client.add_routes(edit.router, list(edit.routes), target=CANDIDATE)
        elif isinstance(edit, CreateNetwork):
            client.create_network(edit.network, list(edit.vteps), target=CANDIDATE)
        elif isinstance(edit, DeleteRouter):
            client.remove_router(edit.router, target=CANDIDATE)
        elif isinstance(edit, RemoveRoutes):
            client.remove_routes(edit.router, list(edit.destinations), target=CANDIDATE)
        elif isinstance(edit, DeleteNetwork):
            client.remove_network(edit.network, target=CANDIDATE)


def _counters(counters: dict[str, Any] | None) -> Counters:
    return {key: int((counters or {}).get(key, 0)) for key in ("bytes", "packets", "drops")}


def _bytes(counters: dict[str, Any] | None) -> int:
    return int((counters or {}).get("bytes", 0))
