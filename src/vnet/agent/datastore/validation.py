"""A candidate tree becomes a HostConfig only if it satisfies the model's invariants (with
exact error paths) and then the YANG module (libyang)."""

from __future__ import annotations

import socket
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any, cast

import libyang

from vnet.agent.config import AgentConfig
from vnet.agent.datastore import journal
from vnet.agent.datastore.incremental import (
    Change,
    ConnectionMemo,
    RouterIndex,
    has_guarantees,
    yang_tree,
)

__all__ = [
    "Change",
    "Validator",
    "host_config",
    "prepare",
    "require_underlay_interfaces",
    "validated",
]
from vnet.model import TopologyError
from vnet.model.check import check_host
from vnet.model.host import HostConfig
from vnet.model.resolve import next_free_index
from vnet.model.topology import VirtualRouter
from vnet.model.yang import host as codec
from vnet.model.yang.errors import ErrorTag, ErrorType, RpcError
from vnet.model.yang.guarantees import KnownConnection, connections_of
from vnet.model.yang.module import PREFIX, ROUTERS
from vnet.model.yang.paths import entry_path
from vnet.model.yang.schema import validate
from vnet.substrate import KernelState, Placement, realize_host
from vnet.substrate.realize import Members, realize_host_change, realize_host_connections

Tree = dict[str, Any]


class Validator:
    """`prepare` for commits: the checks a change needs (incremental.py), with the index
    of running that `committed` moves on; and the desired kernel state of a change
    (`realized`), from running's when only VRs changed."""

    def __init__(self, config: AgentConfig, placement: Placement) -> None:
        self.config = config
        self.placement = placement
        self.index = RouterIndex()
        self.connections = ConnectionMemo()
        # running's tree and what realize_host made of it (None: not known), and that
        # realisation's bridge shortcut members (None: found when needed)
        self.realization: tuple[Tree, KernelState] | None = None
        self.members: Members | None = None
        self._made: _Made | None = None
        # the last tree prepared over running, and the answer: a <commit> of the candidate
        # a <validate> just checked takes it as it is (trees are never changed in place)
        self._prepared: tuple[Tree, Tree, tuple[Tree, HostConfig, Change]] | None = None

    def prepare(self, tree: Tree, running: Tree) -> tuple[Tree, HostConfig, Change]:
        """As `prepare`, and the change for `committed` once `tree` is running."""
        last = self._prepared
        if last is not None and last[0] is tree and last[1] is running:
            return last[2]
        answer = self._prepare(tree, running)
        self._prepared = (tree, running, answer)
        return answer

    def _prepare(self, tree: Tree, running: Tree) -> tuple[Tree, HostConfig, Change]:
        tree = _with_indexes(self.config, tree, running)
        change = self.index.change(tree, running)
        known = self.connections.known
        if not change.incremental:
            return tree, validated(self.config, tree, known), change
        hc = _parsed(self.config, tree, self._routers(tree, change), known)
        if self.index.problems_likely(hc, change) or not _yang_valid(yang_tree(change, hc)):
            hc = validated(self.config, tree, known)  # the full checks' answer; it raises
            return tree, hc, replace(change, incremental=False)
        return tree, hc, change

    def _routers(self, tree: Tree, change: Change) -> list[VirtualRouter | dict[str, Any]]:
        """`tree`'s VRs, parallel to its entries: running's model objects for the entries
        running has (by position when the list kept its order, in time that follows the
        change), the data of those the change puts."""
        entries = codec.routers_of(tree)
        host = self.config.host
        running = self.index.running
        if running is not None and change.listed is not None:
            known = cast(list[VirtualRouter | dict[str, Any]], running.routers)
            made = change.listed.aligned(known, lambda q: codec.router_data(entries[q], host))
            if made is not None:
                return made
        return [
            vr if (vr := self.index.known(r)) is not None else codec.router_data(r, host)
            for r in entries
        ]

    def realized(self, hc: HostConfig, change: Change) -> KernelState:
        """realize_host(hc), in time that follows the change when only VRs, or only
        connections, changed."""
        base = self.realization
        self._made = None
        if base is None or base[0] is not self.index.base or not change.incremental:
            return realize_host(hc, self.placement)
        if change.connections_only:
            return self._connections_realized(base, hc, change)
        if has_guarantees(hc) or change.connections is not None:
            return realize_host(hc, self.placement)
        gone = [self.index.facts[name].vr for name in change.gone]
        made = change.routers_made(hc)
        desired, touched, members = realize_host_change(
            base[1], hc, self.placement, gone, made, self.members
        )
        self._made = _Made(desired, base[1], touched, members)
        return desired

    def _connections_realized(
        self, base: tuple[Tree, KernelState], hc: HostConfig, change: Change
    ) -> KernelState:
        """realize_host(hc) from running's realisation, when only connections changed: the
        pieces of those deleted or replaced out, of those new or replacing in."""
        memo = self.connections.parsed  # running's connections, all of them or none
        if len(memo) != len(connections_of(base[0])):
            return realize_host(hc, self.placement)
        if any(name not in memo for name in change.connections_deleted):
            return realize_host(hc, self.placement)
        gone = [memo[name][1] for name in change.connections_gone() if name in memo]
        made = change.connections_made(hc)
        desired, touched = realize_host_connections(base[1], hc, self.placement, gone, made)
        self._made = _Made(desired, base[1], touched)
        return desired

    def plan_scope(self, desired: KernelState, actual: KernelState | None) -> KernelState | None:
        """The objects that may differ between `desired` and `actual`, if `desired` is what
        `realized` last made from `actual` (a change of VRs only, or of connections only;
        else None: plan compares every one)."""
        made = self._made
        if made is None or made.desired is not desired or made.base is not actual:
            return None
        return made.touched

    def committed(
        self, tree: Tree, hc: HostConfig, change: Change, desired: KernelState | None = None
    ) -> None:
        """`tree` is running now (`desired`: its realisation, if it was made)."""
        self._prepared = None
        self.index.advance(tree, hc, change)
        self.connections.advance(tree, hc, change)
        self.realization = (tree, desired) if desired is not None else None
        made = self._made
        self.members = made.members if made is not None and made.desired is desired else None
        self._made = None

    def forget(self) -> None:
        """Running changed other than through `committed`: the next check is a full one."""
        self._prepared = None
        self.index.reset()
        self.connections.reset()
        self.realization = None
        self.members = None
        self._made = None


