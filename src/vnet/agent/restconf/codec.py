"""RESTCONF message bodies: JSON (RFC 7951) and XML, decoded against the schema
into the datastore's RFC 7951 form, and rendered back.

A request body holds one resource: `{"vnet-router:router": [{...}]}` or
`<router xmlns="urn:vnet:yang:vnet-router">...</router>`. Both decode to
(name, value) where value is what the datastore tree holds under that name
(a list of entries for a list), with precise error paths for unknown
members, wrong types, missing keys and state data.
"""

from __future__ import annotations

import json
from typing import Any
from xml.sax.saxutils import escape

from lxml import etree

from vnet.agent.errors import RpcError
from vnet.agent.restconf.paths import StatusError
from vnet.agent.schema import MODULE, NAMESPACE, PREFIX, SchemaNode

JSON = "application/yang-data+json"
XML = "application/yang-data+xml"
RESTCONF_NS = "urn:ietf:params:xml:ns:yang:ietf-restconf"
_JSON_ALIASES = {JSON, "application/json"}
_XML_ALIASES = {XML, "application/xml", "text/xml"}
_PARSER = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False)

_INTS = {"int8", "int16", "int32", "uint8", "uint16", "uint32"}
_BIG = {"int64", "uint64", "decimal64"}


def media_error(status: int, message: str) -> StatusError:
    """406 or 415: a media type this server does not speak."""
    return StatusError("invalid-value", message, "protocol", status=status)


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


# -- decoding ------------------------------------------------------------------
def _member(name: str, top: bool, path: str) -> str:
    module, sep, local = name.rpartition(":")
    if not sep:
        if top:
            raise RpcError(
                "invalid-value",
                f"the top-level member {name!r} must be module-qualified: '{MODULE}:{name}'",
                "application",
                path or "/",
            )
        return local
    if module != MODULE:
        raise RpcError(
            "unknown-namespace",
            f"{module!r} is not a module of this server (its data model is {MODULE!r})",
            "application",
            path or "/",
            info={"bad-element": local, "bad-namespace": module},
        )
    return local


def _type_error(snode: SchemaNode, value: Any, path: str, want: str) -> RpcError:
    return RpcError(
        "invalid-value",
        f"{snode.name!r} must be {want} ({snode.base_type}), not {json.dumps(value)}",
        "application",
        path,
        info={"bad-element": snode.name},
    )


def _scalar(snode: SchemaNode, value: Any, path: str) -> Any:
    t = snode.base_type
    if t in _INTS:
        if isinstance(value, bool) or not isinstance(value, int):
            raise _type_error(snode, value, path, "a JSON number")
        return value
    if t in _BIG:
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            raise _type_error(snode, value, path, "a number in a JSON string")
        return str(value)
    if t == "boolean":
        if not isinstance(value, bool):
            raise _type_error(snode, value, path, "true or false")
        return value
    if t == "empty":
        if value != [None]:
            raise _type_error(snode, value, path, "[null]")
        return value
    if not isinstance(value, str):
        raise _type_error(snode, value, path, "a JSON string")
    return value


def _pred(snode: SchemaNode, entry: dict[str, Any]) -> str:
    return "".join(f"[{PREFIX}:{k}='{entry.get(k)}']" for k in snode.keys)


def normalize(snode: SchemaNode, value: Any, path: str) -> Any:
    """Check a decoded JSON value against `snode`; return it in the datastore's form."""
    if snode.kind == "leaf":
        return _scalar(snode, value, path)
    if snode.kind == "leaf-list":
        if not isinstance(value, list):
            raise _type_error(snode, value, path, "a JSON array")
        return [_scalar(snode, v, path) for v in value]
    if snode.kind == "list":
        entries = value if isinstance(value, list) else [value]  # tolerate one bare object
        out = []
        seen = set()
        for entry in entries:
            if not isinstance(entry, dict):
                raise _type_error(snode, entry, path, "an array of JSON objects")
            for k in snode.keys:
                if k not in entry:
                    raise RpcError(
                        "missing-element",
                        f"an entry of {snode.name!r} lacks its key {k!r}",
                        "application",
                        path,
                        info={"bad-element": k},
                    )
            norm = _object(snode, entry, path + _pred(snode, entry), top=False)
            ident = tuple(norm[k] for k in snode.keys)
            if ident in seen:
                raise RpcError(
                    "invalid-value",
                    f"{snode.name!r} has two entries with key {ident}",
                    "application",
                    path + _pred(snode, norm),
                )
            seen.add(ident)
            out.append(norm)
        return out
    if snode.kind == "container":
        if not isinstance(value, dict):
            raise _type_error(snode, value, path, "a JSON object")
        return _object(snode, value, path, top=False)
    raise RpcError("invalid-value", f"{snode.name!r} cannot be written", "application", path)


