"""Validation that costs what a commit changes, not what the host holds.

`RouterIndex` remembers, for the running configuration, each VR's tree entry
and model object and what it contributes to the invariants between VRs: its
index, its addresses per network, its bridge ports per network. A commit that
changes only VRs and SRv6 connections (networks, locators and every other
top-level member as they were) is checked as:

- the changed VRs' and connections' entries become model objects (pydantic);
  the others are the objects of running, reused (`ConnectionMemo` for
  connections);
- the model's checks run over the changed VRs alone (with every network), and
  their indexes, addresses and bridge ports are looked up in the index of the
  VRs they do not replace;
- the guarantees (underlay classes, connections), when there are any, are
  checked in full when VRs changed: they name VRs, and their checks find what
  YANG would between entries (a connection naming a VR that is gone, an id
  twice); when only connections changed, the changed ones are checked on their
  own and against what the others hold (`ConnectionIndex`: ids, SIDs, steered
  packets), so a commit of one connection among thousands checks one;
- YANG (libyang) checks the tree with only the changed VRs and connections, the
  VRs those connections name (their leafrefs' targets), and the networks and
  underlay.

An entry unchanged since running passed every check, so these cover every
problem the full checks find. When any of them finds one, or anything else
changed, the full checks run instead, so the answer (message and path) is theirs.
"""

from __future__ import annotations

import copy
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from vnet.agent.datastore import journal
from vnet.model.bridge_ports import BRIDGE_MAX_PORTS
from vnet.model.check import check_host
from vnet.model.host import HostConfig
from vnet.model.host_guarantees import ConnectionPieces, Srv6OnHost
from vnet.model.host_guarantees_check import guarantee_problems
from vnet.model.host_guarantees_index import ConnectionIndex
from vnet.model.topology import VirtualRouter
from vnet.model.yang.guarantees import SRV6, connections_of
from vnet.model.yang.module import ROUTERS

Tree = dict[str, Any]
KEYED_ROUTER = journal.KEYED[ROUTERS]  # the VR list's name in its container


@dataclass(frozen=True)
class _Facts:
    entry: dict[str, Any]  # a private copy of the VR's tree entry
    vr: VirtualRouter
    addresses: tuple[tuple[str, object], ...]  # (network, address) per address
    networks: tuple[str, ...]  # one per interface: the bridge it takes a port on
    # the entry itself: an edit shares the entries it leaves alone with running, and trees
    # are never changed in place, so the same object is the same entry (no comparison)
    shared: dict[str, Any]


def _facts(entry: dict[str, Any], vr: VirtualRouter) -> _Facts:
    return _Facts(copy.deepcopy(entry), vr, *_contributions(vr), shared=entry)


def _contributions(vr: VirtualRouter) -> tuple[tuple[tuple[str, object], ...], tuple[str, ...]]:
    """A VR's (network, address) pairs, and the network of each of its bridge ports."""
    addresses = tuple(
        (itf.network, addr.ip)
        for itf in vr.interfaces
        for addr in (itf.ipv4, itf.ipv6)
        if addr is not None
    )
    return addresses, tuple(i.network for i in vr.interfaces)