@dataclass(frozen=True)
class _Made:
    """The last state `realized` made from running's realisation (`base`) by changing only
    some VRs or connections, the objects that may differ between them, and (VRs) the
    bridge shortcut members of `desired`."""

    desired: KernelState
    base: KernelState
    touched: KernelState
    members: Members | None = None


def prepare(config: AgentConfig, tree: Tree, running: Tree) -> tuple[Tree, HostConfig]:
    """A copy of `tree` with missing VR indexes assigned, and its validated HostConfig."""
    tree = _with_indexes(config, tree, running)
    return tree, validated(config, tree)


def _with_indexes(config: AgentConfig, tree: Tree, running: Tree) -> Tree:
    """`tree` with missing VR indexes assigned: a new tree, sharing the entries it does not
    change (trees are never changed in place), so this costs what the change does."""
    tree = dict(tree)
    if not config.provision_networks and codec.networks_of(tree) != codec.networks_of(running):
        raise RpcError(
            ErrorTag.ACCESS_DENIED,
            "this host's virtual networks are provisioned by its lab; "
            "change them in the lab's topology file",
            ErrorType.APPLICATION,
            "/vr:virtual-networks",
        )
    routers = codec.routers_of(tree)
    listed = journal.router_change(running, tree)
    # running's entries have theirs: only those the change puts can lack one
    if all("index" in r for r in (routers if listed is None else listed.put)):
        return tree
    used = {int(r["index"]) for r in routers if "index" in r}
    for k, r in enumerate(routers):
        if "index" not in r:
            routers[k] = r = {**r, "index": next_free_index(used)}
            used.add(r["index"])
    tree[ROUTERS] = {**tree[ROUTERS], "router": routers}
    return tree


def _yang_valid(tree: Tree) -> bool:
    try:
        dnode = validate(tree)
    except libyang.LibyangError:
        return False
    if dnode is not None:
        dnode.free()
    return True


def validated(
    config: AgentConfig, tree: dict[str, Any], known: KnownConnection | None = None
) -> HostConfig:
    """The tree's HostConfig, if it satisfies the model's invariants and then YANG
    (`known`: connections parsed before, see `_parsed`)."""
    hc = host_config(config, tree, known)
    try:
        dnode = validate(tree)
    except libyang.LibyangError as err:
        raise RpcError(
            ErrorTag.INVALID_VALUE, _libyang_message(err), ErrorType.APPLICATION
        ) from None
    if dnode is not None:
        dnode.free()
    return hc


def host_config(
    config: AgentConfig, tree: dict[str, Any], known: KnownConnection | None = None
) -> HostConfig:
    """The tree's HostConfig if the model's invariants hold; else the first problem, at its path."""
    hc = _parsed(config, tree, known_connection=known)
    if problems := check_host(hc):
        raise _problem_error(TopologyError(problems, "configuration"), tree)
    return hc


def _parsed(
    config: AgentConfig,
    tree: Tree,
    routers: list[VirtualRouter | dict[str, Any]] | None = None,
    known_connection: KnownConnection | None = None,
) -> HostConfig:
    """The tree's HostConfig (`routers`, `known_connection`: the model objects of unchanged
    VRs and connections, reused; see codec.host_config), or RpcError with the first entry
    that does not parse."""
    try:
        return codec.host_config(
            tree, config.host, config.vtep, routers=routers, known_connection=known_connection
        )
    except TopologyError as err:
        raise _problem_error(err, tree) from None


def _problem_error(err: TopologyError, tree: Tree) -> RpcError:
    first = err.problems[0]
    more = f" (and {len(err.problems) - 1} more)" if len(err.problems) > 1 else ""
    return RpcError(
        ErrorTag.INVALID_VALUE,
        codec.problem_message(first) + more,
        ErrorType.APPLICATION,
        codec.error_path(first.loc, tree),
    )


def _libyang_message(err: libyang.LibyangError) -> str:
    text = str(err).removeprefix("failed to parse data tree: ")
    return f"the configuration does not satisfy the YANG model: {text}"


def require_underlay_interfaces(hc: HostConfig, already: Iterable[str] = ()) -> None:
    """Each underlay interface `hc` names, but for those in `already` (running's: checked
    when they came), is an interface of the agent's namespace; else RpcError invalid-value
    at its name, before anything is changed. (Without this check the kernel refused the
    interface's class tree halfway through the commit: a server error for a client's typo.)"""
    known = set(already)
    for interface in hc.underlay:
        if interface.name in known:
            continue
        try:
            socket.if_nametoindex(interface.name)
        except OSError:
            raise RpcError(
                ErrorTag.INVALID_VALUE,
                f"this host has no interface {interface.name!r} to shape as an underlay interface",
                ErrorType.APPLICATION,
                entry_path("underlay", "interface", interface.name) + f"/{PREFIX}:name",
            ) from None
