"""The OpenAPI 3 description of the RESTCONF API, generated from the YANG module.

Every container and list entry of vnet-router becomes a path under
/restconf/data with the methods it supports, its key parameters, and JSON
Schemas of its RFC 7951 body (descriptions and enumerations come from the
module). Served by the agent at /openapi.json (and browsable at /docs).
"""

from __future__ import annotations

import functools
from typing import Any

import libyang

from vnet import __version__
from vnet.agent.restconf.codec import JSON, XML
from vnet.model.yang.schema import MODULE, NAMESPACE, REVISION, context

_INTS = {"int8", "int16", "int32", "uint8", "uint16", "uint32"}


def _text(s: str | None) -> str:
    return " ".join((s or "").split())


# RFC 7951 numbers in strings, as the codec reads them (model.yang.decode)
_BIG_TEXT = {
    "int64": "^-?[0-9]{1,19}$",
    "uint64": "^[0-9]{1,20}$",
    "decimal64": "^-?[0-9]{1,19}(\\.[0-9]{1,18})?$",
}


def _bounds(text: str | None, low: str, high: str) -> dict[str, int]:
    """A YANG range or length of one part ("1..32", "4194304..max") as JSON Schema bounds."""
    if not text or "|" in text:
        return {}
    first, _, last = (part.strip() for part in text.partition(".."))
    last = last or first
    out = {}
    if first.lstrip("-").isdigit():
        out[low] = int(first)
    if last.lstrip("-").isdigit():
        out[high] = int(last)
    return out


def _leaf_schema(leaf: Any) -> dict[str, Any]:
    t = leaf.type()
    while t.base() == libyang.Type.LEAFREF:
        t = t.leafref_type()
    base = str(t.basename())
    out: dict[str, Any]
    if base in _INTS:
        out = {"type": "integer", **_bounds(t.range(), "minimum", "maximum")}
    elif base == "boolean":
        out = {"type": "boolean"}
    elif base in _BIG_TEXT:
        out = {"type": "string", "pattern": _BIG_TEXT[base]}
    elif base == "enumeration":
        out = {"type": "string", "enum": [e.name() for e in t.enums()]}
    else:
        out = {"type": "string", **_bounds(t.length(), "minLength", "maxLength")}
        patterns = [f"^(?:{p})$" for p, inverted in t.patterns() if not inverted]
        if len(patterns) == 1:
            out["pattern"] = patterns[0]
        elif patterns:
            out["allOf"] = [{"pattern": p} for p in patterns]
    out["description"] = _text(leaf.description()) + f" (YANG type {t.name()})"
    if leaf.config_false():
        out["readOnly"] = True
    return out


def _node_schema(snode: Any, merge: bool = False) -> dict[str, Any]:
    """The JSON Schema of a node's RFC 7951 value. `merge`: of a plain patch, which may name
    an existing entry by its keys alone (its mandatory leaves are already there)."""
    if isinstance(snode, libyang.SLeaf):
        return _leaf_schema(snode)
    if isinstance(snode, libyang.SLeafList):
        return {
            "type": "array",
            "items": _leaf_schema(snode),
            "description": _text(snode.description()),
        }
    props = {}
    for child in snode.children():
        if isinstance(child, (libyang.SContainer, libyang.SList, libyang.SLeaf, libyang.SLeafList)):
            props[child.name()] = _node_schema(child, merge)
    # the codec refuses a member the module does not have (unknown-element)
    obj: dict[str, Any] = {"type": "object", "properties": props, "additionalProperties": False}
    if isinstance(snode, libyang.SList):
        obj["required"] = [k.name() for k in snode.keys()]  # noqa: SIM118 (libyang API)
        required_leaves = [
            c.name() for c in snode.children() if isinstance(c, libyang.SLeaf) and c.mandatory()
        ]
        if not merge:
            obj["required"] += [r for r in required_leaves if r not in obj["required"]]
        return {"type": "array", "items": obj, "description": _text(snode.description())}
    obj["description"] = _text(snode.description())
    if snode.config_false():
        obj["readOnly"] = True
    return obj


def _xml_schema(member: str, schema: dict[str, Any]) -> dict[str, Any]:
    """The XML form of a body: the resource's element in the module's namespace (one entry of
    a list); OpenAPI's XML mapping repeats a list's entries without a wrapper, as YANG does."""
    if not member.startswith(f"{MODULE}:"):
        return {"type": "string"}
    one = schema["items"] if schema.get("type") == "array" else schema
    return {**one, "xml": {"name": member.split(":", 1)[1], "namespace": NAMESPACE}}


