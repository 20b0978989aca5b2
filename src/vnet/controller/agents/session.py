"""One persistent NETCONF session per agent, driven from worker threads.

ncclient is synchronous, so every RPC runs on a thread of a pool the controller owns;
the asyncio side awaits it. One session per host is kept open between requests (an
SSH login costs far more than an RPC) and opened again when it has ended (the agent
restarted or ended it): a call that finds it ended, or fails because it just ended, goes
to a new session. Calls on one session are serialised: one conversation at a time.

A transaction that holds the agent's candidate lock must not carry on over a *new*
session (the agent released the lock and discarded the candidate when the old one
ended): it pins the session's `generation` and a call on another generation fails.

Calls that were waiting for their turn while the call ahead of them timed out fail with it
(TimedOut), unsent: the agent just went a whole timeout without answering, and each would
wait as long again (a request's step queued behind the watcher's or the poller's read of a
hung agent waited two timeouts). A call that comes later is sent: an agent may answer again
at any moment.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from vnet.client import ClientError, ConnectError, Endpoint, NetconfClient, TimedOut

log = logging.getLogger("vnet.controller.agents")
T = TypeVar("T")


class SessionLost(ConnectError):
    """The session a transaction pinned ended; what it held on the agent is gone."""


class HostSession:
    def __init__(self, host: str, endpoint: Endpoint, pool: ThreadPoolExecutor):
        self.host = host
        self.endpoint = endpoint
        self.pool = pool  # its owner's to shut down
        self._client: NetconfClient | None = None
        self.generation = 0  # counts the sessions opened; 0: none yet
        self._rpc = asyncio.Lock()
        self._timeouts = 0  # calls that timed out so far

    async def call(self, fn: Callable[[NetconfClient], T], generation: int | None = None) -> T:
        """`fn(client)` on a worker thread. `generation`: only on that session (SessionLost
        if it ended); None: on the open session, or a new one."""
        timeouts = self._timeouts
        async with self._rpc:
            if self._timeouts != timeouts:
                raise TimedOut(
                    f"the agent of {self.host} did not answer in time a call this one waited for"
                )
            loop = asyncio.get_running_loop()
            try:
                return await loop.run_in_executor(self.pool, self._call, fn, generation)
            except TimedOut:
                self._timeouts += 1
                raise

    def _call(self, fn: Callable[[NetconfClient], T], generation: int | None) -> T:
        if self._client is not None and not self._client.connected:
            self._drop(polite=False)  # ended meanwhile (the agent restarted, killed it, ...)
        if generation is not None and (self._client is None or generation != self.generation):
            raise SessionLost(f"the NETCONF session to {self.host}'s agent ended")
        client = self._client
        if client is None:
            return self._attempt(fn, self._connect())
        try:
            return self._attempt(fn, client)
        except ConnectError as err:
            # an unpinned call on a session that ended before it got through: once more
            # on a new one (an agent that did not answer in time is not asked again)
            if generation is not None or isinstance(err, TimedOut) or client.connected:
                raise
            return self._attempt(fn, self._connect())

    def _attempt(self, fn: Callable[[NetconfClient], T], client: NetconfClient) -> T:
        try:
            return fn(client)
        except ClientError:
            raise  # the agent answered: the session is fine
        except ConnectError:
            self._drop(polite=False)  # a <close-session> would wait for the timeout again
            raise
        except Exception as err:  # anything else from the transport: the session is unusable
            self._drop(polite=False)
            raise ConnectError(f"the NETCONF session to {self.host}'s agent broke: {err}") from err

    def _connect(self) -> NetconfClient:
        self._client = NetconfClient(self.endpoint)
        self.generation += 1
        log.debug("NETCONF session %d to %s opened", self.generation, self.host)
        return self._client

    def _drop(self, polite: bool = True) -> None:
        """Forget the session; `polite`: say <close-session> first (the agent answers)."""
        if self._client is not None:
            if polite:
                self._client.close()
            else:
                self._client.abort()
            self._client = None

    async def close(self) -> None:
        async with self._rpc:
            await asyncio.get_running_loop().run_in_executor(self.pool, self._drop)
