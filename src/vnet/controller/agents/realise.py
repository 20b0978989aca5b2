"""One transaction across the agents of several hosts (issue 12, part 6).

CONTRACT (the implementation replaces the bodies; the signatures are what the service uses):

`Agents.transaction(request_id, changes)` puts each host's change into its agent's candidate
and validates it, on every affected host in parallel; then a confirmed commit (persist token
= request_id, timeout = confirm_timeout) everywhere; then awaits `on_committed()` (the service
journals COMMITTED there); then confirms everywhere. If any agent refuses or fails before the
confirms, every host goes back where it was (discard-changes / cancel-commit) and AgentError
names the host and the agent's error. A controller that dies between commit and confirm
leaves the agents to roll back by themselves at the timeout; `settle` lets recovery at start
confirm or cancel by the persist token instead of waiting.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass

from vnet.client import Endpoint
from vnet.model.host_guarantees import ConnectionPieces, Locator


@dataclass(frozen=True)
class HostChange:
    """What one host's agent must change for one request."""

    host: str
    put: tuple[ConnectionPieces, ...] = ()  # create, or replace whole, these connections' pieces
    delete: tuple[str, ...] = ()  # remove these connections' pieces (by connection name)
    locators: tuple[Locator, ...] = ()  # locators the pieces need (merged; never removed here)


class AgentError(Exception):
    """An agent refused or failed; every host of the transaction is back where it was."""

    def __init__(self, host: str, reason: str, tag: str | None = None):
        super().__init__(f"host {host}: {reason}")
        self.host = host
        self.reason = reason
        self.tag = tag


class Agents:
    """The controller's connections to every agent it manages."""

    def __init__(self, endpoints: Mapping[str, Endpoint], confirm_timeout: int = 60):
        self.endpoints = dict(endpoints)
        self.confirm_timeout = confirm_timeout

    async def transaction(
        self,
        request_id: str,
        changes: Sequence[HostChange],
        on_committed: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        raise NotImplementedError

    async def settle(self, request_id: str, hosts: Sequence[str], confirm: bool) -> None:
        """Confirm (or cancel) a pending confirmed commit made under `request_id` on `hosts`;
        a host with nothing pending under that token is left alone."""
        raise NotImplementedError

    async def connections(self, host: str) -> list[ConnectionPieces]:
        """The connection pieces the host's agent holds in running."""
        raise NotImplementedError

    async def locators(self, host: str) -> list[Locator]:
        raise NotImplementedError

    async def class_bytes(self, host: str) -> dict[tuple[str, str], int]:
        """(underlay interface, network class) -> bytes sent, from the agent's state."""
        raise NotImplementedError

    async def reachable(self, host: str) -> bool:
        raise NotImplementedError

    async def close(self) -> None:
        raise NotImplementedError
