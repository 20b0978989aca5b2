"""XML and JSON -> the RFC 7951 tree, driven by the schema.

JSON values are checked against their schema node (`json_value`); XML
elements become the same JSON values (`element_value`), so both wire
formats decode to one tree. Errors are RpcError with the exact schema path
(`/vr:routers/vr:router[vr:name='r1']/vr:index`).
"""

from __future__ import annotations

import json
import re
from typing import Any

from lxml import etree

from vnet.model import strict
from vnet.model.yang.errors import ErrorTag, ErrorType, RpcError
from vnet.model.yang.module import MODULE, NAMESPACE, PREFIX
from vnet.model.yang.paths import key_predicate
from vnet.model.yang.schema import SchemaNode, root

_INTS = {"int8", "int16", "int32", "uint8", "uint16", "uint32"}
_BIG = {"int64", "uint64", "decimal64"}  # RFC 7951 section 6.1: numbers in strings
# their text: ASCII digits (int() and str.isdigit() also take '١٢٣', '１２' and '1_0')
_BIG_TEXT = {
    "int64": re.compile(r"-?[0-9]{1,19}\Z"),
    "uint64": re.compile(r"[0-9]{1,20}\Z"),
    "decimal64": re.compile(r"-?[0-9]{1,19}(\.[0-9]{1,18})?\Z"),
}


# -- parsing -----------------------------------------------------------------------
def _malformed(err: strict.BodyError) -> RpcError:
    return RpcError(ErrorTag.MALFORMED_MESSAGE, err.reason, ErrorType.RPC)


def parse_json(body: bytes | str) -> Any:
    """A JSON body through the one strict reader (vnet.model.strict): a member given twice,
    a number of thousands of digits or a body nested thousands deep is malformed."""
    try:
        return strict.parse_json(body)
    except strict.BodyError as err:
        raise _malformed(err) from None


def parse_xml(body: bytes | str) -> etree._Element:
    """Well-formed XML without entity expansion, network access or DTD, nested boundedly."""
    try:
        return strict.parse_xml(body)
    except strict.BodyError as err:
        raise _malformed(err) from None


# -- XML -----------------------------------------------------------------------------
def element_name(
    el: etree._Element, path: str, wrong_namespace: ErrorTag, namespace: str = NAMESPACE
) -> str:
    """The local name of an element of vnet's module (or the module of `namespace`);
    `wrong_namespace` if it is not one."""
    q = etree.QName(el)
    if q.namespace != namespace:
        raise RpcError(
            wrong_namespace,
            f"element {q.localname!r} is in namespace {q.namespace!r}; this device's "
            f"model is {NAMESPACE!r}",
            ErrorType.APPLICATION,
            f"{path}/{PREFIX}:{q.localname}",
            info={"bad-element": q.localname, "bad-namespace": q.namespace or ""},
        )
    return q.localname


def leaf_value(snode: SchemaNode, el: etree._Element, path: str) -> Any:
    """A leaf (or leaf-list item) element -> its RFC 7951 JSON value."""
    if len(el):
        raise _bad_element(snode, "cannot contain elements", path)
    try:
        return snode.to_json_value(el.text or "")
    except ValueError:
        raise RpcError(
            ErrorTag.INVALID_VALUE,
            f"{(el.text or '').strip()!r} is not a valid {snode.base_type}",
            ErrorType.APPLICATION,
            path,
            info={"bad-element": snode.name},
        ) from None


