"""The one error of the YANG codec and of every front-end, and its renderers per wire format.

NETCONF rpc-error (RFC 6241 section 4.3, tags from Appendix A) and RESTCONF
errors (RFC 8040 section 7) carry the same fields; only the rendering and
RESTCONF's HTTP status differ.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any
from xml.sax.saxutils import escape

from vnet.model.yang.module import NAMESPACE, PREFIX, RESTCONF_NS


class ErrorTag(StrEnum):
    """RFC 6241 Appendix A error-tag values."""

    IN_USE = "in-use"
    INVALID_VALUE = "invalid-value"
    TOO_BIG = "too-big"
    MISSING_ATTRIBUTE = "missing-attribute"
    BAD_ATTRIBUTE = "bad-attribute"
    UNKNOWN_ATTRIBUTE = "unknown-attribute"
    MISSING_ELEMENT = "missing-element"
    BAD_ELEMENT = "bad-element"
    UNKNOWN_ELEMENT = "unknown-element"
    UNKNOWN_NAMESPACE = "unknown-namespace"
    ACCESS_DENIED = "access-denied"
    LOCK_DENIED = "lock-denied"
    RESOURCE_DENIED = "resource-denied"
    ROLLBACK_FAILED = "rollback-failed"
    DATA_EXISTS = "data-exists"
    DATA_MISSING = "data-missing"
    OPERATION_NOT_SUPPORTED = "operation-not-supported"
    OPERATION_FAILED = "operation-failed"
    PARTIAL_OPERATION = "partial-operation"
    MALFORMED_MESSAGE = "malformed-message"


class AppTag(StrEnum):
    """error-app-tag values (RFC 6241 section 4.3): where a client must tell one refusal
    from another of the same error-tag, it matches these, never the English message."""

    # <commit> with a persist-id or <cancel-commit>: no confirmed commit is pending that
    # this caller may settle (none at all, or one of another session or token)
    NOTHING_PENDING = "vnet-nothing-pending"


class ErrorType(StrEnum):
    """The layer an error belongs to (RFC 6241 section 4.3)."""

    TRANSPORT = "transport"
    RPC = "rpc"
    PROTOCOL = "protocol"
    APPLICATION = "application"


# RFC 8040 section 7: error-tag -> HTTP status
HTTP_STATUS = {
    ErrorTag.IN_USE: 409,
    ErrorTag.INVALID_VALUE: 400,
    ErrorTag.TOO_BIG: 413,
    ErrorTag.MISSING_ATTRIBUTE: 400,
    ErrorTag.BAD_ATTRIBUTE: 400,
    ErrorTag.UNKNOWN_ATTRIBUTE: 400,
    ErrorTag.MISSING_ELEMENT: 400,
    ErrorTag.BAD_ELEMENT: 400,
    ErrorTag.UNKNOWN_ELEMENT: 400,
    ErrorTag.UNKNOWN_NAMESPACE: 400,
    ErrorTag.ACCESS_DENIED: 403,
    ErrorTag.LOCK_DENIED: 409,
    ErrorTag.RESOURCE_DENIED: 409,
    ErrorTag.ROLLBACK_FAILED: 500,
    ErrorTag.DATA_EXISTS: 409,
    ErrorTag.DATA_MISSING: 409,
    ErrorTag.OPERATION_NOT_SUPPORTED: 405,
    ErrorTag.OPERATION_FAILED: 500,
    ErrorTag.PARTIAL_OPERATION: 500,
    ErrorTag.MALFORMED_MESSAGE: 400,
}


@dataclass
class RpcError(Exception):
    """An error with an RFC 6241 tag and, where known, the schema path of the culprit."""

    tag: ErrorTag
    message: str
    error_type: ErrorType = ErrorType.APPLICATION
    path: str | None = None
    severity: str = "error"
    info: dict[str, str] = field(default_factory=dict)
    app_tag: AppTag | None = None

    def __post_init__(self) -> None:
        # Members only, no free strings: a misspelt tag fails where it is raised,
        # not as a malformed reply later (a StrEnum would compare equal to a string).
        if not isinstance(self.tag, ErrorTag):
            raise TypeError(f"RpcError tag must be an ErrorTag, not {self.tag!r}")
        if not isinstance(self.error_type, ErrorType):
            raise TypeError(f"RpcError error_type must be an ErrorType, not {self.error_type!r}")

    def __str__(self) -> str:
        where = f" at {self.path}" if self.path else ""
        return f"{self.tag}{where}: {self.message}"

    @property
    def http_status(self) -> int:
        return HTTP_STATUS.get(self.tag, 500)


def invalid(message: str, path: str | None = None) -> RpcError:
    return RpcError(ErrorTag.INVALID_VALUE, message, ErrorType.APPLICATION, path)


def _path_xml(err: RpcError) -> str:
    if not err.path:
        return ""
    return f'<error-path xmlns:{PREFIX}="{NAMESPACE}">{escape(err.path)}</error-path>'


def _app_tag_xml(err: RpcError) -> str:
    return f"<error-app-tag>{err.app_tag}</error-app-tag>" if err.app_tag else ""


def _info_xml(err: RpcError) -> str:
    info = "".join(f"<{k}>{escape(v)}</{k}>" for k, v in err.info.items())
    return f"<error-info>{info}</error-info>" if info else ""


def netconf_error_xml(err: RpcError) -> str:
    """<rpc-error> (in the NETCONF namespace of the enclosing <rpc-reply>)."""
    return (
        f"<rpc-error><error-type>{err.error_type}</error-type>"
        f"<error-tag>{err.tag}</error-tag><error-severity>{err.severity}</error-severity>"
        f"{_app_tag_xml(err)}{_path_xml(err)}"
        f'<error-message xml:lang="en">{escape(err.message)}</error-message>'
        f"{_info_xml(err)}</rpc-error>"
    )


def restconf_error_json(err: RpcError, path: str | None) -> bytes:
    """RFC 8040 ietf-restconf:errors; `path` is the error path in its JSON form."""
    e: dict[str, Any] = {"error-type": str(err.error_type), "error-tag": str(err.tag)}
    if err.app_tag:
        e["error-app-tag"] = str(err.app_tag)
    if path:
        e["error-path"] = path
    e["error-message"] = err.message
    if err.info:
        e["error-info"] = dict(err.info)
    return json.dumps({"ietf-restconf:errors": {"error": [e]}}, indent=2).encode() + b"\n"


def restconf_error_xml(err: RpcError) -> bytes:
    return (
        f'<errors xmlns="{RESTCONF_NS}"><error><error-type>{err.error_type}</error-type>'
        f"<error-tag>{err.tag}</error-tag>{_app_tag_xml(err)}{_path_xml(err)}"
        f"<error-message>{escape(err.message)}</error-message>"
        f"{_info_xml(err)}</error></errors>"
    ).encode()


def parse_restconf_error(body: Any) -> RpcError:
    """The first error of a decoded ietf-restconf:errors body; KeyError etc. if it is none."""
    e = body["ietf-restconf:errors"]["error"][0]
    tags = {t.value: t for t in ErrorTag}
    types = {t.value: t for t in ErrorType}
    app_tags = {t.value: t for t in AppTag}
    return RpcError(
        tags.get(e.get("error-tag"), ErrorTag.OPERATION_FAILED),
        e.get("error-message", ""),
        types.get(e.get("error-type"), ErrorType.APPLICATION),
        e.get("error-path"),
        info=e.get("error-info", {}),
        app_tag=app_tags.get(e.get("error-app-tag", "")),
    )