@dataclass
class Change:
    """What a candidate tree changes against the index's base: the VRs to (re)check."""

    tree: Tree
    changed: list[dict[str, Any]]  # entries new or different, in tree order
    gone: set[str]  # names of VRs replaced or deleted (their old facts no longer count)
    incremental: bool  # False: check everything
    # the SRv6 connection entries new or different (None: the connections are as they were)
    connections: list[dict[str, Any]] | None = None
    connections_deleted: list[str] = field(default_factory=list)  # their names
    # the VR list's change against the base, entry by entry (incremental changes only)
    listed: journal.ListChange | None = field(default=None, repr=False)
    _made: tuple[HostConfig, list[ConnectionPieces]] | None = field(default=None, repr=False)
    _routers: tuple[HostConfig, list[VirtualRouter]] | None = field(default=None, repr=False)

    @property
    def connections_only(self) -> bool:
        """Only connections changed (no VR), and the change is checked incrementally."""
        return (
            self.incremental and self.connections is not None and not self.changed and not self.gone
        )

    def connections_put(self) -> set[str]:
        """The names of the connections new or changed."""
        return {entry["name"] for entry in self.connections or []}

    def connections_gone(self) -> set[str]:
        """The names of the connections deleted or changed (and those new: not held)."""
        return self.connections_put() | set(self.connections_deleted)

    def routers_made(self, hc: HostConfig) -> list[VirtualRouter]:
        """`hc`'s VRs new or changed (`hc.routers` is parallel to the tree's entries)."""
        if self._routers is None or self._routers[0] is not hc:
            if self.listed is not None:
                made = [hc.routers[q] for q in self.listed.put_at]
            else:
                names = _names(self.changed)
                made = [vr for vr in hc.routers if vr.name in names]
            self._routers = (hc, made)
        return self._routers[1]

    def for_routing(self, hc: HostConfig) -> tuple[list[VirtualRouter], set[str] | None]:
        """What RoutingSupervisor.sync looks at: `hc`'s VRs new or changed and their names
        with those gone, when the change was worked out VR by VR; else every VR (None)."""
        if not self.incremental:
            return hc.routers, None
        made = self.routers_made(hc)
        return made, {vr.name for vr in made} | self.gone

    def connections_made(self, hc: HostConfig) -> list[ConnectionPieces]:
        """`hc`'s connections new or changed (found once, for the checks, the kernel state
        and the index)."""
        if self._made is None or self._made[0] is not hc:
            names = self.connections_put()
            self._made = (hc, [conn for conn in hc.srv6.connections if conn.name in names])
        return self._made[1]


