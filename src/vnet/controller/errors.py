"""What the controller answers when it says no: one exception per HTTP status class.

The service raises these; the API turns each into its status and an `ErrorBody`
(vnet.model.controller_api). Every one means nothing changed, in the database or on
any agent.
"""

from __future__ import annotations

from collections.abc import Sequence

from vnet.controller.agents.changes import NO_AGENT
from vnet.model.controller_api import ErrorBody, Shortfall, Unmovable


class ServiceError(Exception):
    status = 400
    code = "bad-request"

    def __init__(self, reason: str, *, field: str | None = None, code: str | None = None):
        super().__init__(reason)
        self.reason = reason
        self.field = field
        if code is not None:
            self.code = code

    def body(self) -> ErrorBody:
        return ErrorBody(status=self.status, code=self.code, reason=self.reason, field=self.field)


class BadRequest(ServiceError):
    """Input that names nothing valid: a bandwidth of zero, a path that is not adjacent."""


class Unauthorized(ServiceError):
    status = 401
    code = "unauthorized"


class Forbidden(ServiceError):
    """A tenant administrator touching another tenant (or the provider's objects)."""

    status = 403
    code = "forbidden"


class NotFound(ServiceError):
    """An unknown tenant, host, VR, end host or connection (code says which kind)."""

    status = 404
    code = "not-found"


class Conflict(ServiceError):
    """The request contradicts the state: a name in use, a modify of a released connection."""

    status = 409
    code = "conflict"


class InUse(Conflict):
    """Something others still hold, named in the answer: `holders` ("connection 'v'", "VR
    'r1'"); for a host or link whose connections cannot be moved off it, `unmovable` says
    why for each. `reason`: the message, if not "<what> is in use by <holders>"."""

    code = "in-use"

    def __init__(
        self,
        what: str,
        holders: list[str],
        unmovable: Sequence[Unmovable] = (),
        reason: str | None = None,
        **kw: str,
    ):
        super().__init__(reason or f"{what} is in use by {', '.join(holders)}", **kw)
        self.holders, self.unmovable = holders, list(unmovable)

    def body(self) -> ErrorBody:
        update = {"holders": self.holders, "unmovable": self.unmovable}
        return super().body().model_copy(update=update)


class Gone(ServiceError):
    """What the request names existed and is no more: a retried create whose connection was
    released since."""

    status = 410
    code = "gone"


class Rejected(ServiceError):
    """Admission said no: `shortfalls` names every link direction that lacks how much."""

    status = 409
    code = "no-capacity"

    def __init__(self, reason: str, shortfalls: list[Shortfall] | None = None, **kw: str):
        super().__init__(reason, **kw)
        self.shortfalls = shortfalls or []

    def body(self) -> ErrorBody:
        return super().body().model_copy(update={"shortfalls": self.shortfalls})


class AgentRefused(ServiceError):
    """An agent refused or failed during realisation; every host is back where it was, or
    the reason says which host still holds what, and until when (service/putback.py)."""

    status = 502
    code = "agent-refused"

    def __init__(self, host: str, reason: str, tag: str | None = None):
        super().__init__(f"host {host}: {reason}")
        self.host = host
        self.tag = tag
        if tag == NO_AGENT:  # nothing was sent: the inventory has no agent there (409)
            self.status, self.code = 409, "no-agent"

    def noted(self, note: str) -> AgentRefused:
        """The same refusal, its reason followed by `note` (what stays where, and why)."""
        noted = AgentRefused(self.host, "", self.tag)
        noted.reason = f"{self.reason}; {note}"
        noted.args = (noted.reason,)
        return noted

    def body(self) -> ErrorBody:
        return super().body().model_copy(update={"host": self.host})
