"""Decisions for one user: which parts of a tree it may read, whether a change
old -> new is allowed node by node, whether it may run an operation (RFC 8341 3.4).

The walk carries, per tree level, the trie nodes of the rules whose paths are
still being followed and the lowest-order rule per operation met so far (a
rule covers its node and the node's descendants). Where no rule path goes
deeper, the decision holds for the whole subtree, which is then kept or
dropped without being visited.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from vnet.agent.nacm import paths
from vnet.agent.nacm.rules import Rule, RuleSet, TrieNode
from vnet.model.yang import host as codec
from vnet.model.yang import schema
from vnet.model.yang.errors import ErrorTag, ErrorType, RpcError
from vnet.model.yang.paths import key_predicate
from vnet.model.yang.schema import SchemaNode

MISSING: Any = object()
# nodes marked nacm:default-deny-all in their modules: without a rule, nobody but
# the recovery user reads or writes them
DENY_ALL_TOPS = frozenset({"ietf-netconf-acm:nacm"})
DEFAULT_DENY_RPCS = frozenset({"kill-session", "delete-config"})  # ietf-netconf
WRITE_OPS = ("create", "update", "delete")

State = tuple[list[TrieNode], dict[str, Rule]]


PIECES = ("ingress", "transit", "egress")  # a connection's pieces, each naming networks


class Trees:
    """What a path predicate may ask of a tree beyond the entry itself: the tenant of a
    router or a connection, from the networks it names."""

    def __init__(self, tree: dict[str, Any]):
        self.tenant_of = {n.get("name"): n.get("tenant") for n in codec.networks_of(tree)}
        self._tenants: dict[int, str | None] = {}  # id(entry) -> its tenant

    def entry_tenant(self, entry: dict[str, Any]) -> str | None:
        """The one tenant whose networks the entry names; None if none or several."""
        known = self._tenants.get(id(entry), MISSING)
        if known is MISSING:
            tenants = {self.tenant_of.get(n) for n in _networks_named(entry)}
            known = self._tenants[id(entry)] = tenants.pop() if len(tenants) == 1 else None
        return known

    def leaf(self, entry: dict[str, Any], leaf: str) -> str | None:
        """A leaf's value as a predicate compares it (the derived tenant if absent)."""
        if leaf in entry:
            return _text(entry[leaf])
        return self.entry_tenant(entry) if leaf == "tenant" else None


def _networks_named(entry: dict[str, Any]) -> list[Any]:
    """The networks of a router's interfaces, or of a connection's pieces."""
    if "interface" in entry:
        return [i.get("network") for i in entry["interface"]]
    pieces = [p for kind in PIECES for p in entry.get(kind, [])]
    return [p.get(leaf) for p in pieces for leaf in ("network", "lan-network") if leaf in p]


def _text(value: Any) -> str:
    if type(value) is str:
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _predicates_hold(preds: tuple[tuple[str, str], ...], entry: Any, trees: Trees) -> bool:
    return isinstance(entry, dict) and all(trees.leaf(entry, leaf) == want for leaf, want in preds)


def _key(entry: dict[str, Any], keys: tuple[str, ...]) -> tuple[str, ...]:
    if len(keys) == 1:
        return (_text(entry.get(keys[0])),)
    return tuple(_text(entry.get(k)) for k in keys)


def _entry_steps(
    t: TrieNode, name: str, entry: dict[str, Any], keys: tuple[str, ...], trees: Trees
) -> list[TrieNode]:
    """The steps below `t` that a list entry matches by its keys or other leaves."""
    out = []
    keyed = t.keyed.get(name)
    if keyed is not None:
        hit = keyed.get(_key(entry, keys))
        if hit is not None:
            out.append(hit)
    by_leaf = t.by_leaf.get(name)
    if by_leaf is not None:
        for leaf, by_value in by_leaf.items():
            hit = by_value.get(trees.leaf(entry, leaf))  # type: ignore[arg-type]
            if hit is not None:
                out.append(hit)
    others = t.other.get(name)
    if others is not None:
        out.extend(n for preds, n in others if _predicates_hold(preds, entry, trees))
    return out


