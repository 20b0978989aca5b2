"""What a transaction across agents is given (HostChange) and raises (AgentError)."""

from __future__ import annotations

from dataclasses import dataclass

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

    def __init__(self, host: str, reason: str, tag: str | None = None, path: str | None = None):
        super().__init__(f"host {host}: {reason}")
        self.host = host
        self.reason = reason
        self.tag = tag  # the agent's error-tag; None: the agent could not be reached
        self.path = path  # the agent's error-path, if it gave one


class ConfirmError(AgentError):
    """After every host committed and `on_committed` ran, a host could not be confirmed
    in time: that host goes back at its confirm timeout while the others keep the change.
    Not 'back where it was': the caller must reconcile that host (recovery does)."""
