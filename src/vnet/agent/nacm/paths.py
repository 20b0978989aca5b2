"""NACM rule paths (RFC 8341 node-instance-identifier) checked against the schema.

A path names data nodes from the top: `/vr:routers/vr:router[vr:name='r1']/vr:route`.
Each step may carry a prefix (a module's prefix or name; a step without one is in
its parent's module) and predicates `[leaf='value']` on the list's leaves. `/`
alone names everything. vnet adds one derived predicate, `[vr:tenant='T']`, on a
router (true when every interface of the router is on a network of tenant T) and
on an SRv6 connection (true when every network its pieces name is T's): neither
has a tenant leaf of its own; their networks say whose they are.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

from vnet.model.yang import schema
from vnet.model.yang.paths import key_predicate
from vnet.model.yang.schema import SchemaNode

# (list step) -> the derived predicate it accepts
DERIVED = {("vnet-router", "router"): "tenant", ("vnet-router", "connection"): "tenant"}

_STEP = re.compile(r"\s*(?:(?P<prefix>[A-Za-z_][\w.\-]*):)?(?P<name>[A-Za-z_][\w.\-]*)\s*")
_PRED = re.compile(
    r"\[\s*(?:[A-Za-z_][\w.\-]*:)?(?P<leaf>[A-Za-z_][\w.\-]*)\s*=\s*"
    r"(?:'(?P<sq>[^']*)'|\"(?P<dq>[^\"]*)\")\s*\]"
)


class PathError(ValueError):
    """A rule path that names no data node; the message says which step and why."""


@dataclass(frozen=True)
class Step:
    module: str
    name: str
    predicates: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class RulePath:
    steps: tuple[Step, ...] = field(default_factory=tuple)  # () is '/': everything

    @property
    def module(self) -> str | None:
        return self.steps[0].module if self.steps else None


@functools.cache
def module_names() -> dict[str, str]:
    """Prefix or name -> module name, for the modules the agent serves."""
    names: dict[str, str] = {}
    for mod in schema.context():
        names[mod.name()] = mod.name()
        names.setdefault(mod.prefix(), mod.name())
    return names


def _split_steps(text: str) -> list[str]:
    """'/a/b[x='1/2']/c' -> ['a', "b[x='1/2']", 'c'] (slashes inside quotes stay)."""
    parts, current, quote = [], "", ""
    for ch in text[1:]:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "/":
            parts.append(current)
            current = ""
            continue
        current += ch
    parts.append(current)
    return parts


def _parse_step(raw: str, parent_module: str | None, where: str) -> tuple[Step, str]:
    m = _STEP.match(raw)
    if m is None:
        raise PathError(f"{where}: {raw!r} is not a node name")
    module = parent_module
    if m["prefix"]:
        module = module_names().get(m["prefix"])
        if module is None:
            raise PathError(f"{where}: no module with prefix or name {m['prefix']!r}")
    if module is None:
        raise PathError(f"{where}: the first step needs a module prefix, e.g. vr:{m['name']}")
    rest, preds = raw[m.end() :], []
    while rest:
        p = _PRED.match(rest)
        if p is None:
            raise PathError(f"{where}: cannot read the predicate {rest!r}; use [name='value']")
        preds.append((p["leaf"], p["sq"] if p["sq"] is not None else p["dq"]))
        rest = rest[p.end() :].strip()
    return Step(module, m["name"], tuple(preds)), module


def parse(text: str) -> RulePath:
    """The path's steps, each checked against the schema; PathError says where it fails."""
    text = text.strip()
    if text == "/":
        return RulePath()
    if not text.startswith("/"):
        raise PathError(f"{text!r} must start with '/' (an absolute path)")
    steps: list[Step] = []
    module: str | None = None
    node: SchemaNode | None = None
    for raw in _split_steps(text):
        where = "/" + "/".join(s.name for s in steps) + ("/" if steps else "") + raw.strip()
        step, module = _parse_step(raw, module, f"at {where!r}")
        node = _check_step(node, step, where)
        steps.append(step)
    return RulePath(tuple(steps))


def _check_step(parent: SchemaNode | None, step: Step, where: str) -> SchemaNode:
    if parent is None:
        parent = schema.root(step.module)
    child = parent.child(step.name)
    if child is None or not child.is_data:
        within = parent.name or f"module {step.module}"
        raise PathError(f"at {where!r}: {step.name!r} is not a data node of {within}")
    for leaf, _ in step.predicates:
        derived = DERIVED.get((step.module, step.name))
        leaf_node = child.child(leaf) if child.kind == "list" else None
        if leaf != derived and (leaf_node is None or leaf_node.kind != "leaf"):
            raise PathError(f"at {where!r}: {leaf!r} is not a leaf of the list {step.name!r}")
    return child


@functools.cache
def module_prefix(module: str) -> str:
    """The prefix error paths use for `module`'s nodes (vr, nacm, ...)."""
    return next((m.prefix() for m in schema.context() if m.name() == module), module)


def canonical(text: str) -> str:
    """The path as RFC 7951 writes an instance identifier in JSON, the datastore's form:
    module names, not prefixes, and only where the module changes (libyang checks it
    so): /vnet-router:routers/router[name='r1']."""
    path = parse(text)
    if not path.steps:
        return "/"
    out, module = [], None
    for s in path.steps:
        name = s.name if s.module == module else f"{s.module}:{s.name}"
        out.append(name + key_predicate(s.predicates, prefix=None))
        module = s.module
    return "/" + "/".join(out)