def _reached(
    nodes: list[TrieNode], name: str, entry: Any, snode: SchemaNode, trees: Trees
) -> list[TrieNode]:
    """The trie nodes one step below `nodes` that the node `name` (`entry`) matches."""
    out = []
    for t in nodes:
        if name not in t.names:
            continue
        plain = t.plain.get(name)
        if plain is not None:
            out.append(plain)
        if type(entry) is dict:
            out.extend(_entry_steps(t, name, entry, snode.keys, trees))
    return out


def step(state: State, name: str, entry: Any, snode: SchemaNode, trees: Trees) -> State:
    """The state one level down, at the node `name` (`entry`: the list entry, if one)."""
    nodes, best = state
    if not nodes:
        return state
    return merged(_reached(nodes, name, entry, snode, trees), best)


def merged(below: list[TrieNode], best: dict[str, Rule]) -> State:
    """The state at trie nodes `below`: their rules count from here on."""
    for t in below:
        for op, rule in t.first.items():
            if op not in best or rule.order < best[op].order:
                best = {**best, op: rule}
    return [t for t in below if t.names], best


@dataclass
class _ListStep:
    """What the read walk needs to step into a list from one state."""

    plain: list[TrieNode]  # the steps without predicates
    common: State  # the state of an entry no predicate matches
    varying: list[TrieNode]  # trie nodes with predicate steps for this list
    permit: bool  # may the user read an entry in `common`?
    deeper: set[str]  # the names rule paths go on to from `common`
    # a list with one key whose predicate steps are all on that key: (key, the values
    # the rules name), so other entries need no look-up
    key_only: tuple[str, frozenset[str]] | None = None


