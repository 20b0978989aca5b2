"""RESTCONF message bodies: media types, and a request body as one resource.

A request body holds one resource: `{"vnet-router:router": [{...}]}` or
`<router xmlns="urn:vnet:yang:vnet-router">...</router>`. Both decode (with
model/yang, the one codec) to (name, value) where value is what the
datastore tree holds under that name (a list of entries for a list).
"""

from __future__ import annotations

from typing import Any

from lxml import etree

from vnet.agent.restconf.paths import StatusError
from vnet.model.yang import decode as yang
from vnet.model.yang.errors import RESTCONF_NS, ErrorTag, ErrorType, RpcError
from vnet.model.yang.module import MODULE
from vnet.model.yang.schema import SchemaNode

JSON = "application/yang-data+json"
XML = "application/yang-data+xml"
_JSON_ALIASES = {JSON, "application/json"}
_XML_ALIASES = {XML, "application/xml", "text/xml"}


def media_error(status: int, message: str) -> StatusError:
    """406 or 415: a media type this server does not speak."""
    return StatusError(ErrorTag.INVALID_VALUE, message, ErrorType.PROTOCOL, status=status)


# -- media types ---------------------------------------------------------------
def _media_ranges(header: str) -> list[tuple[str, float]]:
    out = []
    for part in header.split(","):
        fields = [f.strip() for f in part.split(";")]
        if not fields[0]:
            continue
        q = 1.0
        for f in fields[1:]:
            if f.startswith("q="):
                try:
                    q = float(f[2:])
                except ValueError:
                    q = 0.0
        out.append((fields[0].lower(), q))
    return out


def response_type(accept: str | None) -> str:
    """The media type to answer in (JSON unless the client prefers XML); 406 if neither."""
    if not accept:
        return JSON
    best, best_q = None, 0.0
    for rng, q in _media_ranges(accept):
        if q <= 0:
            continue
        if rng in _JSON_ALIASES or rng in ("*/*", "application/*"):
            mt = JSON
        elif rng in _XML_ALIASES:
            mt = XML
        else:
            continue
        if q > best_q:
            best, best_q = mt, q
    if best is None:
        raise media_error(406, f"cannot answer in {accept!r}; accept {JSON} or {XML}")
    return best


def request_format(content_type: str | None) -> str:
    """'json' or 'xml' for a request body's Content-Type; 415 otherwise."""
    mt = (content_type or "").split(";")[0].strip().lower()
    if mt in _JSON_ALIASES:
        return "json"
    if mt in _XML_ALIASES:
        return "xml"
    raise media_error(
        415,
        f"request bodies must be {JSON} or {XML}, not {mt or 'untyped'!r} "
        f"(curl: -H 'Content-Type: {JSON}')",
    )


# -- a request body ---------------------------------------------------------------
def decode(body: bytes, fmt: str, parent: SchemaNode, parent_path: str) -> tuple[str, Any]:
    """One resource from a request body: (its local name, its value).

    `parent` is the schema node whose child the body names (the datastore's
    synthetic root for the top level). A body for the datastore itself
    (`ietf-restconf:data` / <data>) comes back as ("", {qualified: value}).
    """
    raw = yang.parse_json(body) if fmt == "json" else _xml_body(body, parent, parent_path)
    if not isinstance(raw, dict) or len(raw) != 1:
        raise RpcError(
            ErrorTag.MALFORMED_MESSAGE,
            "the body must be one JSON object with exactly one member, the resource "
            f'(e.g. {{"{MODULE}:routers": {{...}}}})',
            ErrorType.PROTOCOL,
        )
    ((member, value),) = raw.items()
    if member != "ietf-restconf:data":
        return yang.json_member(parent, member, value, parent_path)
    if parent.name != "":
        raise RpcError(
            ErrorTag.INVALID_VALUE,
            "'ietf-restconf:data' is the datastore; send it to /restconf/data",
            ErrorType.PROTOCOL,
        )
    if not isinstance(value, dict):
        raise RpcError(
            ErrorTag.INVALID_VALUE,
            f"'ietf-restconf:data' must be a JSON object, not {type(value).__name__}",
            ErrorType.APPLICATION,
            "/",
        )
    return "", yang.tree_from_json(value)


def _xml_body(body: bytes, parent: SchemaNode, parent_path: str) -> dict[str, Any]:
    el = yang.parse_xml(body)
    q = etree.QName(el)
    if q.namespace == RESTCONF_NS and q.localname == "data":
        data: dict[str, Any] = {}
        for child in el:
            if isinstance(child.tag, str):
                data.update(yang.xml_member(child, parent, ""))
        return {"ietf-restconf:data": data}
    return yang.xml_member(el, parent, parent_path if parent_path != "/" else "")
