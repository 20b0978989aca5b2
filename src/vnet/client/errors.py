"""What a client raises: an agent's or the controller's refusal, or no one to talk to."""

from __future__ import annotations

from typing import Any

from vnet.model.controller_api import ErrorBody, Shortfall
from vnet.model.rate import format_rate


class ClientError(Exception):
    """The agent answered with an error (NETCONF rpc-error, RESTCONF ietf-restconf:errors)."""

    def __init__(
        self,
        tag: str,
        message: str,
        path: str | None = None,
        status: int | None = None,
        app_tag: str | None = None,  # error-app-tag: which refusal, for a program to match
    ) -> None:
        super().__init__(message)
        self.tag, self.message, self.path, self.status = tag, message, path, status
        self.app_tag = app_tag

    def __str__(self) -> str:
        where = f" at {self.path}" if self.path else ""
        return f"{self.tag}{where}: {self.message}"

    def to_dict(self) -> dict[str, Any]:
        return {"error-tag": self.tag, "error-path": self.path, "error-message": self.message}


class ConnectError(Exception):
    """The agent (or controller) could not be reached, or did not answer in time."""


class TimedOut(ConnectError):
    """The agent did not answer within the endpoint's timeout: the connect (every phase of
    it) or an RPC."""


class Refused(ConnectError):
    """Nothing listens where the agent should: it is not running (the connect was refused).
    An agent rolls back a confirmed commit still pending when it starts, so nothing sent
    before can be confirmed there any more."""


class AuthError(ConnectError):
    """The agent refused the login, or its identity is not the pinned one."""


def _rate(bits: int) -> str:
    return format_rate(bits) if bits else "0"  # format_rate spells zero "0gbit"


class ControllerError(Exception):
    """The controller said no (any non-2xx answer): its ErrorBody, whole. Nothing changed."""

    def __init__(self, error: ErrorBody) -> None:
        super().__init__(error.reason)
        self.error = error

    @property
    def status(self) -> int:
        return self.error.status

    @property
    def code(self) -> str:
        return self.error.code

    @property
    def reason(self) -> str:
        return self.error.reason

    @property
    def field(self) -> str | None:
        return self.error.field

    @property
    def shortfalls(self) -> list[Shortfall]:
        return self.error.shortfalls

    @property
    def host(self) -> str | None:
        return self.error.host

    def lines(self) -> list[str]:
        """The reason, where, and every link direction that lacks capacity, one per line."""
        where = f" (field {self.field})" if self.field else ""
        at = f" on host {self.host}" if self.host and self.host not in self.reason else ""
        out = [f"{self.code} (HTTP {self.status}){at}: {self.reason}{where}"]
        out += [
            f"  link {s.link} {s.direction}: requested {_rate(s.requested_bps)}, "
            f"free {_rate(s.free_bps)}, missing {_rate(s.missing_bps)}"
            for s in self.shortfalls
        ]
        out += [
            f"  connection {u.tenant}/{u.connection} ({' -> '.join(u.path)}): {u.reason}"
            for u in self.error.unmovable
        ]
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines())
