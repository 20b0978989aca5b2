"""RESTCONF methods on an RFC 7951 datastore tree, as pure functions.

Each edit takes the running tree and returns a new one (the caller commits
it through the datastore, which validates, applies and persists it): the nodes
on the way to the target are copied, every other one is shared with the given
tree, which is never changed (a deep copy of the tree took most of a create's
time with 1000 VRs present, and unchanged VRs are then known by identity).
Containers in this model are non-presence: they always exist (empty when
they hold nothing), so a GET of an empty container answers `{}` and a POST
into it needs no prior create.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

from vnet.agent.restconf.paths import DataPath, StatusError, Step, not_found, xpath
from vnet.model.yang.errors import ErrorTag, ErrorType, RpcError
from vnet.model.yang.schema import MODULE, SchemaNode, root


def _member(i: int, name: str) -> str:
    return f"{MODULE}:{name}" if i == 0 else name


def _matches(entry: dict[str, Any], keys: dict[str, Any]) -> bool:
    return all(entry.get(k) == v for k, v in keys.items())


def _position(entries: list[dict[str, Any]], keys: dict[str, Any]) -> int | None:
    """Where the entry with these keys is in a list (None: nowhere). A list of one key
    (most: the VRs by name) is searched in C: a loop in Python over 10,000 VRs (12 ms) was
    most of the agent's time in a RESTCONF edit of one (0.8 ms this way)."""
    if len(keys) == 1:
        ((key, value),) = keys.items()
        with contextlib.suppress(KeyError):  # (an entry without its key: looked at below)
            try:
                return list(map(itemgetter(key), entries)).index(value)
            except ValueError:
                return None
    return next((j for j, e in enumerate(entries) if _matches(e, keys)), None)


def _describe(step: Step) -> str:
    if step.keys:
        return f"{step.name} " + ", ".join(f"{v!r}" for v in step.keys.values())
    return repr(step.name)


@dataclass
class Slot:
    """Where the target of a path lives: holder[member] (and for a list entry, its index)."""

    holder: dict[str, Any]
    member: str
    step: Step
    index: int | None = None

    @property
    def exists(self) -> bool:
        if self.step.is_entry:
            return self.index is not None
        if self.step.node.kind == "container":
            return True  # non-presence
        return self.member in self.holder

    def value(self) -> Any:
        if self.step.is_entry:
            assert self.index is not None
            return self.holder[self.member][self.index]
        if self.step.node.kind == "container":
            return self.holder.get(self.member, {})
        return self.holder[self.member]


def walk(tree: dict[str, Any], path: DataPath, create: bool = False, own: bool = False) -> Slot:
    """The slot of the path's target; list entries on the way must exist (404).

    With `create`, containers on the way are made in `tree`, so the slot can be written.
    With `own`, every node on the way (containers, lists, the entries they pass through)
    is replaced in `tree` by a copy of its own first, so writing the slot changes no node
    `tree` shares with another tree: an edit costs what it touches (trees are never
    changed in place; `tree` itself must be the caller's own).
    """
    holder = tree
    for i, step in enumerate(path.steps):
        member = _member(i, step.name)
        last = i == len(path.steps) - 1
        if step.is_entry:
            assert step.keys is not None
            entries = holder.get(member, [])
            if own and (member in holder or create):
                entries = holder[member] = list(entries)
            index = _position(entries, step.keys)
            if last:
                if create:
                    holder.setdefault(member, entries)
                return Slot(holder, member, step, index)
            if index is None:
                raise not_found(_describe(step), xpath(path.steps[: i + 1]))
            if own:
                entries[index] = dict(entries[index])
            holder = entries[index]
        elif last:
            return Slot(holder, member, step)
        elif own and (member in holder or create):  # a container on the way
            holder[member] = holder = dict(holder.get(member, {}))
        else:
            holder = holder.setdefault(member, {}) if create else holder.get(member, {})
    raise AssertionError("walk() needs a path with at least one step")


def prune(node: Any) -> Any:
    """Drop containers and lists left empty (nothing here has presence)."""
    if isinstance(node, dict):
        out = {k: prune(v) for k, v in node.items()}
        return {k: v for k, v in out.items() if v not in ({}, [])}
    if isinstance(node, list):
        return [prune(v) for v in node]
    return node