def element_value(
    el: etree._Element, snode: SchemaNode, path: str | None = None, single: bool = False
) -> Any:
    """An element of `snode` (e.g. <routers> of a NETCONF reply) -> its RFC 7951 value.

    `single`: the element is one entry of a list (or leaf-list) and comes back
    as a list of one. Unknown children decode to None, for `json_value` to
    report with their path.
    """
    path = path if path is not None else f"/{PREFIX}:{snode.name}"
    if snode.kind in ("leaf", "leaf-list"):
        v = leaf_value(snode, el, path)
        return [v] if single and snode.kind == "leaf-list" else v
    _no_text(el, snode, path)
    obj: dict[str, Any] = {}
    for child in el:
        if not isinstance(child.tag, str):
            continue  # comments, processing instructions
        name = element_name(child, path, ErrorTag.UNKNOWN_NAMESPACE)
        cpath = f"{path}/{PREFIX}:{name}"
        cnode = snode.child(name)
        if cnode is None or not cnode.is_data:
            obj[name] = None
            continue
        v = element_value(child, cnode, cpath)
        if cnode.kind in ("list", "leaf-list"):
            obj.setdefault(name, []).append(v)
        elif name in obj:
            raise RpcError(
                ErrorTag.INVALID_VALUE, f"{name!r} is given twice", ErrorType.APPLICATION, cpath
            )
        else:
            obj[name] = v
    return [obj] if single and snode.kind == "list" else obj


def _no_text(el: etree._Element, snode: SchemaNode, path: str) -> None:
    """A container or list entry holds elements only: text beside them (`<underlay>true
    </underlay>`) is refused, not dropped."""
    texts = [el.text, *(child.tail for child in el)]
    if any(text and text.strip() for text in texts):
        raise _bad_element(snode, "holds elements, not text", path)


def _bad_element(snode: SchemaNode, why: str, path: str) -> RpcError:
    return RpcError(
        ErrorTag.BAD_ELEMENT,
        f"{snode.name!r} is a {snode.kind} and {why}",
        ErrorType.APPLICATION,
        path,
        info={"bad-element": snode.name},
    )


def xml_member(el: etree._Element, parent: SchemaNode, path: str) -> dict[str, Any]:
    """A top-level element -> {'vnet-router:name': value}, unchecked (see json_value)."""
    name = element_name(el, path, ErrorTag.UNKNOWN_NAMESPACE)
    snode = parent.child(name)
    if snode is None or not snode.is_data:
        return {f"{MODULE}:{name}": None}  # json_member reports it, listing the known nodes
    return {f"{MODULE}:{name}": element_value(el, snode, f"{path}/{PREFIX}:{name}", single=True)}


# -- JSON ------------------------------------------------------------------------------
def member_name(member: str, top: bool, path: str) -> str:
    """'vnet-router:routers' -> 'routers'; top-level members must be module-qualified."""
    module, sep, local = member.rpartition(":")
    if not sep:
        if top:
            raise RpcError(
                ErrorTag.INVALID_VALUE,
                f"the top-level member {member!r} must be module-qualified: '{MODULE}:{member}'",
                ErrorType.APPLICATION,
                path or "/",
            )
        return local
    if module != MODULE:
        raise RpcError(
            ErrorTag.UNKNOWN_NAMESPACE,
            f"{module!r} is not a module of this server (its data model is {MODULE!r})",
            ErrorType.APPLICATION,
            path or "/",
            info={"bad-element": local, "bad-namespace": module},
        )
    return local


