"""One transaction across the agents of several hosts (issue 12, part 6).

`Agents.transaction(request_id, changes)` puts each host's change into its agent's candidate
and validates it, on every affected host in parallel; then a confirmed commit (persist token
= request_id, timeout = confirm_timeout) everywhere; then awaits `on_committed()` (the service
journals COMMITTED there); then confirms everywhere. If any agent refuses or fails before the
confirms, every host goes back where it was (discard-changes / cancel-commit) and AgentError
names the host and the agent's error. A controller that dies between commit and confirm
leaves the agents to roll back by themselves at the timeout; `settle` lets recovery at start
confirm or cancel by the persist token instead of waiting.

Concurrent requests for the same hosts are grouped (group.py): one candidate edit and one
confirmed commit per host for the whole group, whose persist token is the request id of its
first member, a request that touches every host of the group. Recovery settles every
in-flight request on its hosts: `settle` of the group's other members finds nothing pending
under their ids and leaves the hosts alone; the token owner's settle decides for the whole
group, and its COMMITTED in the journal implies every member's (transaction.py, step 4).
`on_committed` runs at most once per request.

Each step reaches a host through the southbound seam (vnet.controller.southbound): NETCONF
agents in production (netconf.py), hosts in memory for logic tests; the steps are in
transaction.py. Reads come back as model objects, their failures as AgentError. Within one
request, a host that did not answer in time is not asked again (unanswered.py).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from typing import TypeVar

from vnet.client import ClientError, ConnectError, TimedOut
from vnet.controller.agents import unanswered
from vnet.controller.agents.changes import NO_AGENT, AgentError, ConfirmError, HostChange
from vnet.controller.agents.group import GroupCommit
from vnet.controller.agents.inventory_edits import InventoryTransaction
from vnet.controller.agents.transaction import (
    Member,
    Transaction,
    agent_error,
    busy,
    cancel,
    nothing_pending,
)
from vnet.controller.southbound import Counters, InventoryEdit, Southbound
from vnet.model.host_guarantees import ConnectionPieces
from vnet.model.topology import VirtualRouter
from vnet.tools.wait import retry_until

__all__ = ["AgentError", "Agents", "ConfirmError", "HostChange"]
T = TypeVar("T")


class Agents:
    """Transactions and reads across the agents of a southbound.

    `group`: group concurrent transactions (group.py; False: one request per transaction);
    `lock_wait`: how long a candidate locked by someone else is waited for (seconds)."""

    def __init__(
        self,
        southbound: Southbound,
        confirm_timeout: int = 60,
        *,
        group: bool = True,
        max_group: int = 256,
        lock_wait: float = 10.0,
    ):
        self.southbound = southbound
        self.confirm_timeout = confirm_timeout
        self.lock_wait = lock_wait
        self._groups = GroupCommit(self._run, max_group if group else 1)

    @property
    def hosts(self) -> Collection[str]:
        """The hosts with an agent."""
        return self.southbound.hosts

    # -- transactions -----------------------------------------------------------------
    async def transaction(
        self,
        request_id: str,
        changes: Sequence[HostChange],
        on_committed: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        by_host = self._by_host(changes)
        if not by_host:  # nothing to change on any agent
            if on_committed is not None:
                await on_committed()
            return
        unanswered.check(by_host)
        try:
            await self._groups.submit(Member(request_id, by_host, on_committed))
        except AgentError as err:
            unanswered.note(err.timed_out)
            raise

    async def change_inventory(
        self,
        request_id: str,
        edits: Mapping[str, Sequence[InventoryEdit]],
        on_committed: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        """Apply `edits` (host -> its VRs, networks, routes) on every host at once, or on
        none (AgentError naming the host that refused)."""
        await InventoryTransaction(
            self.southbound, request_id, edits, on_committed, self.confirm_timeout, self.lock_wait
        ).run()

    @property
    def groups(self) -> int:
        """Transactions run so far (one per group of requests)."""
        return self._groups.groups

    def _by_host(self, changes: Sequence[HostChange]) -> dict[str, HostChange]:
        """One change per host (several for a host are concatenated); an unknown host is
        refused before anything is sent."""
        out: dict[str, HostChange] = {}
        for c in changes:
            if c.host not in self.hosts:
                raise AgentError(c.host, "the controller has no agent for this host", NO_AGENT)
            had = out.get(c.host)
            out[c.host] = (
                c
                if had is None
                else HostChange(
                    c.host, had.put + c.put, had.delete + c.delete, had.locators + c.locators
                )
            )
        return {h: c for h, c in out.items() if c.put or c.delete or c.locators}

    async def _run(self, members: list[Member]) -> None:
        await Transaction(self.southbound, members, self.confirm_timeout, self.lock_wait).run()

    # -- recovery -----------------------------------------------------------------------
    async def settle(self, request_id: str, hosts: Sequence[str], confirm: bool) -> None:
        """Confirm (or cancel) a pending confirmed commit made under `request_id` on `hosts`;
        a host with nothing pending under that token is left alone."""
        results = await asyncio.gather(
            *(self._settle_host(h, request_id, confirm) for h in hosts), return_exceptions=True
        )
        for result in results:
            if isinstance(result, BaseException):
                raise result

    async def _settle_host(self, host: str, token: str, confirm: bool) -> None:
        self._require(host)
        if not confirm:
            await cancel(self.southbound, host, token)
            return

        async def confirm_pending() -> None:
            try:
                await self.southbound.confirm(host, token)
            except ClientError as err:
                if not nothing_pending(err):
                    raise

        try:
            await retry_until(confirm_pending, time.monotonic() + self.lock_wait, busy)
        except (ClientError, ConnectError) as err:
            raise agent_error(host, err) from None

    # -- reading ------------------------------------------------------------------------
    def _require(self, host: str) -> None:
        if host not in self.hosts:
            raise AgentError(host, "the controller has no agent for this host", NO_AGENT)

    async def _read(self, host: str, read: Callable[[], Awaitable[T]]) -> T:
        self._require(host)
        unanswered.check([host])
        try:
            return await read()
        except TimedOut as err:
            unanswered.note([host])
            raise agent_error(host, err) from None
        except (ClientError, ConnectError) as err:
            raise agent_error(host, err) from None

    async def connections(self, host: str) -> list[ConnectionPieces]:
        """The connection pieces the host's agent holds in running."""
        return await self._read(host, lambda: self.southbound.connections(host))

    async def routers(self, host: str) -> list[str]:
        """The names of the VRs the host's agent holds in running."""
        return await self._read(host, lambda: self.southbound.routers(host))

    async def router_configs(self, host: str) -> list[VirtualRouter]:
        """The VRs the host's agent holds in running, whole."""
        return await self._read(host, lambda: self.southbound.router_configs(host))

    async def class_bytes(self, host: str) -> dict[tuple[str, str], int]:
        """(underlay interface, network class) -> bytes sent, from the agent's state."""
        return await self._read(host, lambda: self.southbound.class_bytes(host))

    async def shaper_counters(self, host: str, connection: str) -> dict[str, Counters]:
        """Ingress VR -> its shaper's bytes/packets/drops, for one connection on `host`."""
        return await self._read(host, lambda: self.southbound.shaper_counters(host, connection))

    async def reachable(self, host: str) -> bool:
        return host in self.hosts and await self.southbound.reachable(host)

    async def finish(self) -> None:
        """The transactions under way are done."""
        await self._groups.close()

    async def close(self) -> None:
        await self.finish()
        await self.southbound.close()
