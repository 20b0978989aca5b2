"""The controller's southbound seam: what it asks of one host's agent, step by step.

A transaction across agents (controller.agents.transaction) is made of these steps, each on
one host: take the candidate's lock, edit the candidate, validate it, a confirmed commit
under a persist token, then confirm (or cancel) by that token, discard, let go of the lock.
Reads give the connection pieces and VRs a host holds, its class and shaper counters, and
whether it answers. The production implementation speaks NETCONF to real agents
(controller.agents.netconf); `memory.MemorySouthbound` keeps each host's HostConfig in
memory, checks it as an agent does and fails at any step it is told to, for the service's
logic tests and for sizes one machine cannot emulate.

Errors are vnet.client's, as an agent's client raises them: ClientError when the agent
answered with an rpc-error (its tag, message and path), ConnectError when it did not answer
(TimedOut: not in time). A `Lease` is the session that took a host's lock: the steps after
`lock` run on that session only, and fail with ConnectError once it ended (the agent then
dropped the lock and discarded the candidate itself).

A `Subscription` is a long-lived session of its own to one agent that carries the agent's
notifications (RFC 5277): each change of an underlay interface's operational state as an
`UnderlayNotice`. It is the controller's to close; once the session ended (the agent stopped,
or a probe was not answered in time) every `next` raises ConnectError.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Protocol

from vnet.client import ConnectError
from vnet.model.controller_config import AgentEndpoint
from vnet.model.host_guarantees import ConnectionPieces, Locator
from vnet.model.topology import Route, VirtualNetwork, VirtualRouter

Lease = int  # the session that holds a host's candidate lock
Counters = dict[str, int]  # bytes, packets, drops


@dataclass(frozen=True)
class HostChange:
    """What one host's agent must change of the controller's connections for one request."""

    host: str
    put: tuple[ConnectionPieces, ...] = ()  # create, or replace whole, these connections' pieces
    delete: tuple[str, ...] = ()  # remove these connections' pieces (by connection name)
    locators: tuple[Locator, ...] = ()  # locators the pieces need (merged; never removed here)


@dataclass(frozen=True)
class CreateRouter:
    """A new VR (refused if one of that name exists)."""

    router: VirtualRouter


@dataclass(frozen=True)
class AddRoutes:
    """Routes merged into an existing VR's (one to the same destination is replaced)."""

    router: str
    routes: tuple[Route, ...]


@dataclass(frozen=True)
class CreateNetwork:
    """A new virtual network on the host, with the VTEPs of its other carriers."""

    network: VirtualNetwork
    vteps: tuple[str, ...] = ()


@dataclass(frozen=True)
class DeleteRouter:
    """A VR gone, with the SRv6 locators it owns on the host (none there: no error)."""

    router: str


@dataclass(frozen=True)
class RemoveRoutes:
    """Routes of an existing VR gone, by destination (one it lacks: no error)."""

    router: str
    destinations: tuple[str, ...]


@dataclass(frozen=True)
class DeleteNetwork:
    """A virtual network gone from the host (one it does not carry: no error)."""

    network: str


InventoryEdit = (
    CreateRouter | AddRoutes | CreateNetwork | DeleteRouter | RemoveRoutes | DeleteNetwork
)
Edit = HostChange | InventoryEdit


@dataclass(frozen=True)
class UnderlayNotice:
    """An agent's word that one of its underlay interfaces went up or down."""

    host: str
    interface: str
    up: bool


class Notices:
    """The notices of one subscription as they arrive, and its end: what `next` gives."""

    def __init__(self) -> None:
        self._queue: asyncio.Queue[UnderlayNotice | ConnectError] = asyncio.Queue()

    def hear(self, notice: UnderlayNotice) -> None:
        self._queue.put_nowait(notice)

    def end(self, why: str) -> None:
        self._queue.put_nowait(ConnectError(why))

    async def next(self) -> UnderlayNotice:
        got = await self._queue.get()
        if isinstance(got, ConnectError):
            self._queue.put_nowait(got)  # every later call says so too
            raise got
        return got


class Subscription(Protocol):
    """One agent's notification stream on a session of its own (see the module's words)."""

    async def next(self) -> UnderlayNotice:
        """The next notice (waits for it); ConnectError once the session ended."""
        ...

    async def underlay(self) -> dict[str, bool]:
        """Underlay interface -> whether it is up (its oper-status), as the agent sees it now
        (read on this session after it subscribed: a change after the read is a notice)."""
        ...

    async def probe(self, timeout: float) -> None:
        """An RPC on the session, answered within `timeout` s (else TimedOut: the caller
        closes the subscription); ConnectError if it ended."""
        ...

    async def close(self) -> None: ...


class Southbound(Protocol):
    """The agents of the hosts the controller manages, one step of a transaction at a time."""

    @property
    def hosts(self) -> Collection[str]:
        """The hosts it has an agent for."""
        ...

    def add_agent(self, host: str, access: AgentEndpoint) -> None:
        """Reach `host`'s agent as `access` says from now on (a host added while the
        controller runs; the same access again changes nothing). ValueError if `access`
        cannot be used (a secret file unreadable, no pinned host key...): nothing changed."""
        ...

    # -- the steps of a transaction, on one host --------------------------------------
    async def lock(self, host: str) -> Lease: ...
    async def edit(self, host: str, lease: Lease, edits: Sequence[Edit]) -> None:
        """The edits into the candidate, in order."""
        ...

    async def validate(self, host: str, lease: Lease) -> None: ...
    async def commit(self, host: str, lease: Lease, token: str, timeout: int) -> None:
        """A confirmed commit under `token`, rolled back by the agent after `timeout` s."""
        ...

    async def confirm(self, host: str, token: str) -> None:
        """Confirm the commit pending under `token` (from any session)."""
        ...

    async def cancel(self, host: str, token: str) -> None:
        """Roll back the commit pending under `token` now (from any session)."""
        ...

    async def discard(self, host: str, lease: Lease) -> None: ...
    async def unlock(self, host: str, lease: Lease | None) -> None:
        """Let go of the lock (None: on whatever session is open now)."""
        ...

    # -- reads of running and state -----------------------------------------------------
    async def connections(self, host: str) -> list[ConnectionPieces]: ...
    async def routers(self, host: str) -> list[str]:
        """The names of the VRs running holds."""
        ...

    async def router_configs(self, host: str) -> list[VirtualRouter]:
        """The VRs running holds, whole (their `host` is `host`)."""
        ...

    async def class_bytes(self, host: str) -> dict[tuple[str, str], int]:
        """(underlay interface, network class) -> bytes sent."""
        ...

    async def shaper_counters(self, host: str, connection: str) -> dict[str, Counters]:
        """Ingress VR -> its shaper's counters, for one connection."""
        ...

    async def reachable(self, host: str) -> bool:
        """Whether the agent answers (a refusal is an answer)."""
        ...

    # -- the agent's notifications ----------------------------------------------------------
    async def subscribe(self, host: str) -> Subscription:
        """A new session to the agent, subscribed to its notifications (ConnectError if the
        agent cannot be reached)."""
        ...

    async def close(self) -> None: ...