def _type_error(snode: SchemaNode, value: Any, path: str, want: str) -> RpcError:
    return RpcError(
        ErrorTag.INVALID_VALUE,
        f"{snode.name!r} must be {want} ({snode.base_type}), not {json.dumps(value)}",
        ErrorType.APPLICATION,
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
        return _big_number(snode, value, path)
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


def _big_number(snode: SchemaNode, value: Any, path: str) -> str:
    """An int64, uint64 or decimal64: its digits as a string (RFC 7951 section 6.1)."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise _type_error(snode, value, path, "a number in a JSON string")
    if not _BIG_TEXT[snode.base_type].match(str(value)):
        raise _type_error(snode, value, path, "a number in ASCII digits")
    return str(value)


def _entry_predicate(snode: SchemaNode, entry: dict[str, Any]) -> str:
    """[vr:name='r1'] for a list entry, as error paths write it."""
    return key_predicate((k, entry.get(k)) for k in snode.keys)


def _list(snode: SchemaNode, value: Any, path: str) -> list[dict[str, Any]]:
    entries = value if isinstance(value, list) else [value]  # tolerate one bare object
    out = []
    seen = set()
    for entry in entries:
        if not isinstance(entry, dict):
            raise _type_error(snode, entry, path, "an array of JSON objects")
        for k in snode.keys:
            if k not in entry:
                raise RpcError(
                    ErrorTag.MISSING_ELEMENT,
                    f"an entry of {snode.name!r} lacks its key {k!r}",
                    ErrorType.APPLICATION,
                    path,
                    info={"bad-element": k},
                )
        norm = json_object(snode, entry, path + _entry_predicate(snode, entry))
        ident = tuple(norm[k] for k in snode.keys)
        if ident in seen:
            raise RpcError(
                ErrorTag.INVALID_VALUE,
                f"{snode.name!r} has two entries with key {ident}",
                ErrorType.APPLICATION,
                path + _entry_predicate(snode, norm),
            )
        seen.add(ident)
        out.append(norm)
    return out


def json_value(snode: SchemaNode, value: Any, path: str) -> Any:
    """Check a decoded JSON value against `snode`; return it as the tree holds it."""
    if snode.kind == "leaf":
        return _scalar(snode, value, path)
    if snode.kind == "leaf-list":
        if not isinstance(value, list):
            raise _type_error(snode, value, path, "a JSON array")
        return [_scalar(snode, v, path) for v in value]
    if snode.kind == "list":
        return _list(snode, value, path)
    if snode.kind == "container":
        if not isinstance(value, dict):
            raise _type_error(snode, value, path, "a JSON object")
        return json_object(snode, value, path)
    raise RpcError(
        ErrorTag.INVALID_VALUE, f"{snode.name!r} cannot be written", ErrorType.APPLICATION, path
    )


def json_object(
    snode: SchemaNode, obj: dict[str, Any], path: str, top: bool = False
) -> dict[str, Any]:
    """The members of a container or list entry (`top`: of the datastore, qualified)."""
    out: dict[str, Any] = {}
    for member, value in obj.items():
        name = member_name(member, top, path)
        cpath = f"{path}/{PREFIX}:{name}"
        child = snode.writable_child(name, cpath)
        if name in out:
            raise RpcError(
                ErrorTag.INVALID_VALUE, f"{name!r} is given twice", ErrorType.APPLICATION, cpath
            )
        out[name] = json_value(child, value, cpath)
    return out


def json_member(parent: SchemaNode, member: str, value: Any, parent_path: str) -> tuple[str, Any]:
    """One resource {member: value} under `parent` -> (its local name, its checked value)."""
    name = member_name(member, True, parent_path)
    child = parent.child(name)
    cpath = f"{parent_path}/{PREFIX}:{name}" if parent_path != "/" else f"/{PREFIX}:{name}"
    if child is None or not child.is_data:
        known = ", ".join(n for n, c in parent.children.items() if c.is_data)
        raise RpcError(
            ErrorTag.UNKNOWN_ELEMENT,
            f"{name!r} is not a data node of {parent.name or MODULE!r} (it has: {known})",
            ErrorType.APPLICATION,
            cpath,
            info={"bad-element": name},
        )
    if not child.config:
        raise RpcError(
            ErrorTag.INVALID_VALUE,
            f"{name!r} is state data and cannot be written",
            ErrorType.APPLICATION,
            cpath,
        )
    return name, json_value(child, value, cpath)


def tree_from_json(data: dict[str, Any]) -> dict[str, Any]:
    """A whole datastore tree ({'vnet-router:...': ...}) checked against the schema."""
    if not isinstance(data, dict):
        raise RpcError(
            ErrorTag.INVALID_VALUE, "the configuration must be a JSON object", ErrorType.APPLICATION
        )
    checked = json_object(root(), data, "", top=True)
    return {f"{MODULE}:{k}": v for k, v in checked.items()}