class Access:
    """The compiled rules of one user (never the recovery user: that one is unrestricted)."""

    def __init__(self, user: str, rules: RuleSet):
        self.user = user
        self.rules = rules
        # the read walk meets the same few states again and again (one per combination
        # of rules): each is made once, so what depends only on it is computed once
        self._states: dict[tuple[int, ...], tuple[dict[str, Rule], State]] = {}
        self._lists: dict[tuple[str, int, bool], tuple[State, _ListStep]] = {}
        self._tops: dict[str, State] = {}

    # -- decisions -------------------------------------------------------------------
    def _top(self, member: str) -> State:
        if member not in self._tops:
            self._tops[member] = self._top_state(member)
        return self._tops[member]

    def _top_state(self, member: str) -> State:
        module = member.partition(":")[0]
        best: dict[str, Rule] = {}
        for scope in ("*", module):
            for op, rule in self.rules.module_rules.get(scope, {}).items():
                if op not in best or rule.order < best[op].order:
                    best[op] = rule
        return [self.rules.root], best

    def _permits(self, state: State, op: str, deny_all: bool) -> bool:
        rule = state[1].get(op)
        if rule is not None:
            return rule.permit
        if deny_all:
            return False
        s = self.rules.settings
        return s.read_permit if op == "read" else s.write_permit

    def may_exec(self, module: str, rpc: str) -> bool:
        """RFC 8341 3.4.4: may this user run the operation `rpc` of `module`?"""
        if rpc == "close-session":
            return True
        for rule in self.rules.rpc_rules:
            if rule.module not in ("*", module) or "exec" not in rule.ops:
                continue
            if rule.rpc in (None, "*", rpc) and (rule.rpc is not None or rule.notification is None):
                return rule.permit
        return rpc not in DEFAULT_DENY_RPCS and self.rules.settings.exec_permit

    # -- reading ---------------------------------------------------------------------
    def readable(self, tree: dict[str, Any]) -> dict[str, Any]:
        """The part of `tree` this user may read (shares unfiltered subtrees with it)."""
        trees = Trees(tree)
        out: dict[str, Any] = {}
        for member, value in tree.items():
            module, _, local = member.partition(":")
            snode = schema.root(module).child(local)
            if snode is None:
                continue
            kept = self._read(
                member, value, snode, self._top(member), member in DENY_ALL_TOPS, trees
            )
            if kept is not MISSING:
                out[member] = kept
        return out

    def _state(self, below: list[TrieNode], best: dict[str, Rule]) -> State:
        """`merged(below, best)`, the same object for the same arguments."""
        key = (*map(id, below), id(best))
        hit = self._states.get(key)
        if hit is None or hit[0] is not best:
            hit = self._states[key] = (best, merged(below, best))
        return hit[1]

    def _list_step(self, name: str, state: State, deny: bool) -> _ListStep:
        hit = self._lists.get((name, id(state), deny))
        if hit is None or hit[0] is not state:
            nodes = [t for t in state[0] if name in t.names]
            plain = [t.plain[name] for t in nodes if name in t.plain]
            common = self._state(plain, state[1])
            varying = [t for t in nodes if name in t.keyed or name in t.by_leaf or name in t.other]
            deeper = set().union(*(t.names for t in common[0]))
            ls = _ListStep(plain, common, varying, self._permits(common, "read", deny), deeper)
            if varying and all(not (t.by_leaf.get(name) or t.other.get(name)) for t in varying):
                keys = self.rules_keys(name, varying)
                ls.key_only = keys
            hit = self._lists[(name, id(state), deny)] = (state, ls)
        return hit[1]

    @staticmethod
    def rules_keys(name: str, varying: list[TrieNode]) -> tuple[str, frozenset[str]] | None:
        """(key, values) if every predicate step of `name` below `varying` is on one key."""
        values = [k for t in varying for k in t.keyed.get(name, {})]
        if not values or any(len(k) != 1 for k in values):
            return None
        key = next(iter(varying[0].key_names.get(name, ())), None)
        return None if key is None else (key, frozenset(v[0] for v in values))

    def _read(
        self, name: str, value: Any, snode: SchemaNode, state: State, deny: bool, trees: Trees
    ) -> Any:
        if snode.kind != "list" or type(value) is not list:
            below = _reached(state[0], name, value, snode, trees)
            return self._children(value, snode, self._state(below, state[1]), deny, trees)
        # a list: the steps without predicates are the same for every entry, so they are
        # taken once; only entries that a predicate matches get a state of their own
        ls = self._list_step(name, state, deny)
        kept = []
        for entry in value:
            here = self._entry_state(ls, name, entry, snode, state, trees)
            if here is ls.common and ls.deeper.isdisjoint(entry):
                out = entry if ls.permit else MISSING  # decided without a look inside
            elif not here[0]:  # no rule path goes below this entry: its decision holds
                out = entry if self._permits(here, "read", deny) else MISSING
            else:
                out = self._children(entry, snode, here, deny, trees)
            if out is not MISSING:
                kept.append(out)
        if len(kept) == len(value) and all(a is b for a, b in zip(kept, value, strict=True)):
            return value  # nothing taken out: the list itself, not a copy
        return kept or MISSING

    def _entry_state(
        self, ls: _ListStep, name: str, entry: Any, snode: SchemaNode, state: State, trees: Trees
    ) -> State:
        """The state of one list entry: the list's common one unless a predicate matches it."""
        if not ls.varying or type(entry) is not dict:
            return ls.common
        if ls.key_only is not None and _text(entry.get(ls.key_only[0])) not in ls.key_only[1]:
            return ls.common  # a single-key list whose rules name other entries
        hits = [h for t in ls.varying for h in _entry_steps(t, name, entry, snode.keys, trees)]
        return self._state(ls.plain + hits, state[1]) if hits else ls.common

    def _children(
        self, value: Any, snode: SchemaNode, state: State, deny: bool, trees: Trees
    ) -> Any:
        """`value` (the node's state taken) with what the user may not read taken out."""
        permit = self._permits(state, "read", deny)
        if not state[0] or type(value) is not dict:
            return value if permit else MISSING
        deeper = set().union(*(t.names for t in state[0]))
        if deeper.isdisjoint(value):  # no rule path goes into what this node holds
            return value if permit else MISSING
        out: dict[str, Any] = {}
        for k, v in value.items():
            child = snode.child(k) if k in deeper else None
            if child is None:  # no rule path goes there: this node's decision holds
                if permit:
                    out[k] = v
                continue
            kept = self._read(k, v, child, state, deny, trees)
            if kept is not MISSING:
                out[k] = kept
        if permit and len(out) == len(value) and all(out[k] is v for k, v in value.items()):
            return value  # nothing taken out
        if snode.kind == "list" and (permit or out):
            return {**{k: value[k] for k in snode.keys if k in value}, **out}
        return out if (permit or out) else MISSING

    # -- writing ---------------------------------------------------------------------
    def check_write(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        """RpcError access-denied at the first node old -> new changes without permission."""
        w = _Writes(self, Trees(old), Trees(new))
        for member in dict.fromkeys([*old, *new]):
            o, n = old.get(member, MISSING), new.get(member, MISSING)
            if o == n:
                continue
            module, _, local = member.partition(":")
            snode = schema.root(module).child(local)
            if snode is None:
                continue
            top = self._top(member)
            prefix = paths.module_prefix(module)
            w.deny = member in DENY_ALL_TOPS
            w.diff(local, o, n, snode, top, top, f"/{prefix}:{local}", prefix, member)


class _Writes:
    """One check of a change: walks old and new together, with both trees' predicates."""

    def __init__(self, access: Access, old: Trees, new: Trees):
        self.access, self.old, self.new = access, old, new
        self.deny = False

    def _require(self, op: str, state: State, path: str) -> None:
        if not self.access._permits(state, op, self.deny):
            raise RpcError(
                ErrorTag.ACCESS_DENIED,
                f"user {self.access.user!r} may not {op} this node (NACM)",
                ErrorType.APPLICATION,
                path,
            )

    def diff(
        self,
        name: str,
        o: Any,
        n: Any,
        snode: SchemaNode,
        so: State,
        sn: State,
        path: str,
        prefix: str,
        trie_name: str | None = None,
    ) -> None:
        tname = trie_name or name
        if snode.kind == "list":  # all the entries of a list: matched by their keys
            self._list(tname, o, n, snode, so, sn, path, prefix)
            return
        self._node(tname, o, n, snode, so, sn, path, prefix)

    def _node(
        self,
        name: str,
        o: Any,
        n: Any,
        snode: SchemaNode,
        so: State,
        sn: State,
        path: str,
        prefix: str,
    ) -> None:
        """One node (or list entry) that differs: deleted, created, or changed inside."""
        if n is MISSING:
            self.whole("delete", name, o, snode, so, self.old, path, prefix)
        elif o is MISSING:
            self.whole("create", name, n, snode, sn, self.new, path, prefix)
        else:
            self._changed(name, o, n, snode, so, sn, path, prefix)

    def _changed(
        self,
        name: str,
        o: Any,
        n: Any,
        snode: SchemaNode,
        so: State,
        sn: State,
        path: str,
        prefix: str,
    ) -> None:
        so = step(so, name, o, snode, self.old)
        sn = step(sn, name, n, snode, self.new)
        if not isinstance(o, dict) or not isinstance(n, dict):
            self._require("update", so, path)
            self._require("update", sn, path)
            return
        for k in dict.fromkeys([*o, *n]):
            ov, nv = o.get(k, MISSING), n.get(k, MISSING)
            child = snode.child(k)
            if ov != nv and child is not None:
                self.diff(k, ov, nv, child, so, sn, f"{path}/{prefix}:{k}", prefix)

    def _list(
        self,
        name: str,
        o: Any,
        n: Any,
        snode: SchemaNode,
        so: State,
        sn: State,
        path: str,
        prefix: str,
    ) -> None:
        def by_key(entries: Any) -> dict[tuple[str, ...], Any]:
            if entries is MISSING:
                return {}
            return {tuple(_text(e.get(k)) for k in snode.keys): e for e in entries}

        old, new = by_key(o), by_key(n)
        for key in dict.fromkeys([*old, *new]):
            oe, ne = old.get(key, MISSING), new.get(key, MISSING)
            if oe == ne:
                continue
            pred = key_predicate(zip(snode.keys, key, strict=True), prefix)
            self._node(name, oe, ne, snode, so, sn, path + pred, prefix)

    def whole(
        self,
        op: str,
        name: str,
        value: Any,
        snode: SchemaNode,
        state: State,
        trees: Trees,
        path: str,
        prefix: str,
    ) -> None:
        """A subtree created or deleted: every node of it needs `op`, except non-presence
        containers, which have no existence of their own (the model has no others)."""
        if snode.kind == "list" and isinstance(value, list):
            for e in value:
                pred = "".join(f"[{prefix}:{k}='{_text(e.get(k))}']" for k in snode.keys)
                self.whole(op, name, e, snode, state, trees, path + pred, prefix)
            return
        state = step(state, name, value, snode, trees)
        if snode.kind != "container":
            self._require(op, state, path)
            if not state[0]:
                return  # no rule below: the node's decision covers its subtree
        if isinstance(value, dict):
            for k, v in value.items():
                child = snode.child(k)
                if child is not None and k not in snode.keys:
                    self.whole(op, k, v, child, state, trees, f"{path}/{prefix}:{k}", prefix)
