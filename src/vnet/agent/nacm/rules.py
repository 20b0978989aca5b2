"""The `ietf-netconf-acm:nacm` subtree -> the rules that apply to one user, compiled
into a trie over rule paths so a decision costs one dictionary step per tree level,
not one comparison per rule."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from vnet.agent.nacm import paths
from vnet.model.yang.errors import ErrorTag, ErrorType, RpcError
from vnet.model.yang.paths import entry_path, key_predicate

NACM = "ietf-netconf-acm:nacm"
OPS = ("create", "read", "update", "delete", "exec")


@dataclass(frozen=True)
class Rule:
    order: int  # position over all applicable rule-lists: lower wins (RFC 8341 3.4.5)
    name: str
    module: str  # '*' or a module name
    path: paths.RulePath | None
    rpc: str | None
    notification: str | None
    ops: frozenset[str]
    permit: bool


@dataclass
class TrieNode:
    """The rules whose path ends here (they cover this node and its descendants), and
    the steps below: without predicates, by list keys (a dict look-up), or others."""

    first: dict[str, Rule] = field(default_factory=dict)  # op -> lowest-order rule
    plain: dict[str, TrieNode] = field(default_factory=dict)
    keyed: dict[str, dict[tuple[str, ...], TrieNode]] = field(default_factory=dict)
    # one predicate on a leaf that is not the key (or the derived tenant): leaf -> value
    by_leaf: dict[str, dict[str, dict[str, TrieNode]]] = field(default_factory=dict)
    other: dict[str, list[tuple[tuple[tuple[str, str], ...], TrieNode]]] = field(
        default_factory=dict
    )
    names: set[str] = field(default_factory=set)  # the names of all the steps below
    key_names: dict[str, tuple[str, ...]] = field(default_factory=dict)  # list -> its keys

    def add(self, rule: Rule) -> None:
        for op in rule.ops:
            if op not in self.first or self.first[op].order > rule.order:
                self.first[op] = rule


@dataclass
class Settings:
    enabled: bool = True
    read_permit: bool = True
    write_permit: bool = False
    exec_permit: bool = True
    external_groups: bool = True


@dataclass
class RuleSet:
    """The compiled rules for one set of groups."""

    settings: Settings
    root: TrieNode  # children: 'module:top-name'
    module_rules: dict[str, dict[str, Rule]]  # module or '*' -> op -> first rule (no path)
    rpc_rules: list[Rule]


def _ops(value: Any) -> frozenset[str]:
    if value in (None, "*"):
        return frozenset(OPS)
    return frozenset(str(value).split())


def _rule_error(list_name: str, rule_name: str, message: str) -> RpcError:
    path = (
        entry_path("nacm", "rule-list", list_name, "nacm")
        + f"/nacm:rule{key_predicate([('name', rule_name)], 'nacm')}/nacm:path"
    )
    return RpcError(
        ErrorTag.INVALID_VALUE, f"invalid NACM rule path: {message}", ErrorType.APPLICATION, path
    )


def rule_of(list_name: str, entry: dict[str, Any], order: int) -> Rule:
    """One `rule` entry; RpcError (at the rule's path leaf) if its path names no data node."""
    path = None
    if "path" in entry:
        try:
            path = paths.parse(str(entry["path"]))
        except paths.PathError as err:
            raise _rule_error(list_name, entry.get("name", ""), str(err)) from None
    return Rule(
        order=order,
        name=f"{list_name}/{entry.get('name', '')}",
        module=str(entry.get("module-name", "*")),
        path=path,
        rpc=entry.get("rpc-name"),
        notification=entry.get("notification-name"),
        ops=_ops(entry.get("access-operations")),
        permit=entry.get("action") == "permit",
    )


def canonical(nacm: dict[str, Any]) -> dict[str, Any]:
    """`nacm` with every rule's path in the datastore's form (`paths.canonical`);
    RpcError at the first rule whose path names no data node."""
    lists = []
    for rl in nacm.get("rule-list", []):
        entries = []
        for entry in rl.get("rule", []):
            if "path" in entry:
                try:
                    entry = {**entry, "path": paths.canonical(str(entry["path"]))}
                except paths.PathError as err:
                    raise _rule_error(rl.get("name", ""), entry.get("name", ""), str(err)) from None
            entries.append(entry)
        lists.append({**rl, "rule": entries} if "rule" in rl else rl)
    return {**nacm, "rule-list": lists} if "rule-list" in nacm else nacm


def settings_of(nacm: dict[str, Any]) -> Settings:
    return Settings(
        enabled=nacm.get("enable-nacm", True) is not False,
        read_permit=nacm.get("read-default", "permit") == "permit",
        write_permit=nacm.get("write-default", "deny") == "permit",
        exec_permit=nacm.get("exec-default", "permit") == "permit",
        external_groups=nacm.get("enable-external-groups", True) is not False,
    )


def groups_of(nacm: dict[str, Any], user: str, external: tuple[str, ...]) -> frozenset[str]:
    """The user's groups: those of the NACM configuration that list the user, plus the
    groups the agent's configuration gives it (RFC 8341 external groups) if enabled."""
    mine = {
        g["name"] for g in nacm.get("groups", {}).get("group", []) if user in g.get("user-name", [])
    }
    if settings_of(nacm).external_groups:
        mine.update(external)
    return frozenset(mine)


def applicable(
    nacm: dict[str, Any], groups: frozenset[str], extra_lists: list[dict[str, Any]]
) -> list[Rule]:
    """The rules of the rule-lists naming one of `groups` (or '*'), in order; then those
    of `extra_lists` (the tenant template)."""
    rules: list[Rule] = []
    for rl in [*nacm.get("rule-list", []), *extra_lists]:
        if not groups.intersection(rl.get("group", [])) and "*" not in rl.get("group", []):
            continue
        for entry in rl.get("rule", []):
            rules.append(rule_of(rl["name"], entry, len(rules)))
    return rules


def _place(root: TrieNode, rule: Rule, keys_of: Any) -> None:
    node = root
    assert rule.path is not None
    for depth, step in enumerate(rule.path.steps):
        name = f"{step.module}:{step.name}" if depth == 0 else step.name
        keys = keys_of(rule.path.steps[: depth + 1])
        preds = dict(step.predicates)
        node.names.add(name)
        if not preds:
            node = node.plain.setdefault(name, TrieNode())
        elif keys and set(preds) == set(keys) and len(preds) == len(step.predicates):
            values = tuple(preds[k] for k in keys)
            node.key_names[name] = keys
            node = node.keyed.setdefault(name, {}).setdefault(values, TrieNode())
        elif len(step.predicates) == 1:
            ((leaf, value),) = step.predicates
            per_leaf = node.by_leaf.setdefault(name, {}).setdefault(leaf, {})
            node = per_leaf.setdefault(value, TrieNode())
        else:
            others = node.other.setdefault(name, [])
            found = next((n for p, n in others if p == step.predicates), None)
            if found is None:
                found = TrieNode()
                others.append((step.predicates, found))
            node = found
    node.add(rule)


def compile_rules(settings: Settings, rules: list[Rule], keys_of: Any) -> RuleSet:
    """`keys_of(steps)`: the key leaf names of the list the last step names (or ())."""
    root = TrieNode()
    module_rules: dict[str, dict[str, Rule]] = {}
    rpc_rules = []
    for rule in rules:
        if rule.path is not None and rule.path.steps:
            if rule.module in ("*", rule.path.module):
                _place(root, rule, keys_of)
            continue
        if rule.rpc is not None or rule.notification is not None:
            rpc_rules.append(rule)
            continue
        if rule.path is None:
            rpc_rules.append(rule)  # no rule type: it matches operations too
        per_op = module_rules.setdefault(rule.module, {})
        for op in rule.ops:
            per_op.setdefault(op, rule)
    return RuleSet(settings, root, module_rules, rpc_rules)
