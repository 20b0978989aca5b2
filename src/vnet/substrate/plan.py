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
from vnet.substrate.fdb import AddFdb, DeleteFdb
from vnet.substrate.link import CreateLink, DeleteLink, Link, ModifyLink
from vnet.substrate.marks import NsName, ns_label
from vnet.substrate.mbb import plan_tunnels
from vnet.substrate.namespace import CreateNamespace, DeleteNamespace
from vnet.substrate.op import Op
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


def plan(desired: KernelState, actual: KernelState) -> list[Op]:
    ops: list[Op] = []
    # Namespaces whose identity changed are replaced whole.
    ns_gone = {
        n
        for n, ns in actual.namespaces.items()
        if n not in desired.namespaces or desired.namespaces[n] != ns
    }
    ns_new = {n for n in desired.namespaces if n not in actual.namespaces or n in ns_gone}

    def lost_with_namespace(link: Link) -> bool:
        return link.ns in ns_gone or link.peer_ns in ns_gone

    def in_gone_ns(item: object) -> bool:
        return getattr(item, "ns", None) in ns_gone

    replaced = {
        key
        for key, link in desired.links.items()
        if key in actual.links
        and (
            actual.links[key].immutable() != link.immutable()
            or key in actual.broken
            or lost_with_namespace(actual.links[key])
        )
    }
    links_gone = [
        link for key, link in actual.links.items() if key not in desired.links or key in replaced
    ]
    links_new = [
        link for key, link in desired.links.items() if key not in actual.links or key in replaced
    ]
    # Interfaces that will be recreated lose their addresses, and their
    # namespaces lose the routes through them: take those down and back up.
    touched_ifs: set[tuple[NsName, str]] = set()
    for link in links_gone:
        touched_ifs.add((link.ns, link.name))
        if link.peer_name:
            touched_ifs.add((link.peer_ns, link.peer_name))
    # routes reach a next hop through an address, so only namespaces where a
    # recreated interface carried one lose routes
    touched_ns = {a.ns for a in actual.addresses if (a.ns, a.ifname) in touched_ifs} | ns_gone

    def redo_addr(a: object) -> bool:
        return (a.ns, a.ifname) in touched_ifs or a.ns in ns_gone  # type: ignore[attr-defined]

    addr_del = {a for a in actual.addresses if a not in desired.addresses or redo_addr(a)}
    addr_add = {a for a in desired.addresses if a not in actual.addresses or redo_addr(a)}
    route_del = {r for r in actual.routes if r not in desired.routes or r.ns in touched_ns}
    route_add = {r for r in desired.routes if r not in actual.routes or r.ns in touched_ns}
    gone_keys = {(lk.ns, lk.name) for lk in links_gone}
    fdb_del = {f for f in actual.fdb if f not in desired.fdb or (f.ns, f.dev) in gone_keys}
    fdb_add = {f for f in desired.fdb if f not in actual.fdb or (f.ns, f.dev) in gone_keys}

    # -- deletions, bottom-up ----------------------------------------------
    # what a deleted namespace takes along is not deleted separately
    ops += [DeleteRoute(r) for r in sorted(route_del, key=_ns_sort) if not in_gone_ns(r)]
    ops += [DeleteFdb(f) for f in sorted(fdb_del, key=_ns_sort) if not in_gone_ns(f)]
    ops += [
        DeleteAddress(a)
        for a in sorted(addr_del, key=_ns_sort)
        if not in_gone_ns(a) and not _on_lost_link(a, actual, ns_gone)
    ]
    for key, shaper in sorted(actual.shapers.items(), key=lambda kv: _ns_sort(kv[1])):
        # either end of a veth pair may carry one; it goes along with a deleted namespace
        lost = shaper.ns in ns_gone or any(
            lost_with_namespace(lk)
            for lk in actual.links.values()
            if key in ((lk.ns, lk.name), (lk.peer_ns, lk.peer_name))
        )
        if (key in touched_ifs or desired.shapers.get(key) is None) and not lost:
            ops.append(SetShaper(shaper.ns, shaper.dev, shaper, None))
    ops += [
        DeleteLink(lk)
        for lk in sorted(links_gone, key=_link_sort, reverse=True)
        if not lost_with_namespace(lk)
    ]
    # tenant namespaces before the hosts they hang off
    for n in sorted(ns_gone, key=lambda n: (actual.namespaces[n].role == "host", n)):
        vanishing = tuple(
            (lk.ns, lk.name)
            for lk in actual.links.values()
            if lk.peer_ns == n and lk.ns not in ns_gone
        )
        ops.append(DeleteNamespace(actual.namespaces[n], vanishing))

    # -- creations, top-down -----------------------------------------------
    ops += [CreateNamespace(desired.namespaces[n]) for n in sorted(ns_new)]
    ops += [CreateLink(lk) for lk in sorted(links_new, key=_link_sort)]
    new_keys = {(lk.ns, lk.name) for lk in links_new}
    recreated_masters = {(lk.ns, lk.name) for lk in links_new if lk.kind == "bridge"}
    for key, want in sorted(desired.links.items(), key=lambda kv: _link_sort(kv[1])):
        have = actual.links.get(key)
        if have is None or key in new_keys:
            continue
        master_recreated = want.master is not None and (want.ns, want.master) in recreated_masters
        if have != want or master_recreated:
            ops.append(ModifyLink(have, want))
    ops += [AddAddress(a) for a in sorted(addr_add, key=_ns_sort)]
    for key, shaper in sorted(desired.shapers.items(), key=lambda kv: _ns_sort(kv[1])):
        old = None if key in touched_ifs else actual.shapers.get(key)
        if old != shaper:
            ops.append(SetShaper(shaper.ns, shaper.dev, old, shaper))
    ops += [AddFdb(f) for f in sorted(fdb_add, key=_ns_sort)]
    ops += [AddRoute(r) for r in sorted(route_add, key=_ns_sort)]
    # connections and bandwidth classes: make before break, after all of the above
    tc_reset = {
        key
        for key in set(actual.shapers) | set(desired.shapers)
        if key in touched_ifs or actual.shapers.get(key) != desired.shapers.get(key)
    }
    ops += plan_tunnels(desired, actual, ns_gone, touched_ifs, tc_reset)
    return ops
