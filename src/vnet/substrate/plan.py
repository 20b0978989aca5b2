"""plan(desired, actual) -> ordered operations. Pure: no kernel access.

Deletions come first and go bottom-up (routes, fdb, addresses, shapers,
links, namespaces); creations follow top-down.

A namespace that goes takes everything in it (and the veth pairs into it)
along: the kernel tears those down in one batch, whereas deleting devices
one by one costs an RCU grace period each (~38 ms here). So the plan deletes
only the namespace, and rollback restores its contents by reconciling to
the state observed before (see transaction.py).
"""

from __future__ import annotations

from vnet.substrate.address import AddAddress, DeleteAddress
from vnet.substrate.cgroup import plan_cgroups
from vnet.substrate.fdb import AddFdb, DeleteFdb
from vnet.substrate.link import CreateLink, DeleteLink, Link, ModifyLink
from vnet.substrate.marks import NsName, ns_label
from vnet.substrate.mbb import plan_tunnels
from vnet.substrate.namespace import CreateNamespace, DeleteNamespace
from vnet.substrate.op import Op
from vnet.substrate.redirect import plan_redirects
from vnet.substrate.route import AddRoute, DeleteRoute
from vnet.substrate.state import KernelState
from vnet.substrate.tc import SetShaper

_KIND_ORDER = {"bridge": 0, "vxlan": 1, "veth": 2}


def _link_sort(link: Link) -> tuple[int, str, str]:
    return (_KIND_ORDER[link.kind], ns_label(link.ns), link.name)


def _ns_sort(item: object) -> tuple[str, ...]:
    return tuple(
        ns_label(v) if v is None or isinstance(v, str) else str(v) for v in vars(item).values()
    )


def _on_lost_link(addr: object, actual: KernelState, ns_gone: set[str]) -> bool:
    """Is `addr` on a veth end whose pair dies with a deleted namespace?"""
    for lk in actual.links.values():
        ends = {(lk.ns, lk.name), (lk.peer_ns, lk.peer_name)}
        if (addr.ns, addr.ifname) in ends:  # type: ignore[attr-defined]
            return lk.ns in ns_gone or lk.peer_ns in ns_gone
    return False


def plan(desired: KernelState, actual: KernelState, touched: KernelState | None = None) -> list[Op]:
    """`touched` (None: compare everything): every object that may differ between `desired`
    and `actual`, and with a namespace or interface it names, all they hold; only those are
    compared, so a commit costs what it changes, not what the host holds. Bridge shortcuts
    are compared whole (a port that comes or goes changes its bridge's others')."""
    mine, theirs = desired, actual
    if touched is not None:
        mine, theirs = desired.only(touched), actual.only(touched)
    diff = _Diff(mine, theirs)
    cgroups_gone, cgroups_made = plan_cgroups(mine.cgroups, theirs.cgroups)
    # a node's group is there before anything can start in its namespace
    ops = cgroups_gone + _deletions(diff) + cgroups_made + _creations(diff)
    # connections and bandwidth classes: make before break, after all of the above
    tc_reset = {
        key
        for key in set(theirs.shapers) | set(mine.shapers)
        if key in diff.touched_ifs or theirs.shapers.get(key) != mine.shapers.get(key)
    }
    created = {lk.key for lk in diff.links_new}
    early, late = plan_redirects(desired.redirects, actual.redirects, diff.touched_ifs, created)
    tunnels = plan_tunnels(desired, actual, diff.ns_gone, diff.touched_ifs, tc_reset, touched)
    return [*early, *ops, *late, *tunnels]


class _Diff:
    """What goes and what comes between the actual and the desired state."""

    def __init__(self, desired: KernelState, actual: KernelState) -> None:
        self.desired, self.actual = desired, actual
        # Namespaces whose identity changed are replaced whole.
        self.ns_gone = {
            n
            for n, ns in actual.namespaces.items()
            if n not in desired.namespaces or desired.namespaces[n] != ns
        }
        self.ns_new = {
            n for n in desired.namespaces if n not in actual.namespaces or n in self.ns_gone
        }
        replaced = {
            key
            for key, link in desired.links.items()
            if key in actual.links
            and (
                actual.links[key].immutable() != link.immutable()
                or key in actual.broken
                or self.lost_with_namespace(actual.links[key])
            )
        }
        self.links_gone = [
            link
            for key, link in actual.links.items()
            if key not in desired.links or key in replaced
        ]
        self.links_new = [
            link
            for key, link in desired.links.items()
            if key not in actual.links or key in replaced
        ]
        self.touched_ifs = self._touched_interfaces()
        self._diff_contents()

    def _touched_interfaces(self) -> set[tuple[NsName, str]]:
        """Interfaces that will be recreated: they lose their addresses, and their
        namespaces lose the routes through them; those are taken down and back up."""
        touched: set[tuple[NsName, str]] = set()
        for link in self.links_gone:
            touched.add((link.ns, link.name))
            if link.peer_name:
                touched.add((link.peer_ns, link.peer_name))
        return touched

    def _diff_contents(self) -> None:
        desired, actual = self.desired, self.actual
        # routes reach a next hop through an address, so only namespaces where a
        # recreated interface carried one lose routes
        touched_ns = {
            a.ns for a in actual.addresses if (a.ns, a.ifname) in self.touched_ifs
        } | self.ns_gone

        def redo_addr(a: object) -> bool:
            return (a.ns, a.ifname) in self.touched_ifs or a.ns in self.ns_gone  # type: ignore[attr-defined]

        self.addr_del = {a for a in actual.addresses if a not in desired.addresses or redo_addr(a)}
        self.addr_add = {a for a in desired.addresses if a not in actual.addresses or redo_addr(a)}
        self.route_del = {r for r in actual.routes if r not in desired.routes or r.ns in touched_ns}
        self.route_add = {r for r in desired.routes if r not in actual.routes or r.ns in touched_ns}
        gone_keys = {(lk.ns, lk.name) for lk in self.links_gone}
        self.fdb_del = {f for f in actual.fdb if f not in desired.fdb or (f.ns, f.dev) in gone_keys}
        self.fdb_add = {f for f in desired.fdb if f not in actual.fdb or (f.ns, f.dev) in gone_keys}

    def lost_with_namespace(self, link: Link) -> bool:
        return link.ns in self.ns_gone or link.peer_ns in self.ns_gone

    def in_gone_ns(self, item: object) -> bool:
        return getattr(item, "ns", None) in self.ns_gone


