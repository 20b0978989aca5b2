"""The RFC 7951 tree -> XML and JSON: the one encoder of NETCONF replies, RESTCONF
bodies and the clients' requests.

Members come out in schema order (list keys first), as libyang prints them,
so XML and JSON of one tree list the same things in the same order. Any
module loaded in the schema context can be encoded (vnet's, the YANG
library, NETCONF monitoring): a top-level member names its module.
"""

from __future__ import annotations

import json
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from vnet.model.yang.errors import RESTCONF_NS
from vnet.model.yang.module import MODULE
from vnet.model.yang.schema import SchemaNode, namespace_of, root


class _Entry(SchemaNode):
    """A list entry encodes like a container of the list's children."""

    def __init__(self, lst: SchemaNode):
        super().__init__(lst.name, "container", lst.config, lst.keys, children=lst.children)


# id(children dict) -> (that dict, keys, its order, the names as a set). Keyed by the
# children dict, which a list and its _Entry share (an _Entry is made per call); the
# entry holds the dict itself so that its id cannot be reused by another object.
_ORDER: dict[int, tuple[Any, tuple[str, ...], tuple[str, ...], frozenset[str]]] = {}


def _schema_order(snode: SchemaNode) -> tuple[tuple[str, ...], frozenset[str]]:
    """Keys first, then the children in schema order; computed once per schema node."""
    found = _ORDER.get(id(snode.children))
    if found is None or found[1] != tuple(snode.keys):
        names = (*snode.keys, *(k for k in snode.children if k not in snode.keys))
        found = _ORDER[id(snode.children)] = (
            snode.children,
            tuple(snode.keys),
            names,
            frozenset(names),
        )
    return found[2], found[3]


def _member_order(snode: SchemaNode, value: dict[str, Any]) -> list[str]:
    names, known = _schema_order(snode)
    order = [k for k in names if k in value]
    if len(order) != len(value):
        order += [k for k in value if k not in known]  # unknown: keep, at the end
    return order


def _escape(text: str) -> str:
    # most values are names, numbers and addresses: skip the three replaces for them
    return escape(text) if ("&" in text or "<" in text or ">" in text) else text


def _leaf_xml(name: str, value: Any, snode: SchemaNode | None, xmlns: str) -> str:
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif value == [None]:
        text = ""
    else:
        text = str(value)
    if snode is not None and snode.base_type == "identityref" and ":" in text:
        # RFC 7951 writes 'module:identity'; in XML the prefix must be declared
        module = text.split(":", 1)[0]
        xmlns += f" xmlns:{module}={quoteattr(namespace_of(module))}"
    return f"<{name}{xmlns}>{_escape(text)}</{name}>"


def _xml(name: str, value: Any, snode: SchemaNode | None, xmlns: str) -> str:
    kind = "leaf" if snode is None else snode.kind
    if kind == "leaf":
        return _leaf_xml(name, value, snode, xmlns)
    if kind == "leaf-list":
        return "".join([_leaf_xml(name, v, snode, xmlns) for v in value])
    assert snode is not None  # only a leaf may lack its schema node
    if kind == "list":
        entry = _Entry(snode)  # one per list, not one per entry
        return "".join([_xml(name, e, entry, xmlns) for e in value])
    children = snode.children
    inner = "".join([_xml(k, value[k], children.get(k), "") for k in _member_order(snode, value)])
    return f"<{name}{xmlns}>{inner}</{name}>"


def to_xml(name: str, value: Any, snode: SchemaNode, module: str = MODULE) -> str:
    """One node of `module` (a list: all its entries) as XML carrying the module namespace."""
    return _xml(name, value, snode, f' xmlns="{namespace_of(module)}"')


def tree_to_xml(tree: dict[str, Any]) -> str:
    """A datastore tree ({'module:name': value, ...}) -> its top-level elements, in order."""
    parts = []
    # Only the top level is sorted here: _xml puts every member below in schema order
    # itself, so the deep reordered copy `ordered()` makes for JSON is not needed.
    for member in sorted(tree, key=_top_rank):
        value = tree[member]
        module, _, local = member.partition(":")
        snode = root(module).child(local)
        if snode is not None:
            parts.append(to_xml(local, value, snode, module))
    return "".join(parts)


def datastore_xml(tree: dict[str, Any]) -> str:
    """RESTCONF's {+restconf}/data as XML."""
    return f'<data xmlns="{RESTCONF_NS}">{tree_to_xml(tree)}</data>'


def to_json(member: str, value: Any) -> bytes:
    """{member: value} as the JSON text of a RESTCONF body."""
    return json.dumps({member: value}, indent=2).encode() + b"\n"


def ordered(value: Any, snode: SchemaNode, top: bool = False) -> Any:
    """A JSON value with members in schema order (keys first), as in XML."""
    if snode.kind == "list" and isinstance(value, list):
        entry = _Entry(snode)
        return [ordered(e, entry) for e in value]
    if snode.kind not in ("container", "notification") or not isinstance(value, dict):
        return value
    if top:  # the datastore: module-qualified members, vnet's module first
        return _ordered_top(value)
    out = {}
    for k in _member_order(snode, value):
        child = snode.child(k)
        out[k] = ordered(value[k], child) if child is not None else value[k]
    return out


def _top_rank(member: str) -> tuple[bool, str, int]:
    """vnet's module first, then by module; within one, in schema order."""
    module, _, local = member.partition(":")
    names = list(root(module).children)
    return (module != MODULE, module, names.index(local) if local in names else len(names))


def _ordered_top(value: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for member in sorted(value, key=_top_rank):
        module, _, local = member.partition(":")
        snode = root(module).child(local)
        out[member] = ordered(value[member], snode) if snode is not None else value[member]
    return out