def _pruned_on_the_way(tree: dict[str, Any], path: DataPath) -> dict[str, Any]:
    """`tree` (an edit's own on the way to the path's target, see walk) without the
    containers and lists the edit left empty: only the target and the nodes above it can
    have become so (the rest was pruned before, and what the edit put in was pruned)."""
    chain: list[tuple[dict[str, Any], str]] = []
    holder: Any = tree
    for i, step in enumerate(path.steps):
        member = _member(i, step.name)
        if not isinstance(holder, dict) or member not in holder:
            break
        chain.append((holder, member))
        holder = holder[member]
        if step.is_entry and i < len(path.steps) - 1:  # (the target itself is not looked at)
            assert step.keys is not None
            at = _position(holder, step.keys)
            holder = None if at is None else holder[at]
    for holder, member in reversed(chain):
        if holder[member] in ({}, []):
            del holder[member]
    return tree


# -- reading ---------------------------------------------------------------------
def get(tree: dict[str, Any], path: DataPath) -> tuple[str, Any]:
    """(qualified member name, value) of the target, in RFC 7951 form; 404 if absent."""
    if path.is_datastore:
        return "ietf-restconf:data", tree
    slot = walk(tree, path)
    step = slot.step
    if not slot.exists:
        raise not_found(_describe(step), path.xpath())
    value = slot.value()
    return f"{MODULE}:{step.name}", [value] if step.is_entry else value


def filter_content(value: Any, snode: SchemaNode, mode: str) -> Any:
    """RFC 8040 `content`: all, config (no state) or nonconfig (state, with list keys).

    Returns None when nothing of `value` is left.
    """
    if mode == "all":
        return value
    if not snode.config:
        return value if mode == "nonconfig" else None
    if snode.kind in ("leaf", "leaf-list"):
        return value if mode == "config" else None
    if snode.kind == "list":
        out = []
        for entry in value:
            kept = _filter_children(entry, snode, mode)
            if kept or mode == "config":
                out.append({**{k: entry[k] for k in snode.keys if k in entry}, **(kept or {})})
        return out or None
    kept = _filter_children(value, snode, mode)
    return kept if kept or mode == "config" else None


def _filter_children(obj: dict[str, Any], snode: SchemaNode, mode: str) -> dict[str, Any]:
    out = {}
    for member, v in obj.items():
        name = member.split(":", 1)[-1]
        child = snode.child(name)
        if child is None:
            continue
        kept = filter_content(v, child, mode)
        if kept is not None:
            out[member] = kept
    return out


def filter_tree(tree: dict[str, Any], mode: str) -> dict[str, Any]:
    return _filter_children(tree, root(), mode) if mode != "all" else tree


def limit_depth(value: Any, snode: SchemaNode, depth: int, level: int = 1) -> Any:
    """RFC 8040 `depth`: the target is level 1; nodes below `depth` are left out
    (list entries at the limit keep their keys, so they stay identifiable)."""
    if snode.kind in ("leaf", "leaf-list"):
        return value
    if snode.kind == "list":
        if level >= depth:
            return [{k: e[k] for k in snode.keys if k in e} for e in value]
        return [_limit_children(e, snode, depth, level) for e in value]
    if level >= depth:
        return {}
    return _limit_children(value, snode, depth, level)


def _limit_children(obj: dict[str, Any], snode: SchemaNode, depth: int, level: int) -> Any:
    out = {}
    for member, v in obj.items():
        child = snode.child(member.split(":", 1)[-1])
        if child is None:
            continue
        if child.kind in ("leaf", "leaf-list") and level + 1 > depth:
            continue
        out[member] = limit_depth(v, child, depth, level + 1)
    return out


def limit_tree(tree: dict[str, Any], depth: int) -> dict[str, Any]:
    """`depth` on the datastore resource: its top-level nodes are level 1."""
    out = {}
    for member, v in tree.items():
        child = root().child(member.split(":", 1)[-1])
        if child is not None:
            out[member] = limit_depth(v, child, depth, 1)
    return out