@dataclass
class RouterIndex:
    base: Tree | None = None  # the tree the index describes (running, by identity)
    others: Tree = field(default_factory=dict)  # its members other than the VRs
    facts: dict[str, _Facts] = field(default_factory=dict)
    index_owner: dict[int, str] = field(default_factory=dict)
    address_owner: dict[tuple[str, object], str] = field(default_factory=dict)
    ports: Counter[str] = field(default_factory=Counter)
    running: HostConfig | None = None  # the base's
    # what the base's connections hold (None: not built yet; built at the first change of
    # connections alone, then moved on by each)
    connection_index: ConnectionIndex | None = None

    def known(self, entry: dict[str, Any]) -> VirtualRouter | None:
        """The model object of an entry unchanged since the base, else None."""
        found = self.facts.get(entry.get("name"))  # type: ignore[arg-type]
        if found is None:
            return None
        return found.vr if found.shared is entry or found.entry == entry else None

    def change(self, tree: Tree, base: Tree) -> Change:
        others = {k: v for k, v in tree.items() if k != ROUTERS}
        alike, connections, deleted = _changed_connections(self.others, others)
        routers = tree.get(ROUTERS, {})
        listed = journal.router_change(base, tree)
        if (
            self.base is not base
            or not alike
            or routers.keys() - {KEYED_ROUTER}
            or listed is None
            or self._twice(listed)
        ):
            return Change(tree, list(routers.get(KEYED_ROUTER, [])), set(self.facts), False)
        gone = listed.replaced() | set(listed.delete)
        return Change(tree, listed.put, gone, True, connections, deleted, listed=listed)

    def _twice(self, listed: journal.ListChange) -> bool:
        """Whether a name is twice in the new VR list: only a new entry's can be (the
        base's are unique), with another new one's or with one kept from the base."""
        fresh = listed.fresh
        kept = [n for n in fresh if n in self.facts and n not in listed.was]
        return len(set(fresh)) != len(fresh) or bool(kept)

    def problems_likely(self, hc: HostConfig, change: Change) -> bool:
        """True unless the changed VRs are shown to satisfy every invariant (then False)."""
        changed = change.routers_made(hc)
        if any(vr.routing is not None and vr.routing.protocol != "static" for vr in changed):
            return True  # OSPF's invariants span VRs (areas, timers, router ids): full checks
        reduced = hc.model_copy(update={"routers": changed, "underlay": [], "srv6": Srv6OnHost()})
        if check_host(reduced):
            return True
        ports = Counter(self.ports)
        for name in change.gone:
            ports.subtract(self.facts[name].networks)
        for vr in changed:
            addresses, networks = _contributions(vr)
            if vr.index is not None and self._owned(self.index_owner.get(vr.index), change):
                return True
            if any(self._owned(self.address_owner.get(a), change) for a in addresses):
                return True
            ports.update(networks)
        vxlan = {c.network.name for c in hc.networks if c.remote_vteps and hc.vtep is not None}
        if any(n + (net in vxlan) > BRIDGE_MAX_PORTS for net, n in ports.items()):
            return True
        if not has_guarantees(hc):
            return False
        if change.connections_only:
            return self._connections_clash(hc, change)
        return bool(guarantee_problems(hc))

    def _connections_clash(self, hc: HostConfig, change: Change) -> bool:
        """guarantee_problems(hc), when only connections changed: the changed ones checked
        on their own and against what the others hold (ConnectionIndex)."""
        if self.connection_index is None:
            if self.running is None:
                return bool(guarantee_problems(hc))
            self.connection_index = ConnectionIndex.of(self.running.srv6.connections)
        made = change.connections_made(hc)
        return self.connection_index.clashes(hc, made, change.connections_gone())

    def _owned(self, owner: str | None, change: Change) -> bool:
        """Held by a VR that stays (not one the change replaces or deletes)."""
        return owner is not None and owner not in change.gone

    def advance(self, tree: Tree, hc: HostConfig, change: Change) -> None:
        """`tree` (with `hc`) is running now: describe it."""
        if change.connections_only and self.connection_index is not None:
            made = change.connections_made(hc)
            self.connection_index.update(change.connections_gone(), made)
        else:
            self.connection_index = None
        self.running = hc
        if not change.incremental:
            self._rebuild(tree, hc)
            return
        for name in change.gone:
            self._forget(name)
        entries = {r["name"]: r for r in change.changed}
        for vr in change.routers_made(hc):
            self._learn(_facts(entries[vr.name], vr))
        self.others = {k: v for k, v in tree.items() if k != ROUTERS}
        self.base = tree

    def _rebuild(self, tree: Tree, hc: HostConfig) -> None:
        self.facts.clear()
        self.index_owner.clear()
        self.address_owner.clear()
        self.ports.clear()
        for entry, vr in zip(tree.get(ROUTERS, {}).get("router", []), hc.routers, strict=True):
            self._learn(_facts(entry, vr))
        self.others = {k: v for k, v in tree.items() if k != ROUTERS}
        self.base = tree

    def _learn(self, facts: _Facts) -> None:
        name = facts.vr.name
        self.facts[name] = facts
        if facts.vr.index is not None:
            self.index_owner[facts.vr.index] = name
        for key in facts.addresses:
            self.address_owner[key] = name
        self.ports.update(facts.networks)

    def _forget(self, name: str) -> None:
        facts = self.facts.pop(name, None)
        if facts is None:
            return
        if self.index_owner.get(facts.vr.index) == name:  # type: ignore[arg-type]
            del self.index_owner[facts.vr.index]  # type: ignore[arg-type]
        for key in facts.addresses:
            if self.address_owner.get(key) == name:
                del self.address_owner[key]
        self.ports.subtract(facts.networks)

    def reset(self) -> None:
        self.base = None
        self.running = None
        self.connection_index = None


