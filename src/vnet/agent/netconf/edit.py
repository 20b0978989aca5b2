"""<edit-config> content applied to a datastore tree (RFC 6241 section 7.2).

Operations merge, replace, create, delete and remove, inherited downwards
and overridable per element; default-operation none only traverses. The
result is a new RFC 7951 tree: the datastore validates and commits it as a
whole, so an edit is all or nothing (stronger than stop-on-error).
"""

from __future__ import annotations

import copy
from typing import Any

from lxml import etree

from vnet.model.yang.decode import element_name, leaf_value
from vnet.model.yang.errors import ErrorTag, ErrorType, RpcError
from vnet.model.yang.module import MODULE, NACM_MODULE
from vnet.model.yang.schema import NAMESPACE, PREFIX, SchemaNode, namespace_of, root

NC = "urn:ietf:params:xml:ns:netconf:base:1.0"
OPERATIONS = ("merge", "replace", "create", "delete", "remove", "none")


# the modules whose configuration an edit may carry, by XML namespace
EDITABLE = {NAMESPACE: (MODULE, PREFIX), namespace_of(NACM_MODULE): (NACM_MODULE, "nacm")}


class _Editor:
    def __init__(self) -> None:
        self.changed = False
        self.module, self.namespace, self.prefix = MODULE, NAMESPACE, PREFIX

    def enter_module(self, el: etree._Element) -> SchemaNode:
        """A top-level element: the module it belongs to becomes the one edited."""
        ns = etree.QName(el).namespace
        if ns in EDITABLE:
            self.namespace = ns
            self.module, self.prefix = EDITABLE[ns]
        return root(self.module)

    def operation(self, el: etree._Element, inherited: str, path: str) -> str:
        op = el.get(f"{{{NC}}}operation", inherited)
        if op not in OPERATIONS:
            raise RpcError(
                ErrorTag.BAD_ATTRIBUTE,
                f"operation {op!r} is not one of {', '.join(OPERATIONS)}",
                ErrorType.PROTOCOL,
                path,
                info={"bad-attribute": "operation", "bad-element": etree.QName(el).localname},
            )
        return op

    def children(
        self,
        target: dict[str, Any],
        snode: SchemaNode,
        el: etree._Element,
        inherited: str,
        path: str,
        top: bool = False,
        keys: tuple[str, ...] = (),
    ) -> None:
        for child in el:
            if not isinstance(child.tag, str):
                continue  # comments, processing instructions
            wrong_namespace = ErrorTag.UNKNOWN_NAMESPACE if top else ErrorTag.UNKNOWN_ELEMENT
            if top:
                snode = self.enter_module(child)
            name = element_name(child, path, wrong_namespace, self.namespace)
            cpath = f"{path}/{self.prefix}:{name}"
            cnode = snode.writable_child(name, cpath)
            if name in keys:
                continue  # list keys were consumed when the entry was found
            op = self.operation(child, inherited, cpath)
            key = f"{self.module}:{name}" if top else name
            handler = getattr(self, cnode.kind.replace("-", "_"))
            handler(target, key, cnode, child, op, cpath)

    # -- node kinds ------------------------------------------------------------
    def container(
        self,
        parent: dict[str, Any],
        key: str,
        snode: SchemaNode,
        el: etree._Element,
        op: str,
        path: str,
    ) -> None:
        exists = key in parent
        if op in ("delete", "remove"):
            if op == "delete" and not exists:
                raise RpcError(
                    ErrorTag.DATA_MISSING,
                    "cannot delete: it does not exist",
                    ErrorType.APPLICATION,
                    path,
                )
            self.changed |= parent.pop(key, None) is not None
            return
        if op == "create" and exists:
            raise RpcError(
                ErrorTag.DATA_EXISTS,
                "cannot create: it already exists",
                ErrorType.APPLICATION,
                path,
            )
        if op == "replace":
            parent[key] = {}
            self.changed = True
        target = parent.setdefault(key, {})
        child_op = "merge" if op in ("create", "replace") else op
        self.children(target, snode, el, child_op, path)

    def list(
        self,
        parent: dict[str, Any],
        key: str,
        snode: SchemaNode,
        el: etree._Element,
        op: str,
        path: str,
    ) -> None:
        keys: dict[str, Any] = {}
        for k in snode.keys:
            key_el = el.find(f"{{{self.namespace}}}{k}")
            if key_el is None:
                raise RpcError(
                    ErrorTag.MISSING_ELEMENT,
                    f"list entry {snode.name!r} needs its key {k!r}",
                    ErrorType.PROTOCOL,
                    path,
                    info={"bad-element": k},
                )
            keys[k] = leaf_value(snode.children[k], key_el, f"{path}/{self.prefix}:{k}")
        pred = "".join(f"[{self.prefix}:{k}='{v}']" for k, v in keys.items())
        epath = path + pred
        entries: list[dict[str, Any]] = parent.setdefault(key, [])
        match = next((e for e in entries if all(e.get(k) == v for k, v in keys.items())), None)
        if op in ("delete", "remove"):
            if match is None:
                if op == "delete":
                    raise RpcError(
                        ErrorTag.DATA_MISSING,
                        f"cannot delete {snode.name} {_describe(keys)}: it does not exist",
                        ErrorType.APPLICATION,
                        epath,
                    )
                return
            entries.remove(match)
            self.changed = True
            return
        if op == "create" and match is not None:
            raise RpcError(
                ErrorTag.DATA_EXISTS,
                f"{snode.name} {_describe(keys)} already exists",
                ErrorType.APPLICATION,
                epath,
            )
        if op == "replace" and match is not None:
            entries.remove(match)
            match = None
        if match is None:
            entry = dict(keys)
            before = self.changed
            self.children(
                entry, snode, el, "merge" if op != "none" else "none", epath, keys=snode.keys
            )
            if op != "none" or self.changed != before:
                entries.append(entry)
                self.changed = True
            return
        self.children(
            match, snode, el, "merge" if op in ("create", "replace") else op, epath, keys=snode.keys
        )

    def leaf(
        self,
        parent: dict[str, Any],
        key: str,
        snode: SchemaNode,
        el: etree._Element,
        op: str,
        path: str,
    ) -> None:
        if op in ("delete", "remove"):
            if op == "delete" and key not in parent:
                raise RpcError(
                    ErrorTag.DATA_MISSING,
                    "cannot delete: the leaf has no value",
                    ErrorType.APPLICATION,
                    path,
                )
            self.changed |= parent.pop(key, None) is not None
            return
        if op == "none":
            return
        if op == "create" and key in parent:
            raise RpcError(
                ErrorTag.DATA_EXISTS,
                "cannot create: the leaf already has a value",
                ErrorType.APPLICATION,
                path,
            )
        parent[key] = leaf_value(snode, el, path)
        self.changed = True

    def leaf_list(
        self,
        parent: dict[str, Any],
        key: str,
        snode: SchemaNode,
        el: etree._Element,
        op: str,
        path: str,
    ) -> None:
        value = leaf_value(snode, el, path)
        values: list[Any] = parent.setdefault(key, [])
        if op in ("delete", "remove"):
            if value in values:
                values.remove(value)
                self.changed = True
            elif op == "delete":
                raise RpcError(
                    ErrorTag.DATA_MISSING,
                    f"{value!r} is not in the list",
                    ErrorType.APPLICATION,
                    path,
                )
            return
        if op == "create" and value in values:
            raise RpcError(
                ErrorTag.DATA_EXISTS,
                f"{value!r} is already in the list",
                ErrorType.APPLICATION,
                path,
            )
        if op != "none" and value not in values:
            values.append(value)
            self.changed = True


def _describe(keys: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v!r}" for k, v in keys.items())


def _prune(node: Any) -> Any:
    """Drop containers and lists left empty: the model has no presence containers."""
    if isinstance(node, dict):
        out = {k: _prune(v) for k, v in node.items()}
        return {k: v for k, v in out.items() if v not in ({}, [])}
    if isinstance(node, list):
        return [_prune(v) for v in node]
    return node


def apply_edit(
    tree: dict[str, Any], config: etree._Element, default_operation: str = "merge"
) -> dict[str, Any]:
    """A new tree with the edit in <config> applied; raises RpcError with the element's path."""
    if default_operation not in ("merge", "replace", "none"):
        raise RpcError(
            ErrorTag.INVALID_VALUE,
            f"default-operation {default_operation!r} must be merge, replace or none",
            ErrorType.PROTOCOL,
        )
    new = copy.deepcopy(tree)
    if default_operation == "replace":
        new = {}
    _Editor().children(new, root(), config, default_operation, "", top=True)
    return _prune(new)