# -- writing ---------------------------------------------------------------------
def _check_body_names_target(path: DataPath, name: str, value: Any) -> None:
    """PUT/PATCH: the body is the target resource itself, with the URI's keys."""
    step = path.target
    assert step is not None
    if name != step.name:
        raise RpcError(
            ErrorTag.INVALID_VALUE,
            f"the body holds {f'{MODULE}:{name}'!r}, but the target resource is "
            f"{f'{MODULE}:{step.name}'!r}",
            ErrorType.PROTOCOL,
            path.xpath(),
        )
    if step.is_entry:
        assert step.keys is not None
        if len(value) != 1:
            raise RpcError(
                ErrorTag.INVALID_VALUE,
                f"the body must hold exactly one {step.name!r} entry, not {len(value)}",
                ErrorType.PROTOCOL,
                path.xpath(),
            )
        for k, v in step.keys.items():
            if value[0].get(k) != v:
                raise RpcError(
                    ErrorTag.INVALID_VALUE,
                    f"key {k!r} in the body ({value[0].get(k)!r}) differs from the one "
                    f"in the URI ({v!r})",
                    ErrorType.PROTOCOL,
                    path.xpath(),
                    info={"bad-element": k},
                )


def _datastore_body(name: str, value: Any) -> dict[str, Any]:
    if name != "":
        raise RpcError(
            ErrorTag.INVALID_VALUE,
            "a body for the datastore resource /restconf/data must be "
            '{"ietf-restconf:data": {...}} or <data xmlns="urn:ietf:params:xml:ns:yang:'
            'ietf-restconf">; to change one top-level node, send to its own URI',
            ErrorType.PROTOCOL,
            "/",
        )
    return dict(value)


def post(
    tree: dict[str, Any], path: DataPath, name: str, value: Any
) -> tuple[dict[str, Any], DataPath]:
    """Create child `name` of the target; 409 data-exists if it is there already."""
    new = dict(tree)
    value = prune(value)
    parent_node = path.node
    if path.is_datastore:
        if name == "":
            raise RpcError(
                ErrorTag.INVALID_VALUE,
                "POST to /restconf/data creates one top-level node, e.g. "
                f'{{"{MODULE}:routers": {{...}}}}; to replace the datastore use PUT',
                ErrorType.PROTOCOL,
                "/",
            )
        holder, member = new, f"{MODULE}:{name}"
    else:
        if parent_node.kind in ("leaf", "leaf-list"):
            raise StatusError(
                ErrorTag.OPERATION_NOT_SUPPORTED,
                f"{parent_node.name!r} is a {parent_node.kind}: nothing can be created in it",
                ErrorType.PROTOCOL,
                path.xpath(),
                status=405,
            )
        slot = walk(new, path, create=True, own=True)
        if not slot.exists:
            raise not_found(_describe(slot.step), path.xpath())
        if slot.step.is_entry:
            assert slot.index is not None
            entries = slot.holder[slot.member]
            holder = entries[slot.index] = dict(entries[slot.index])
        else:
            holder = slot.holder[slot.member] = dict(slot.holder.get(slot.member, {}))
        member = name
    child = parent_node.child(name)
    assert child is not None
    if child.kind == "list":
        if len(value) != 1:
            raise RpcError(
                ErrorTag.INVALID_VALUE,
                f"POST creates one {name!r} entry at a time; the body holds {len(value)}",
                ErrorType.PROTOCOL,
                path.xpath(),
            )
        entry = value[0]
        keys = {k: entry[k] for k in child.keys}
        created = path.child(Step(name, child, keys))
        entries = holder[member] = list(holder.get(member, []))
        if _position(entries, keys) is not None:
            raise RpcError(
                ErrorTag.DATA_EXISTS,
                f"{name} {', '.join(repr(v) for v in keys.values())} already exists",
                ErrorType.APPLICATION,
                created.xpath(),
            )
        entries.append(entry)
    else:
        created = path.child(Step(name, child))
        existing = holder.get(member)
        if existing not in (None, {}, []):
            raise RpcError(
                ErrorTag.DATA_EXISTS,
                f"{name!r} already exists; use PUT to replace it or PATCH to merge into it",
                ErrorType.APPLICATION,
                created.xpath(),
            )
        holder[member] = value
    return _pruned_on_the_way(new, created), created


