"""The parameters of <commit> and <cancel-commit> (RFC 6241 Sec. 8.3 and 8.4, as
:confirmed-commit:1.1 defines them), read into keyword arguments of the datastore's
`commit` and `cancel_commit`."""

from __future__ import annotations

from typing import Any

from lxml import etree

from vnet.model.yang.errors import ErrorTag, ErrorType, RpcError
from vnet.model.yang.module import NETCONF_NS as NC

MAX_TIMEOUT = 2**32 - 1  # confirm-timeout is a uint32 of seconds
COMMIT_PARAMETERS = ("confirmed", "confirm-timeout", "persist", "persist-id")


def _parameters(op: etree._Element, allowed: tuple[str, ...]) -> dict[str, str]:
    """Each parameter's text; clients such as ncclient may send them unqualified."""
    found: dict[str, str] = {}
    for child in op:
        if not isinstance(child.tag, str):
            continue
        name = etree.QName(child)
        if name.localname not in allowed or name.namespace not in (NC, None):
            raise RpcError(
                ErrorTag.UNKNOWN_ELEMENT,
                f"<{etree.QName(op).localname}> has no parameter <{name.localname}>",
                ErrorType.PROTOCOL,
                info={"bad-element": name.localname},
            )
        found[name.localname] = (child.text or "").strip()
    return found


def _bad(element: str, message: str) -> RpcError:
    return RpcError(
        ErrorTag.INVALID_VALUE, message, ErrorType.PROTOCOL, info={"bad-element": element}
    )


def _timeout(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= MAX_TIMEOUT:
        raise _bad("confirm-timeout", f"confirm-timeout {text[:20]!r} is not 1..{MAX_TIMEOUT} s")
    return int(text)


def commit_options(op: etree._Element) -> dict[str, Any]:
    """Keyword arguments of `Datastore.commit` for this <commit>."""
    given = _parameters(op, COMMIT_PARAMETERS)
    confirmed = "confirmed" in given
    if not confirmed:
        for name in ("confirm-timeout", "persist"):
            if name in given:
                raise _bad(name, f"<{name}> is valid only with <confirmed/>")
    options: dict[str, Any] = {"confirmed": confirmed}
    if "confirm-timeout" in given:
        options["confirm_timeout"] = _timeout(given["confirm-timeout"])
    if "persist" in given:
        if not given["persist"]:
            raise _bad("persist", "<persist> needs a token")
        options["persist"] = given["persist"]
    if "persist-id" in given:
        options["persist_id"] = given["persist-id"]
    return options


def cancel_options(op: etree._Element) -> dict[str, Any]:
    """Keyword arguments of `Datastore.cancel_commit` for this <cancel-commit>."""
    given = _parameters(op, ("persist-id",))
    return {"persist_id": given["persist-id"]} if "persist-id" in given else {}
