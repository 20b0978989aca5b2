"""Kernel state as comparable data: what vnet wants, or what it finds.

Both `realize` (model -> desired state) and `observe` (kernel -> actual
state) produce a KernelState, and `plan` diffs two of them. Each field holds
objects of one kind, defined with their operations in that kind's module.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, fields

from vnet.substrate.address import Address
from vnet.substrate.cgroup import Cgroup
from vnet.substrate.fdb import Fdb
from vnet.substrate.link import Link
from vnet.substrate.marks import NsName
from vnet.substrate.namespace import Namespace
from vnet.substrate.redirect import Redirect
from vnet.substrate.route import Route
from vnet.substrate.seg6 import SidRoute, SteerRoute, SteerRule
from vnet.substrate.tc import Shaper, TcClass, TcFilter, TcRoot


@dataclass
class KernelState:
    namespaces: dict[str, Namespace] = field(default_factory=dict)
    links: dict[tuple[NsName, str], Link] = field(default_factory=dict)
    addresses: set[Address] = field(default_factory=set)
    routes: set[Route] = field(default_factory=set)
    fdb: set[Fdb] = field(default_factory=set)
    shapers: dict[tuple[NsName, str], Shaper] = field(default_factory=dict)
    # veth pairs whose far end is missing or foreign: always recreated
    broken: set[tuple[NsName, str]] = field(default_factory=set)
    # connections (seg6.py) and bandwidth classes (tc.py)
    sids: dict[tuple[NsName, str], SidRoute] = field(default_factory=dict)
    steers: dict[tuple[NsName, int, str], SteerRoute] = field(default_factory=dict)
    rules: set[SteerRule] = field(default_factory=set)
    tc_roots: set[TcRoot] = field(default_factory=set)
    tc_classes: dict[tuple[NsName, str, int], TcClass] = field(default_factory=dict)
    tc_filters: set[TcFilter] = field(default_factory=set)
    # bridge shortcuts (redirect.py): eBPF redirects between members of one network
    redirects: dict[tuple[NsName, str], Redirect] = field(default_factory=dict)
    # per-node resource limits (cgroup.py), by the node's namespace
    cgroups: dict[str, Cgroup] = field(default_factory=dict)

    def add_namespace(self, ns: Namespace) -> None:
        self.namespaces[ns.name] = ns

    def add_link(self, link: Link) -> None:
        self.links[link.key] = link

    def copy(self) -> KernelState:
        """A copy whose collections can change without changing this one's (the objects
        in them are immutable, so they are shared)."""
        return KernelState(**{f.name: copy.copy(getattr(self, f.name)) for f in fields(self)})

    def remove(self, part: KernelState) -> None:
        """Take out what `part` holds (the objects of one node, say)."""
        for f in fields(self):
            mine, theirs = getattr(self, f.name), getattr(part, f.name)
            if isinstance(mine, set):
                mine -= theirs
            else:
                for key in theirs:
                    mine.pop(key, None)

    def only(self, touched: KernelState) -> KernelState:
        """The objects of this state that `touched` names (by key, or as members of a
        set): a lookup per object of `touched`, whatever this state holds."""
        part = KernelState()
        for f in fields(self):
            mine, theirs = getattr(self, f.name), getattr(touched, f.name)
            if isinstance(mine, set):
                setattr(part, f.name, {x for x in theirs if x in mine})
            else:
                setattr(part, f.name, {k: mine[k] for k in theirs if k in mine})
        part.broken |= {key for key in touched.links if key in self.broken}  # named by its link
        return part

    def merge(self, other: KernelState) -> None:
        self.namespaces.update(other.namespaces)
        self.links.update(other.links)
        self.addresses |= other.addresses
        self.routes |= other.routes
        self.fdb |= other.fdb
        self.shapers.update(other.shapers)
        self.broken |= other.broken
        self.sids.update(other.sids)
        self.steers.update(other.steers)
        self.rules |= other.rules
        self.tc_roots |= other.tc_roots
        self.tc_classes.update(other.tc_classes)
        self.tc_filters |= other.tc_filters
        self.redirects.update(other.redirects)
        self.cgroups.update(other.cgroups)

    def summary(self) -> dict[str, int]:
        return {
            "namespaces": len(self.namespaces),
            "links": len(self.links),
            "addresses": len(self.addresses),
            "routes": len(self.routes),
            "fdb": len(self.fdb),
            "shapers": len(self.shapers),
            "sids": len(self.sids),
            "steering routes": len(self.steers),
            "steering rules": len(self.rules),
            "tc classes": len(self.tc_classes),
            "tc filters": len(self.tc_filters),
            "bridge shortcuts": len(self.redirects),
            "cgroups": len(self.cgroups),
        }