def _body(member: str, schema: dict[str, Any], example: Any = None) -> dict[str, Any]:
    body: dict[str, Any] = {"type": "object", "properties": {member: schema}, "required": [member]}
    media = {JSON: {"schema": body}, XML: {"schema": _xml_schema(member, schema)}}
    if example is not None:
        media[JSON]["example"] = {member: example}
    return {"required": True, "content": media}


_ERRORS = {"$ref": "#/components/schemas/errors"}


def _responses(ok: dict[str, Any]) -> dict[str, Any]:
    """`ok` and every refusal the app gives (app.py), each an ietf-restconf:errors body."""

    def err(text: str) -> dict[str, Any]:
        return {"description": text, "content": {JSON: {"schema": _ERRORS}, XML: {}}}

    return {
        **ok,
        "400": err("Bad request: unknown node, wrong type, invalid value (error-path says where)"),
        "401": err("Missing or wrong credentials (HTTP Basic)"),
        "403": err("access-denied: NACM does not allow this user the operation"),
        "404": err("The resource does not exist"),
        "405": err("operation-not-supported: the method does not apply to this resource"),
        "406": err("The Accept header names no media type this server answers in"),
        "409": err("data-exists (POST of an existing entry), in-use (datastore locked)"),
        "413": err("too-big: the body exceeds the server's limit"),
        "415": err("The Content-Type is not a RESTCONF media type (or is YANG Patch)"),
        "429": err("Too many failed logins from this source for this user; retry later"),
        "500": err("operation-failed: the kernel refused the change; it was rolled back"),
    }


# 1..65535 or "unbounded", as app.py reads it
_DEPTH = (
    "^(unbounded|[1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]"
    "|6553[0-5])$"
)


_EXAMPLES: dict[str, Any] = {
    "router": [
        {
            "name": "r1",
            "admin-state": "up",
            "interface": [{"name": "eth0", "network": "n1", "ipv4": "10.1.0.1/24"}],
            "route": [{"destination": "0.0.0.0/0", "next-hop": "10.1.0.254"}],
        }
    ],
    "network": [{"name": "n1", "tenant": "a", "vni": 10, "ipv4-prefix": "10.1.0.0/24"}],
}


def _walk(
    snode: Any, uri: str, params: list[dict[str, Any]], top: bool, paths: dict[str, Any]
) -> None:
    name = snode.name()
    member = f"{MODULE}:{name}"
    schema = _node_schema(snode)
    is_list = isinstance(snode, libyang.SList)
    if is_list:
        keys = [k.name() for k in snode.keys()]  # noqa: SIM118 (libyang API)
        pnames = [name if len(keys) == 1 else f"{name}-{k}" for k in keys]
        params = params + [
            {
                "name": p,
                "in": "path",
                "required": True,
                "description": f"key {k!r} of {name} (percent-encode '/' and ',')",
                "schema": {"type": "string"},
            }
            for p, k in zip(pnames, keys, strict=True)
        ]
        uri = f"{uri}/{member if top else name}=" + ",".join(f"{{{p}}}" for p in pnames)
    else:
        uri = f"{uri}/{member if top else name}"
    desc = _text(snode.description())
    get_params = [
        {
            "name": "content",
            "in": "query",
            "schema": {"type": "string", "enum": ["all", "config", "nonconfig"], "default": "all"},
        },
        {
            "name": "depth",
            "in": "query",
            "schema": {"type": "string", "pattern": _DEPTH, "default": "unbounded"},
            "description": "1..65535 or unbounded; the target is level 1",
        },
    ]
    ops: dict[str, Any] = {
        "get": {
            "summary": f"Read {name}",
            "description": desc,
            "parameters": get_params,
            "responses": _responses(
                {
                    "200": {
                        "description": "The resource",
                        "content": {
                            JSON: {"schema": {"type": "object", "properties": {member: schema}}},
                            XML: {},
                        },
                    }
                }
            ),
        }
    }
    if not snode.config_false():
        example = _EXAMPLES.get(name)
        ops["put"] = {
            "summary": f"Create or replace {name}",
            "requestBody": _body(member, schema, example),
            "responses": _responses(
                {"201": {"description": "Created"}, "204": {"description": "Replaced"}}
            ),
        }
        ops["patch"] = {
            "summary": f"Merge into {name} (plain patch)",
            "requestBody": _body(member, _node_schema(snode, merge=True), example),
            "responses": _responses({"204": {"description": "Merged"}}),
        }
        ops["delete"] = {
            "summary": f"Delete {name}",
            "responses": _responses({"204": {"description": "Deleted"}}),
        }
        for child in snode.children():
            if isinstance(child, libyang.SList) and not child.config_false():
                ops["post"] = {
                    "summary": f"Create a {child.name()} in {name}",
                    "requestBody": _body(
                        f"{MODULE}:{child.name()}", _node_schema(child), _EXAMPLES.get(child.name())
                    ),
                    "responses": _responses(
                        {"201": {"description": "Created; Location names the new resource"}}
                    ),
                }
    for op in ops.values():
        op["tags"] = [uri.split("/")[3].split("=")[0]]
        if params:
            op["parameters"] = params + op.get("parameters", [])
    paths[uri] = ops
    for child in snode.children():
        if isinstance(child, (libyang.SContainer, libyang.SList)):
            _walk(child, uri, params, False, paths)