@dataclass
class ConnectionMemo:
    """Each running connection's tree entry (a private copy) and model object, so that a
    commit parses only the connections it changes: parsing every connection's entry again
    (pydantic) was a fifth of a commit with 2000 connections present. Running's entry
    itself is kept too: a candidate shares the entries it does not change (trees are never
    changed in place), and comparing each with its copy was a tenth of such a commit."""

    parsed: dict[str, tuple[dict[str, Any], ConnectionPieces]] = field(default_factory=dict)
    shared: dict[str, dict[str, Any]] = field(default_factory=dict)  # running's entries

    def known(self, entry: dict[str, Any]) -> ConnectionPieces | None:
        """The model object of an entry unchanged since running, else None."""
        name = str(entry.get("name"))
        found = self.parsed.get(name)
        if found is None:
            return None
        return found[1] if self.shared.get(name) is entry or found[0] == entry else None

    def advance(self, tree: Tree, hc: HostConfig, change: Change | None = None) -> None:
        """`tree` (with `hc`) is running now: remember its connections (`change`: what
        made it from the running the memo describes; when only connections changed, only
        theirs are taken in)."""
        entries = connections_of(tree)
        moved = change is not None and change.connections_only and self._moved_on(hc, change)
        if moved and len(self.parsed) == len(entries):  # (else the memo was not complete)
            return
        if len(entries) != len(hc.srv6.connections):  # not one model object per entry
            self.reset()
            return
        now = {}
        for entry, conn in zip(entries, hc.srv6.connections, strict=True):
            had = self.parsed.get(conn.name)
            now[conn.name] = had if had is not None and had[1] is conn else (
                copy.deepcopy(entry), conn
            )  # fmt: skip
        self.parsed = now
        self.shared = {entry["name"]: entry for entry in entries}

    def _moved_on(self, hc: HostConfig, change: Change) -> bool:
        """The connections `change` deleted forgotten, those it put taken in; False if
        the put entries and `hc`'s changed connections do not pair up by name."""
        for name in change.connections_deleted:
            self.parsed.pop(name, None)
            self.shared.pop(name, None)
        entries, made = change.connections or [], change.connections_made(hc)
        if [e["name"] for e in entries] != [conn.name for conn in made]:
            return False
        for entry, conn in zip(entries, made, strict=True):
            self.parsed[conn.name] = (copy.deepcopy(entry), conn)
            self.shared[conn.name] = entry
        return True

    def reset(self) -> None:
        self.parsed = {}
        self.shared = {}


def has_guarantees(hc: HostConfig) -> bool:
    """Underlay classes or connection pieces: they name networks and VRs."""
    return bool(hc.underlay or hc.srv6.locators or hc.srv6.connections)


def _names(entries: list[dict[str, Any]]) -> set[str]:
    return {r["name"] for r in entries}


def yang_tree(change: Change, hc: HostConfig) -> Tree:
    """The tree YANG must check: the changed VRs and connections, the VRs those
    connections name, the rest but the unchanged VRs, connections and locators."""
    tree = change.tree
    if not change.incremental:
        return tree
    reduced = {k: v for k, v in tree.items() if k not in (ROUTERS, SRV6)}
    named = {piece.get("router") for c in change.connections or [] for piece in _pieces(c)}
    changed = _names(change.changed)
    if named - changed:  # VRs that did not change: looked for
        named |= changed
        routers = [r for r in tree.get(ROUTERS, {}).get("router", []) if r["name"] in named]
    else:
        routers = change.changed
    if routers:
        reduced[ROUTERS] = {"router": routers}
    if change.connections:
        reduced[SRV6] = {"connection": change.connections}
    return reduced


def _pieces(connection: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for kind in ("ingress", "transit", "egress") for p in connection.get(kind, [])]


def _changed_connections(
    old: Tree, new: Tree
) -> tuple[bool, list[dict[str, Any]] | None, list[str]]:
    """Between two trees' members other than the VRs: whether nothing but the SRv6
    connections differs (and their names are unique), and then the connection entries new
    or different (None: the connections are the same too) and the names deleted."""
    if new.keys() != old.keys():
        return False, None, []
    if any(new[k] is not old[k] and new[k] != old[k] for k in new if k != SRV6):
        return False, None, []
    before, after = old.get(SRV6), new.get(SRV6)
    if before is after or before == after:
        return True, None, []
    names = [c.get("name") for c in connections_of(new)]
    if None in names or len(set(names)) != len(names):
        return False, None, []
    diff = journal.member_change(before, after, journal.KEYED[SRV6])  # as a journal record
    return ("container" not in diff), diff.get("put", []), diff.get("delete", [])
