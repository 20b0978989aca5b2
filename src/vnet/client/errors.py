"""What a client of an agent raises: the agent's refusal, or no agent to talk to."""

from __future__ import annotations

from typing import Any


class ClientError(Exception):
    """The agent answered with an error (NETCONF rpc-error, RESTCONF ietf-restconf:errors)."""

    def __init__(
        self, tag: str, message: str, path: str | None = None, status: int | None = None
    ) -> None:
        super().__init__(message)
        self.tag, self.message, self.path, self.status = tag, message, path, status

    def __str__(self) -> str:
        where = f" at {self.path}" if self.path else ""
        return f"{self.tag}{where}: {self.message}"

    def to_dict(self) -> dict[str, Any]:
        return {"error-tag": self.tag, "error-path": self.path, "error-message": self.message}


class ConnectError(Exception):
    """The agent could not be reached (or did not answer in time)."""


class AuthError(ConnectError):
    """The agent refused the login, or its identity is not the pinned one."""
