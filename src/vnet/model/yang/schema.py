"""vnet's YANG module (and the standard ones the agent serves), loaded once with libyang.

Configuration travels as an RFC 7951 (JSON encoding of YANG) tree;
`SchemaNode` tells the codec which elements are lists, their keys and how
leaf text becomes a JSON value, so XML and JSON decode to the same tree.
"""

from __future__ import annotations

import functools
import json
import threading
from dataclasses import dataclass, field
from typing import Any

import libyang

from vnet.model import strict
from vnet.model.yang.errors import ErrorTag, ErrorType, RpcError
from vnet.model.yang.module import (
    MODULE,
    MONITORING_MODULE,
    NACM_DEVIATIONS,
    NACM_MODULE,
    NAMESPACE,
    PREFIX,
    REVISION,
    YANG_DIR,
    qualified,
)

__all__ = ["MODULE", "NAMESPACE", "PREFIX", "REVISION", "YANG_DIR", "qualified"]

DATA_KINDS = ("container", "list", "leaf", "leaf-list")
_INT_TYPES = {"int8", "int16", "int32", "uint8", "uint16", "uint32"}
_STRING_NUMBERS = {"int64", "uint64", "decimal64"}  # RFC 7951 section 6.1: as strings


@dataclass
class SchemaNode:
    name: str
    kind: str  # container, list, leaf, leaf-list; notification; other
    config: bool = True
    keys: tuple[str, ...] = ()
    base_type: str = "string"
    mandatory: bool = False
    children: dict[str, SchemaNode] = field(default_factory=dict)

    @property
    def is_data(self) -> bool:
        """A node of the datastore (not a notification or an RPC)."""
        return self.kind in DATA_KINDS

    def child(self, name: str) -> SchemaNode | None:
        return self.children.get(name)

    def writable_child(self, name: str, path: str) -> SchemaNode:
        """The configurable child `name`, or the RpcError every front-end gives for it."""
        child = self.children.get(name)
        if child is None or not child.is_data:
            raise RpcError(
                ErrorTag.UNKNOWN_ELEMENT,
                f"{name!r} is not an element of {self.name or 'the top level'}",
                ErrorType.APPLICATION,
                path,
                info={"bad-element": name},
            )
        if not child.config:
            raise RpcError(
                ErrorTag.INVALID_VALUE,
                f"{name!r} is state data and cannot be configured",
                ErrorType.APPLICATION,
                path,
                info={"bad-element": name},
            )
        return child

    def to_json_value(self, text: str) -> Any:
        """Leaf text (as in XML) -> RFC 7951 JSON value; ValueError if it is no number."""
        if self.base_type in _INT_TYPES:
            return strict.integer_text(text)  # a ValueError: ASCII digits, bounded
        if self.base_type == "boolean":
            return text.strip() == "true"
        if self.base_type == "empty":
            return [None]
        return text.strip() if self.base_type in _STRING_NUMBERS else text


def _base_type(leaf: Any) -> str:
    t = leaf.type()
    while t.base() == libyang.Type.LEAFREF:
        t = t.leafref_type()
    return str(t.basename())


def _convert(snode: Any) -> SchemaNode:
    kind = {
        libyang.SContainer: "container",
        libyang.SList: "list",
        libyang.SLeaf: "leaf",
        libyang.SLeafList: "leaf-list",
        libyang.schema.SNotif: "notification",
    }.get(type(snode), "other")
    node = SchemaNode(snode.name(), kind, config=not snode.config_false())
    if kind == "list":
        node.keys = tuple(k.name() for k in snode.keys())  # noqa: SIM118 (libyang API)
    if kind in ("leaf", "leaf-list"):
        node.base_type = _base_type(snode)
        node.mandatory = kind == "leaf" and snode.mandatory()
    else:
        for child in snode.children():
            node.children[child.name()] = _convert(child)
    return node


_BUILDING = threading.Lock()


def context() -> libyang.Context:
    """The process's one libyang context holding the modules vnet serves.

    Built under a lock: threads that asked at once (the controller's NETCONF workers at its
    first transaction) each built one, and every context but the one kept was freed while
    its thread still read from it, so an edit went out with a namespace read as '' or as
    garbage and the agent refused it."""
    with _BUILDING:
        return _loaded()


@functools.cache
def _loaded() -> libyang.Context:
    ctx = libyang.Context(str(YANG_DIR))
    ctx.load_module(MODULE)
    ctx.load_module(MONITORING_MODULE)
    ctx.load_module(NACM_MODULE)
    ctx.load_module(NACM_DEVIATIONS)
    return ctx


@functools.cache
def root(module: str = MODULE) -> SchemaNode:
    """A synthetic root whose children are the module's top-level nodes."""
    top = SchemaNode("", "container")
    for snode in context().get_module(module).children():
        top.children[snode.name()] = _convert(snode)
    return top


@functools.cache
def namespace_of(module: str) -> str:
    cdata = context().get_module(module).cdata
    return str(libyang.util.c2str(cdata.ns))


def yang_text(module: str = MODULE) -> str:
    """The text of a module this folder holds (vnet's, and those the agent serves)."""
    (path,) = YANG_DIR.glob(f"{module}@*.yang")
    return path.read_text()


def served_modules() -> list[tuple[str, str]]:
    """(name, revision) of the modules whose text `yang_text` gives (RFC 6022 schemas)."""
    return sorted(tuple(p.stem.split("@", 1)) for p in YANG_DIR.glob("*@*.yang"))  # type: ignore[misc]


def validate(tree: dict[str, Any], with_state: bool = False) -> Any:
    """Parse and validate an RFC 7951 tree; return the libyang data node (or None if empty)."""
    text = json.dumps(tree)
    return context().parse_data_mem(
        text, "json", no_state=not with_state, strict=True, validate_present=True
    )


def yang_library() -> dict[str, Any]:
    """RFC 8525 ietf-yang-library data of the loaded modules, as an RFC 7951 tree."""
    data = context().get_yanglib_data(REVISION)
    try:
        return dict(json.loads(data.print_mem("json", with_siblings=True, pretty=False)))
    finally:
        data.free()