def _object(snode: SchemaNode, obj: dict[str, Any], path: str, top: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for member, value in obj.items():
        name = _member(member, top, path)
        cpath = f"{path}/{PREFIX}:{name}"
        child = snode.writable_child(name, cpath)
        if name in out:
            raise RpcError("invalid-value", f"{name!r} is given twice", "application", cpath)
        out[name] = normalize(child, value, cpath)
    return out


def decode(body: bytes, fmt: str, parent: SchemaNode, parent_path: str) -> tuple[str, Any]:
    """One resource from a request body: (its local name, its value).

    `parent` is the schema node whose child the body names (the datastore's
    synthetic root for the top level). A body for the datastore itself
    (`ietf-restconf:data` / <data>) comes back as ("", {qualified: value}).
    """
    raw = _parse_json(body) if fmt == "json" else _xml_to_json(body, parent, parent_path)
    if not isinstance(raw, dict) or len(raw) != 1:
        raise RpcError(
            "malformed-message",
            "the body must be one JSON object with exactly one member, the resource "
            f'(e.g. {{"{MODULE}:routers": {{...}}}})',
            "protocol",
        )
    ((member, value),) = raw.items()
    if member == "ietf-restconf:data":
        if parent.name != "":
            raise RpcError(
                "invalid-value",
                "'ietf-restconf:data' is the datastore; send it to /restconf/data",
                "protocol",
            )
        if not isinstance(value, dict):
            raise _type_error(parent, value, "/", "a JSON object")
        data = _object(parent, value, "", top=True)
        return "", {f"{MODULE}:{k}": v for k, v in data.items()}
    name = _member(member, True, parent_path)
    child = parent.child(name)
    cpath = f"{parent_path}/{PREFIX}:{name}" if parent_path != "/" else f"/{PREFIX}:{name}"
    if child is None or child.kind == "other":
        known = ", ".join(n for n, c in parent.children.items() if c.kind != "other")
        raise RpcError(
            "unknown-element",
            f"{name!r} is not a data node of {parent.name or MODULE!r} (it has: {known})",
            "application",
            cpath,
            info={"bad-element": name},
        )
    if not child.config:
        raise RpcError(
            "invalid-value", f"{name!r} is state data and cannot be written", "application", cpath
        )
    return name, normalize(child, value, cpath)


def _parse_json(body: bytes) -> Any:
    try:
        return json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise RpcError("malformed-message", f"the body is not valid JSON: {err}", "rpc") from None


def _xml_to_json(body: bytes, parent: SchemaNode, parent_path: str) -> dict[str, Any]:
    try:
        el = etree.fromstring(body, _PARSER)
    except etree.XMLSyntaxError as err:
        raise RpcError(
            "malformed-message", f"the body is not well-formed XML: {err}", "rpc"
        ) from None
    q = etree.QName(el)
    if q.namespace == RESTCONF_NS and q.localname == "data":
        data: dict[str, Any] = {}
        for child in el:
            if isinstance(child.tag, str):
                data.update(_element(child, parent, "", top=True))
        return {"ietf-restconf:data": data}
    return _element(el, parent, parent_path if parent_path != "/" else "", top=True)


def _element(el: etree._Element, parent: SchemaNode, path: str, top: bool) -> dict[str, Any]:
    """One element (and its siblings, gathered by the caller) -> {member: value}."""
    q = etree.QName(el)
    cpath = f"{path}/{PREFIX}:{q.localname}"
    if q.namespace != NAMESPACE:
        raise RpcError(
            "unknown-namespace",
            f"element {q.localname!r} is in namespace {q.namespace!r}; this server's "
            f"model is {NAMESPACE!r}",
            "application",
            cpath,
            info={"bad-element": q.localname, "bad-namespace": q.namespace or ""},
        )
    snode = parent.child(q.localname)
    member = f"{MODULE}:{q.localname}" if top else q.localname
    if snode is None or snode.kind == "other":
        # let the JSON decoder report it with the list of known nodes
        return {member: None}
    return {member: _value(el, snode, cpath, single=True)}


def element_value(el: etree._Element, snode: SchemaNode) -> Any:
    """An element of `snode` (e.g. <routers> of a NETCONF reply) -> its RFC 7951 value."""
    return _value(el, snode, f"/{PREFIX}:{snode.name}")


def _value(el: etree._Element, snode: SchemaNode, path: str, single: bool = False) -> Any:
    if snode.kind in ("leaf", "leaf-list"):
        if len(el):
            raise RpcError(
                "bad-element",
                f"{snode.name!r} is a {snode.kind} and cannot contain elements",
                "application",
                path,
                info={"bad-element": snode.name},
            )
        try:
            v = snode.to_json_value(el.text or "")
        except ValueError:
            raise RpcError(
                "invalid-value",
                f"{(el.text or '').strip()!r} is not a valid {snode.base_type}",
                "application",
                path,
                info={"bad-element": snode.name},
            ) from None
        return [v] if single and snode.kind == "leaf-list" else v
    obj: dict[str, Any] = {}
    for child in el:
        if not isinstance(child.tag, str):
            continue
        q = etree.QName(child)
        cpath = f"{path}/{PREFIX}:{q.localname}"
        if q.namespace != NAMESPACE:
            raise RpcError(
                "unknown-namespace",
                f"element {q.localname!r} is in namespace {q.namespace!r}, not {NAMESPACE!r}",
                "application",
                cpath,
                info={"bad-element": q.localname, "bad-namespace": q.namespace or ""},
            )
        cnode = snode.child(q.localname)
        if cnode is None or cnode.kind == "other":
            obj[q.localname] = None  # reported by normalize() with its path
            continue
        v = _value(child, cnode, cpath)
        if cnode.kind in ("list", "leaf-list"):
            obj.setdefault(q.localname, []).append(v)
        elif q.localname in obj:
            raise RpcError("invalid-value", f"{q.localname!r} is given twice", "application", cpath)
        else:
            obj[q.localname] = v
    return [obj] if single and snode.kind == "list" else obj


# -- rendering -------------------------------------------------------------------
def render_json(member: str, value: Any) -> bytes:
    return json.dumps({member: value}, indent=2).encode() + b"\n"


def _leaf_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value == [None]:
        return ""
    return escape(str(value))


def _xml(name: str, value: Any, snode: SchemaNode | None, xmlns: str) -> str:
    if snode is None or snode.kind in ("leaf", "leaf-list"):
        values = value if snode is not None and snode.kind == "leaf-list" else [value]
        return "".join(f"<{name}{xmlns}>{_leaf_text(v)}</{name}>" for v in values)
    if snode.kind == "list":
        return "".join(_xml(name, e, _Entry(snode), xmlns) for e in value)
    inner = "".join(_xml(k, value[k], snode.child(k), "") for k in _ordered(snode, value))
    return f"<{name}{xmlns}>{inner}</{name}>"


class _Entry(SchemaNode):
    """A list entry renders like a container of the list's children."""

    def __init__(self, lst: SchemaNode):
        super().__init__(lst.name, "container", lst.config, lst.keys, children=lst.children)


def _ordered(snode: SchemaNode, value: dict[str, Any]) -> list[str]:
    names = [k for k in snode.keys if k in value]
    names += [k for k in snode.children if k in value and k not in names]
    names += [k for k in value if k not in names]  # unknown: keep, at the end
    return names


def ordered(value: Any, snode: SchemaNode, top: bool = False) -> Any:
    """A JSON value with members in schema order (keys first), as in XML."""
    if snode.kind == "list" and isinstance(value, list):
        entry = _Entry(snode)
        return [ordered(e, entry) for e in value]
    if snode.kind != "container" or not isinstance(value, dict):
        return value
    if top:  # the datastore: module-qualified members
        local = {m.split(":", 1)[-1]: m for m in value}
        names = [n for n in snode.children if n in local] + [
            n for n in local if n not in snode.children
        ]
        return {
            local[n]: ordered(value[local[n]], snode.children[n])
            if n in snode.children
            else value[local[n]]
            for n in names
        }
    out = {}
    for k in _ordered(snode, value):
        child = snode.child(k)
        out[k] = ordered(value[k], child) if child is not None else value[k]
    return out


def render_xml(name: str, value: Any, snode: SchemaNode) -> bytes:
    """One resource as XML; the top element(s) carry the module namespace."""
    return _xml(name, value, snode, f' xmlns="{NAMESPACE}"').encode()


def render_datastore_xml(tree: dict[str, Any], root: SchemaNode) -> bytes:
    parts = []
    for member, value in tree.items():
        local = member.split(":", 1)[1]
        parts.append(_xml(local, value, root.child(local), f' xmlns="{NAMESPACE}"'))
    return f'<data xmlns="{RESTCONF_NS}">{"".join(parts)}</data>'.encode()


def render_error_json(err: RpcError, path: str | None) -> bytes:
    e: dict[str, Any] = {"error-type": err.error_type, "error-tag": err.tag}
    if path:
        e["error-path"] = path
    e["error-message"] = err.message
    if err.info:
        e["error-info"] = dict(err.info)
    return json.dumps({"ietf-restconf:errors": {"error": [e]}}, indent=2).encode() + b"\n"


def render_error_xml(err: RpcError) -> bytes:
    path = ""
    if err.path:
        path = f'<error-path xmlns:{PREFIX}="{NAMESPACE}">{escape(err.path)}</error-path>'
    info = "".join(f"<{k}>{escape(v)}</{k}>" for k, v in err.info.items())
    return (
        f'<errors xmlns="{RESTCONF_NS}"><error><error-type>{err.error_type}</error-type>'
        f"<error-tag>{err.tag}</error-tag>{path}"
        f"<error-message>{escape(err.message)}</error-message>"
        f"{'<error-info>' + info + '</error-info>' if info else ''}</error></errors>"
    ).encode()