@functools.cache
def document() -> dict[str, Any]:
    paths: dict[str, Any] = {
        "/.well-known/host-meta": {
            "get": {
                "summary": "RFC 6415 host-meta: where the RESTCONF root is",
                "security": [],
                "responses": {
                    "200": {"description": "XRD", "content": {"application/xrd+xml": {}}}
                },
                "tags": ["restconf"],
            }
        },
        "/restconf": {
            "get": {
                "summary": "The RESTCONF root resource",
                "responses": _responses({"200": {"description": "ietf-restconf:restconf"}}),
                "tags": ["restconf"],
            }
        },
        "/restconf/yang-library-version": {
            "get": {
                "summary": "The YANG library revision this server implements",
                "responses": _responses(
                    {"200": {"description": "ietf-restconf:yang-library-version"}}
                ),
                "tags": ["restconf"],
            }
        },
        "/restconf/data": {
            "get": {
                "summary": "The whole datastore (configuration and state)",
                "responses": _responses({"200": {"description": "ietf-restconf:data"}}),
                "tags": ["restconf"],
            },
            "put": {
                "summary": "Replace the whole configuration",
                "requestBody": _body("ietf-restconf:data", {"type": "object"}),
                "responses": _responses(
                    {"201": {"description": "Created"}, "204": {"description": "Replaced"}}
                ),
                "tags": ["restconf"],
            },
        },
        "/restconf/data/ietf-yang-library:yang-library": {
            "get": {
                "summary": "The YANG library (RFC 8525): modules this server implements",
                "responses": _responses({"200": {"description": "ietf-yang-library:yang-library"}}),
                "tags": ["restconf"],
            }
        },
    }
    module = context().get_module(MODULE)
    for snode in module.children():
        if isinstance(snode, (libyang.SContainer, libyang.SList)):
            _walk(snode, "/restconf/data", [], True, paths)
    return {
        "openapi": "3.0.3",
        "info": {
            "title": "vnet agent RESTCONF API",
            "version": __version__,
            "description": (
                f"RESTCONF (RFC 8040) over the YANG module {MODULE}@{REVISION}. Bodies are "
                f"{JSON} (RFC 7951) or {XML}; errors are ietf-restconf:errors. Key values in "
                "URIs are percent-encoded: route=10.0.0.0%2F8."
            ),
        },
        "servers": [{"url": "/"}],
        "security": [{"basic": []}],
        "paths": paths,
        "components": {
            "securitySchemes": {"basic": {"type": "http", "scheme": "basic"}},
            "schemas": {
                "errors": {
                    "type": "object",
                    "properties": {
                        "ietf-restconf:errors": {
                            "type": "object",
                            "properties": {
                                "error": {
                                    "type": "array",
                                    "items": {
                                        "type": "object",
                                        "properties": {
                                            "error-type": {"type": "string"},
                                            "error-tag": {"type": "string"},
                                            "error-path": {"type": "string"},
                                            "error-message": {"type": "string"},
                                            "error-info": {"type": "object"},
                                        },
                                    },
                                }
                            },
                        }
                    },
                }
            },
        },
    }
