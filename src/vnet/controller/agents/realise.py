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

Everything goes through vnet.client over NETCONF (session.py: one session per host, RPCs on
worker threads); the steps are in transaction.py, the edit in edits.py.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from xml.sax.saxutils import escape

from vnet.client import ClientError, ConnectError, Endpoint
from vnet.controller.agents.access import endpoints_of
from vnet.controller.agents.changes import AgentError, ConfirmError, HostChange
from vnet.controller.agents.group import GroupCommit
from vnet.controller.agents.session import HostSession
from vnet.controller.agents.transaction import (
    BUSY,
    FIRST_BACKOFF,
    Member,
    Transaction,
    agent_error,
    backoff,
    cancel,
    nothing_pending,
)
from vnet.model.controller_config import ControllerConfig
from vnet.model.host_guarantees import ConnectionPieces, Locator
from vnet.model.yang.guarantees import (
    connection_of,
    connections_of,
    guarantees_data,
    underlay_of,
)
from vnet.model.yang.module import NAMESPACE

__all__ = ["AgentError", "Agents", "ConfirmError", "HostChange"]
RUNNING = "running"
# the bytes of the two classes besides the networks', under names no network can have
RESERVED_CLASS, BEST_EFFORT_CLASS = "(reserved)", "(best-effort)"


class Agents:
    """The controller's connections to every agent it manages.

    `group`: group concurrent transactions (group.py; False: one request per transaction);
    `lock_wait`: how long a candidate locked by someone else is waited for (seconds)."""

    def __init__(
        self,
        endpoints: Mapping[str, Endpoint],
        confirm_timeout: int = 60,
        *,
        group: bool = True,
        max_group: int = 256,
        lock_wait: float = 10.0,
    ):
        self.endpoints = dict(endpoints)
        self.confirm_timeout = confirm_timeout
        self.lock_wait = lock_wait
        # one RPC at a time per host: a thread per host (and spare for reads) is enough
        self._pool = ThreadPoolExecutor(
            max_workers=len(self.endpoints) + 2, thread_name_prefix="vnet-agents"
        )
        self.sessions = {h: HostSession(h, ep, self._pool) for h, ep in self.endpoints.items()}
        self._groups = GroupCommit(self._run, max_group if group else 1)

    @classmethod
    def from_config(cls, config: ControllerConfig, **options: Any) -> Agents:
        """The agents of a controller's configuration (AccessError if one is unusable)."""
        options.setdefault("lock_wait", config.lock_wait)
        return cls(endpoints_of(config), config.confirm_timeout, **options)

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
        await self._groups.submit(Member(request_id, by_host, on_committed))

    @property
    def groups(self) -> int:
        """Transactions run so far (one per group of requests)."""
        return self._groups.groups

    def _by_host(self, changes: Sequence[HostChange]) -> dict[str, HostChange]:
        """One change per host (several for a host are concatenated); an unknown host is
        refused before anything is sent."""
        out: dict[str, HostChange] = {}
        for c in changes:
            if c.host not in self.sessions:
                raise AgentError(c.host, "the controller has no agent for this host", "unknown")
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
        await Transaction(self.sessions, members, self.confirm_timeout, self.lock_wait).run()

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
        session = self._session(host)
        if not confirm:
            await cancel(session, token)
            return
        delay, deadline = FIRST_BACKOFF, asyncio.get_running_loop().time() + self.lock_wait
        while True:
            try:
                await session.call(lambda c: c.commit(persist_id=token))
                return
            except ClientError as err:
                if nothing_pending(err):
                    return
                if err.tag not in BUSY or asyncio.get_running_loop().time() > deadline:
                    raise agent_error(host, err) from None
            except ConnectError as err:
                raise agent_error(host, err) from None
            delay = await backoff(delay)

    # -- reading ------------------------------------------------------------------------
    def _session(self, host: str) -> HostSession:
        session = self.sessions.get(host)
        if session is None:
            raise AgentError(host, "the controller has no agent for this host", "unknown")
        return session

    async def _tree(self, host: str, subtree: str, source: str | None) -> dict[str, Any]:
        try:
            return await self._session(host).call(lambda c: c.get_tree(subtree, source))
        except (ClientError, ConnectError) as err:
            raise agent_error(host, err) from None

    async def connections(self, host: str) -> list[ConnectionPieces]:
        """The connection pieces the host's agent holds in running."""
        tree = await self._tree(host, f'<srv6 xmlns="{NAMESPACE}"/>', RUNNING)
        return [connection_of(e) for e in connections_of(tree)]

    async def locators(self, host: str) -> list[Locator]:
        tree = await self._tree(host, f'<srv6 xmlns="{NAMESPACE}"/>', RUNNING)
        return [Locator.model_validate(x) for x in guarantees_data(tree)["srv6"]["locators"]]

    async def class_bytes(self, host: str) -> dict[tuple[str, str], int]:
        """(underlay interface, network class) -> bytes sent, from the agent's state; the
        reserved and best-effort classes under RESERVED_CLASS and BEST_EFFORT_CLASS."""
        tree = await self._tree(host, f'<underlay xmlns="{NAMESPACE}"/>', None)
        out: dict[tuple[str, str], int] = {}
        for itf in underlay_of(tree):
            name = itf["name"]
            for cls in itf.get("class", []):
                out[(name, cls["network"])] = _bytes(cls.get("statistics"))
            out[(name, RESERVED_CLASS)] = _bytes(itf.get("reserved-statistics"))
            out[(name, BEST_EFFORT_CLASS)] = _bytes(itf.get("best-effort-statistics"))
        return out

    async def shaper_counters(self, host: str, connection: str) -> dict[str, dict[str, int]]:
        """Ingress VR -> its shaper's bytes/packets/drops, for one connection on `host` (the
        ingress pieces of both IP families share one shaper, so each VR appears once)."""
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
        if host not in self.sessions:
            return False
        try:
            await self._tree(host, f'<srv6 xmlns="{NAMESPACE}"><locator/></srv6>', RUNNING)
        except AgentError as err:
            return err.tag is not None  # the agent answered (even a refusal): it is there
        return True

    async def close(self) -> None:
        await self._groups.close()
        for session in self.sessions.values():
            with contextlib.suppress(Exception):
                await session.close()
        self._pool.shutdown(wait=False)


def _counters(counters: dict[str, Any] | None) -> dict[str, int]:
    return {key: int((counters or {}).get(key, 0)) for key in ("bytes", "packets", "drops")}


def _bytes(counters: dict[str, Any] | None) -> int:
    return int((counters or {}).get("bytes", 0))
