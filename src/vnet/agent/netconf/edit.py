"""<edit-config> content applied to a datastore tree (RFC 6241 section 7.2).

Operations merge, replace, create, delete and remove, inherited downwards
and overridable per element; default-operation none only traverses. The
result is a new RFC 7951 tree: the datastore validates and commits it as a
whole, so an edit is all or nothing (stronger than stop-on-error).

The given tree is never changed: the editor copies each container, list and
entry on its way down before it changes it (copy on write), and shares every
other one with the given tree, so an edit costs what it touches, not the size
of the datastore. List entries are found through an index of their keys, built
once per list and edit, or copied from the edit that left the list.
"""

from __future__ import annotations

import copy
import threading
from collections import OrderedDict
from typing import Any

from lxml import etree

from vnet.model.yang.decode import element_name, leaf_value
from vnet.model.yang.errors import ErrorTag, ErrorType, RpcError
from vnet.model.yang.module import MODULE, NACM_MODULE
from vnet.model.yang.module import NETCONF_NS as NC
from vnet.model.yang.paths import key_predicate
from vnet.model.yang.schema import NAMESPACE, PREFIX, SchemaNode, namespace_of, root

OPERATIONS = ("merge", "replace", "create", "delete", "remove", "none")
Entries = list[dict[str, Any]]  # a list's entries (the editor has a method named list)
KeyIndex = dict[tuple[Any, ...], dict[str, Any]]  # a list's entries by their keys


# the modules whose configuration an edit may carry, by XML namespace
EDITABLE = {NAMESPACE: (MODULE, PREFIX), namespace_of(NACM_MODULE): (NACM_MODULE, "nacm")}


class _KeptIndexes:
    """The key indexes of the lists the last edits left, for the next edit of the same list
    (running's, once the edit is committed): building one walks every entry, copying one
    is a fraction of that. Each is held with its list, so that an id stays its list's; a
    list is never changed once an edit has left it (trees are never changed in place)."""

    SIZE = 16

    def __init__(self) -> None:
        self._kept: OrderedDict[int, tuple[Entries, KeyIndex]] = OrderedDict()
        self._lock = threading.Lock()  # edits of two datastores may run in two threads

    def copy_of(self, entries: Entries | None) -> KeyIndex | None:
        with self._lock:
            kept = self._kept.get(id(entries))
        return dict(kept[1]) if kept is not None and kept[0] is entries else None

    def keep(self, lists: list[tuple[Entries, KeyIndex]]) -> None:
        with self._lock:
            for entries, index in lists:
                self._kept[id(entries)] = (entries, index)
                self._kept.move_to_end(id(entries))
            while len(self._kept) > self.SIZE:
                self._kept.popitem(last=False)


_KEPT = _KeptIndexes()


class _Editor:
    def __init__(self) -> None:
        self.changed = False
        self.module, self.namespace, self.prefix = MODULE, NAMESPACE, PREFIX
        self.own: set[int] = set()  # ids of the nodes this edit made (its own to change)
        # by id of a list of entries: those this edit put into it or changed (its own)
        self.made_in: dict[int, list[dict[str, Any]]] = {}
        self.keyed: dict[int, tuple[Entries, KeyIndex]] = {}  # by id of the list

    def mine(self, parent: dict[str, Any], key: str, empty: type) -> Any:
        """parent[key], made this edit's own (a copy of the shared node) first."""
        node = parent.get(key)
        if node is None:
            node = parent[key] = empty()
        elif id(node) not in self.own:
            node = parent[key] = copy.copy(node)
        self.own.add(id(node))
        return node

    def entry_index(
        self, entries: Entries, keys: tuple[str, ...], shared: Entries | None
    ) -> KeyIndex:
        """The index of `entries`, this edit's copy of the list `shared` (its entries the
        same objects): the one an earlier edit left of `shared`, else built."""
        known = self.keyed.get(id(entries))
        if known is not None:
            return known[1]
        index = _KEPT.copy_of(shared)
        if index is None:
            if len(keys) == 1:  # (most lists: a sixth of the time of the general form)
                key = keys[0]
                index = {(e.get(key),): e for e in entries}
            else:
                index = {tuple(e.get(k) for k in keys): e for e in entries}
        self.keyed[id(entries)] = (entries, index)
        return index

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
        target = self.mine(parent, key, dict)
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
        keys = self.list_keys(snode, el, path)
        epath = path + key_predicate(keys.items(), self.prefix)
        shared = parent.get(key)
        entries: Entries = self.mine(parent, key, list)
        index = self.entry_index(entries, snode.keys, shared)
        found = tuple(keys[k] for k in snode.keys)
        match = index.get(found)
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
            _remove(entries, match)
            del index[found]
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
            _remove(entries, match)
            del index[found]
            match = None
        if match is None:
            entry = dict(keys)
            before = self.changed
            self.children(
                entry, snode, el, "merge" if op != "none" else "none", epath, keys=snode.keys
            )
            if op != "none" or self.changed != before:
                entries.append(entry)
                index[found] = entry
                self.made(entries, entry)
                self.changed = True
            return
        match = self.own_entry(entries, index, found)
        self.children(
            match, snode, el, "merge" if op in ("create", "replace") else op, epath, keys=snode.keys
        )

    def list_keys(self, snode: SchemaNode, el: etree._Element, path: str) -> dict[str, Any]:
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
        return keys

    def own_entry(
        self,
        entries: Entries,
        index: KeyIndex,
        found: tuple[Any, ...],
    ) -> dict[str, Any]:
        """The entry at `found`, made this edit's own (copied in place) before it changes."""
        match = index[found]
        if id(match) not in self.own:
            position = next(i for i, e in enumerate(entries) if e is match)
            match = entries[position] = index[found] = dict(match)
            self.made(entries, match)
        return match

    def made(self, entries: Entries, entry: dict[str, Any]) -> None:
        """`entry`, in `entries`, is this edit's own."""
        self.own.add(id(entry))
        self.made_in.setdefault(id(entries), []).append(entry)

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
        values: list[Any] = self.mine(parent, key, list)
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


def _remove(entries: list[dict[str, Any]], entry: dict[str, Any]) -> None:
    """Remove `entry` itself (not an equal one: list.remove compares by value)."""
    del entries[next(i for i, e in enumerate(entries) if e is entry)]


def _describe(keys: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v!r}" for k, v in keys.items())


def _prune(node: Any, editor: _Editor) -> Any:
    """Drop containers and lists left empty: the model has no presence containers. Only
    the nodes the edit made can have become empty; the shared ones are as they were. A
    node none of whose members changed is returned itself (its key index stays right)."""
    own = editor.own
    if id(node) not in own:
        return node
    if isinstance(node, dict):
        out = {}
        for k, v in node.items():
            if (kept := _prune(v, editor)) not in ({}, []):
                out[k] = kept
        same = len(out) == len(node) and all(out[k] is v for k, v in node.items())
        return node if same else out
    if isinstance(node, list):
        # of a list of entries, only those the edit made can change (a list of thousands
        # has one or two); a leaf-list's values are never a node's
        made = editor.made_in.get(id(node), [])
        changed = {
            id(v): kept for v in made if id(v) in own and (kept := _prune(v, editor)) is not v
        }
        return [changed.get(id(v), v) for v in node] if changed else node
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
    new = {} if default_operation == "replace" else dict(tree)
    editor = _Editor()
    editor.own.add(id(new))
    editor.children(new, root(), config, default_operation, "", top=True)
    _KEPT.keep(list(editor.keyed.values()))
    return _prune(new, editor)