def put(tree: dict[str, Any], path: DataPath, name: str, value: Any) -> tuple[dict[str, Any], bool]:
    """Create or replace the target; True if it was created."""
    if path.is_datastore:
        return prune(_datastore_body(name, value)), False
    _check_body_names_target(path, name, value)
    new = dict(tree)
    value = prune(value)
    slot = walk(new, path, create=True, own=True)
    step = slot.step
    if step.is_entry:
        entries = slot.holder[slot.member]
        created = slot.index is None
        if created:
            entries.append(value[0])
        else:
            assert slot.index is not None
            entries[slot.index] = value[0]
    else:
        created = slot.member not in slot.holder or slot.holder[slot.member] in ({}, [])
        slot.holder[slot.member] = value
    return _pruned_on_the_way(new, path), created


def merge(tree: dict[str, Any], path: DataPath, name: str, value: Any) -> dict[str, Any]:
    """Plain PATCH (RFC 8040 section 4.6.1): merge into the target, which must exist."""
    if path.is_datastore:
        body = prune(_datastore_body(name, value))
        return _merged_children(tree, root(), body, top=True)
    _check_body_names_target(path, name, value)
    value = prune(value)  # merged into a tree without empty nodes, it leaves none
    new = dict(tree)
    slot = walk(new, path, create=True, own=True)
    step = slot.step
    if not slot.exists:
        raise not_found(_describe(step), path.xpath())
    if step.is_entry:
        assert slot.index is not None
        entries = slot.holder[slot.member]
        entries[slot.index] = _merged_children(entries[slot.index], step.node, value[0])
    elif step.node.kind == "container":
        old = slot.holder.get(slot.member, {})
        slot.holder[slot.member] = _merged_children(old, step.node, value)
    else:
        slot.holder[slot.member] = _merged(step.node, slot.holder[slot.member], value)
    return _pruned_on_the_way(new, path)


def _merged(snode: SchemaNode, old: Any, new: Any) -> Any:
    """`new` merged into `old`: a new node, sharing what the merge leaves alone."""
    if snode.kind == "container":
        return _merged_children(old, snode, new)
    if snode.kind == "list":
        out = list(old)
        for entry in new:
            keys = {k: entry[k] for k in snode.keys}
            at = _position(out, keys)
            if at is None:
                out.append(entry)
            else:
                out[at] = _merged_children(out[at], snode, entry)
        return out
    if snode.kind == "leaf-list":
        return old + [v for v in new if v not in old]
    return new


def _merged_children(
    target: dict[str, Any], snode: SchemaNode, body: dict[str, Any], top: bool = False
) -> dict[str, Any]:
    out = dict(target)
    for member, value in body.items():
        child = snode.child(member.split(":", 1)[-1] if top else member)
        assert child is not None
        out[member] = _merged(child, out[member], value) if member in out else value
    return out


def delete(tree: dict[str, Any], path: DataPath) -> dict[str, Any]:
    """Remove the target, which must exist (404 otherwise)."""
    if path.is_datastore:
        raise StatusError(
            ErrorTag.OPERATION_NOT_SUPPORTED,
            "the datastore resource cannot be deleted; delete its top-level nodes",
            ErrorType.PROTOCOL,
            "/",
            status=405,
        )
    new = dict(tree)
    slot = walk(new, path, own=True)
    step = slot.step
    if step.is_entry:
        if slot.index is None:
            raise not_found(_describe(step), path.xpath())
        del slot.holder[slot.member][slot.index]
    else:
        if slot.holder.get(slot.member) in (None, {}, []):
            raise not_found(_describe(step), path.xpath())
        parent = path.steps[-2] if len(path.steps) > 1 else None
        if parent is not None and parent.is_entry and step.name in parent.node.keys:
            raise RpcError(
                ErrorTag.INVALID_VALUE,
                f"{step.name!r} is the key of {parent.name!r}: delete the entry instead",
                ErrorType.PROTOCOL,
                path.xpath(),
            )
        del slot.holder[slot.member]
    return _pruned_on_the_way(new, path)
