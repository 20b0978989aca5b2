"""The agent's NACM: the rules in the running datastore, the users of the agent's
configuration (their external groups and tenant), and the recovery user."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from vnet.agent.nacm import paths, rules, tenant
from vnet.agent.nacm.access import Access
from vnet.agent.telemetry import NACM_DENIALS
from vnet.model.agent_config import AgentConfig
from vnet.model.yang import host as codec
from vnet.model.yang import schema
from vnet.model.yang.errors import ErrorTag, ErrorType, RpcError
from vnet.model.yang.guarantees import UNDERLAY
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
            with _counted("data-write"):
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
        if ROUTERS in access.readable(tree):
            return True
        NACM_DENIALS.labels("notification").inc()
        return False

    def may_read_underlay(self, user: str | None, running: dict[str, Any], name: str) -> bool:
        """May `user` read the underlay interface `name` (for its notifications)?"""
        access = self.access(user, running)
        if access is None:
            return True
        if UNDERLAY in access.readable({UNDERLAY: {"interface": [{"name": name}]}}):
            return True
        NACM_DENIALS.labels("notification").inc()
        return False

    def may_exec(self, user: str | None, running: dict[str, Any], module: str, rpc: str) -> bool:
        access = self.access(user, running)
        if access is None or access.may_exec(module, rpc):
            return True
        NACM_DENIALS.labels("operation").inc()
        return False

    # -- the shared candidate and the datastore's holders ----------------------------
    # Every session shares one candidate and one running datastore, so <commit> and
    # <discard-changes> act on what others staged, and a lock or a confirmed commit
    # stops everyone else. Each is decided by its effect (docs/agent.md).
    def authorise_commit(
        self, user: str | None, running: dict[str, Any], candidate: dict[str, Any], confirmed: bool
    ) -> None:
        """May `user` make `candidate` running? Only if it may make every change that
        brings (the edit running -> candidate); a confirmed commit also holds the
        datastore (no one else may commit until it is confirmed, and its rollback takes
        back everyone's changes since), so it needs the right to `lock` too."""
        access = self.access(user, running)
        if access is None:
            return
        if confirmed and not access.may_exec("ietf-netconf", "lock"):
            NACM_DENIALS.labels("operation").inc()
            raise RpcError(
                ErrorTag.ACCESS_DENIED,
                f"user {user!r} may not make a confirmed commit: it holds the datastore "
                "as <lock> does, and the user may not run 'lock' (NACM)",
                ErrorType.PROTOCOL,
            )
        _as_effect_of("commit", access, running, candidate)

    def authorise_discard(
        self, user: str | None, running: dict[str, Any], candidate: dict[str, Any], base: Any
    ) -> None:
        """May `user` drop the candidate's staged changes (the edit candidate -> `base`,
        the tree they were made on)?"""
        access = self.access(user, running)
        if access is not None:
            _as_effect_of("discard-changes", access, candidate, base)


def _as_effect_of(operation: str, access: Access, old: dict[str, Any], new: dict[str, Any]) -> None:
    """The write check of old -> new, its refusal naming `operation`."""
    try:
        with _counted("data-write"):
            access.check_write(old, new)
    except RpcError as err:
        raise dataclasses.replace(
            err,
            message=f"{operation} would make a change user {access.user!r} may not make "
            f"(every session shares the candidate): {err.message}",
        ) from None


@contextmanager
def _counted(kind: str) -> Iterator[None]:
    """Count an access-denied refusal of the block (RFC 8341's denied-* counters)."""
    try:
        yield
    except RpcError as err:
        if err.tag == ErrorTag.ACCESS_DENIED:
            NACM_DENIALS.labels(kind).inc()
        raise
