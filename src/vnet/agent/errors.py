"""Errors every front-end can render: NETCONF rpc-error (RFC 6241 Appendix A)
and RESTCONF errors (RFC 8040 section 7) share one shape."""

from __future__ import annotations

from dataclasses import dataclass, field

# RFC 8040 section 7: error-tag -> HTTP status
HTTP_STATUS = {
    "in-use": 409,
    "invalid-value": 400,
    "too-big": 413,
    "missing-attribute": 400,
    "bad-attribute": 400,
    "unknown-attribute": 400,
    "missing-element": 400,
    "bad-element": 400,
    "unknown-element": 400,
    "unknown-namespace": 400,
    "access-denied": 403,
    "lock-denied": 409,
    "resource-denied": 409,
    "rollback-failed": 500,
    "data-exists": 409,
    "data-missing": 409,
    "operation-not-supported": 405,
    "operation-failed": 500,
    "partial-operation": 500,
    "malformed-message": 400,
}


@dataclass
class RpcError(Exception):
    tag: str
    message: str
    error_type: str = "application"  # transport, rpc, protocol, application
    path: str | None = None
    severity: str = "error"
    info: dict[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        where = f" at {self.path}" if self.path else ""
        return f"{self.tag}{where}: {self.message}"

    @property
    def http_status(self) -> int:
        return HTTP_STATUS.get(self.tag, 500)


def invalid(message: str, path: str | None = None) -> RpcError:
    return RpcError("invalid-value", message, "application", path)