def _deletions(diff: _Diff) -> list[Op]:
    """Bottom-up; what a deleted namespace takes along is not deleted separately."""
    actual = diff.actual
    ops: list[Op] = [
        DeleteRoute(r) for r in sorted(diff.route_del, key=_ns_sort) if not diff.in_gone_ns(r)
    ]
    ops += [DeleteFdb(f) for f in sorted(diff.fdb_del, key=_ns_sort) if not diff.in_gone_ns(f)]
    ops += [
        DeleteAddress(a)
        for a in sorted(diff.addr_del, key=_ns_sort)
        if not diff.in_gone_ns(a) and not _on_lost_link(a, actual, diff.ns_gone)
    ]
    ops += _shaper_deletions(diff)
    ops += [
        DeleteLink(lk)
        for lk in sorted(diff.links_gone, key=_link_sort, reverse=True)
        if not diff.lost_with_namespace(lk)
    ]
    # tenant namespaces before the hosts they hang off
    for n in sorted(diff.ns_gone, key=lambda n: (actual.namespaces[n].role == "host", n)):
        vanishing = tuple(
            (lk.ns, lk.name)
            for lk in actual.links.values()
            if lk.peer_ns == n and lk.ns not in diff.ns_gone
        )
        ops.append(DeleteNamespace(actual.namespaces[n], vanishing))
    return ops


def _shaper_deletions(diff: _Diff) -> list[Op]:
    ops: list[Op] = []
    actual = diff.actual
    for key, shaper in sorted(actual.shapers.items(), key=lambda kv: _ns_sort(kv[1])):
        # either end of a veth pair may carry one; it goes along with a deleted namespace
        lost = shaper.ns in diff.ns_gone or any(
            diff.lost_with_namespace(lk)
            for lk in actual.links.values()
            if key in ((lk.ns, lk.name), (lk.peer_ns, lk.peer_name))
        )
        if (key in diff.touched_ifs or diff.desired.shapers.get(key) is None) and not lost:
            ops.append(SetShaper(shaper.ns, shaper.dev, shaper, None))
    return ops


def _creations(diff: _Diff) -> list[Op]:
    """Top-down: namespaces, links, link changes, addresses, shapers, fdb, routes."""
    desired, actual = diff.desired, diff.actual
    ops: list[Op] = [CreateNamespace(desired.namespaces[n]) for n in sorted(diff.ns_new)]
    ops += [CreateLink(lk) for lk in sorted(diff.links_new, key=_link_sort)]
    ops += _link_changes(diff)
    ops += [AddAddress(a) for a in sorted(diff.addr_add, key=_ns_sort)]
    for key, shaper in sorted(desired.shapers.items(), key=lambda kv: _ns_sort(kv[1])):
        old = None if key in diff.touched_ifs else actual.shapers.get(key)
        if old != shaper:
            ops.append(SetShaper(shaper.ns, shaper.dev, old, shaper))
    ops += [AddFdb(f) for f in sorted(diff.fdb_add, key=_ns_sort)]
    ops += [AddRoute(r) for r in sorted(diff.route_add, key=_ns_sort)]
    return ops


def _link_changes(diff: _Diff) -> list[Op]:
    """Links kept but changed, or whose bridge is recreated (they must join it again)."""
    ops: list[Op] = []
    new_keys = {(lk.ns, lk.name) for lk in diff.links_new}
    recreated_masters = {(lk.ns, lk.name) for lk in diff.links_new if lk.kind == "bridge"}
    for key, want in sorted(diff.desired.links.items(), key=lambda kv: _link_sort(kv[1])):
        have = diff.actual.links.get(key)
        if have is None or key in new_keys:
            continue
        master_recreated = want.master is not None and (want.ns, want.master) in recreated_masters
        if have != want or master_recreated:
            ops.append(ModifyLink(have, want))
    return ops
