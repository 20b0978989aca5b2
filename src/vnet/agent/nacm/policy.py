"""The agent's NACM: the rules in the running datastore, the users of the agent's
configuration (their external groups and tenant), and the recovery user."""

from __future__ import annotations

from typing import Any

from vnet.agent.nacm import paths, rules, tenant
from vnet.agent.nacm.access import Access
from vnet.model.agent_config import AgentConfig
from vnet.model.yang import host as codec
from vnet.model.yang import schema
from vnet.model.yang.module import NETWORKS, ROUTERS


def _keys_of(steps: tuple[paths.Step, ...]) -> tuple[str, ...]:
    node = schema.root(steps[0].module)
    for s in steps:
        child = node.child(s.name)
        if child is None:
            return ()
        node = child
    return node.keys if node.kind == "list" else ()


class Nacm:
    """Access decisions for the agent's users, compiled once per NACM configuration."""

    def __init__(self, config: AgentConfig):
        self.config = config
        first = config.users[0].name if config.users else None
        self.recovery_user = config.recovery_user or first
        self._source: dict[str, Any] | None = None
        self._compiled: dict[str, Access | None] = {}
        # user -> (a running tree, what of it the user may read): the running tree is
        # never changed in place (a commit replaces it), so this holds until a commit
        self._readable_running: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}

    def access(self, user: str | None, running: dict[str, Any]) -> Access | None:
        """The rules for `user`; None when nothing is restricted (the agent itself,
        the recovery user, or NACM disabled)."""
        if user is None or user == self.recovery_user:
            return None
        nacm = running.get(rules.NACM, {})
        if nacm != self._source:
            self._source, self._compiled = nacm, {}
        if user not in self._compiled:
            self._compiled[user] = self._compile(user, nacm)
        return self._compiled[user]

    def _compile(self, user: str, nacm: dict[str, Any]) -> Access | None:
        settings = rules.settings_of(nacm)
        if not settings.enabled:
            return None
        agent_user = self.config.user(user)
        external = tuple(agent_user.groups) if agent_user else ()
        extra: list[dict[str, Any]] = []
        if agent_user is not None and agent_user.tenant is not None:
            external += (tenant.group(agent_user.tenant),)
            extra.append(tenant.rule_list(agent_user.tenant))
        groups = rules.groups_of(nacm, user, external)
        compiled = rules.compile_rules(settings, rules.applicable(nacm, groups, extra), _keys_of)
        return Access(user, compiled)

    # -- the three questions the front-ends and the datastore ask --------------------
    def readable(
        self, user: str | None, running: dict[str, Any], tree: dict[str, Any]
    ) -> dict[str, Any]:
        """`tree` without what `user` may not read (the rules come from `running`)."""
        access = self.access(user, running)
        if access is None:
            return tree
        if tree is not running or user is None:
            return access.readable(tree)
        cached = self._readable_running.get(user)
        if cached is None or cached[0] is not running:
            cached = self._readable_running[user] = (running, access.readable(running))
        return cached[1]

    def authorise_write(
        self,
        user: str | None,
        old: dict[str, Any],
        new: dict[str, Any],
        running: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """`new` with its rule paths in the datastore's form, if `user` may make the change
        old -> new under the rules of `running` (default: `old`); else RpcError
        (access-denied at the node, or invalid-value at a rule path naming no data node)."""
        nacm = new.get(rules.NACM)
        if nacm is not None and nacm != old.get(rules.NACM):
            new = {**new, rules.NACM: rules.canonical(nacm)}
        access = self.access(user, old if running is None else running)
        if access is not None:
            access.check_write(old, new)
        return new

    def may_read_router(self, user: str | None, running: dict[str, Any], name: str) -> bool:
        """May `user` read the VR `name` (for its notifications)? A VR no longer in
        `running` is judged by its name alone."""
        access = self.access(user, running)
        if access is None:
            return True
        routers = codec.routers_of(running)
        entry = next((r for r in routers if r.get("name") == name), {"name": name})
        tree = {ROUTERS: {"router": [entry]}, NETWORKS: running.get(NETWORKS, {})}
        return ROUTERS in access.readable(tree)

    def may_exec(self, user: str | None, running: dict[str, Any], module: str, rpc: str) -> bool:
        access = self.access(user, running)
        return access is None or access.may_exec(module, rpc)
