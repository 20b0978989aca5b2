"""plan(desired, actual) -> ordered operations. Pure: no kernel access.

Deletions come first and go bottom-up (routes, fdb, addresses, shapers,
links, namespaces); creations follow top-down. Every deletion is explicit,
never a side effect of deleting a parent, so each operation has an exact
inverse and a failed apply can be undone step by step.
"""

from __future__ import annotations

from vnet.substrate.ops import (
    AddAddress,
    AddFdb,
    AddRoute,
    CreateLink,
    CreateNamespace,
    DeleteAddress,
    DeleteFdb,
    DeleteLink,
    DeleteNamespace,
    DeleteRoute,
    ModifyLink,
    Op,
    SetShaper,
)
from vnet.substrate.state import KernelState, Link, NsName, ns_label

_KIND_ORDER = {"bridge": 0, "vxlan": 1, "veth": 2}


def _link_sort(link: Link) -> tuple[int, str, str]:
    return (_KIND_ORDER[link.kind], ns_label(link.ns), link.name)


def _ns_sort(item: object) -> tuple[str, ...]:
    return tuple(
        ns_label(v) if v is None or isinstance(v, str) else str(v) for v in vars(item).values()
    )


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
    touched_ns = {ns for ns, _ in touched_ifs} | ns_gone

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
    ops += [DeleteRoute(r) for r in sorted(route_del, key=_ns_sort)]
    ops += [DeleteFdb(f) for f in sorted(fdb_del, key=_ns_sort)]
    ops += [DeleteAddress(a) for a in sorted(addr_del, key=_ns_sort)]
    for key, shaper in sorted(actual.shapers.items(), key=lambda kv: _ns_sort(kv[1])):
        if key in gone_keys or desired.shapers.get(key) is None:
            ops.append(SetShaper(shaper.ns, shaper.dev, shaper, None))
    ops += [DeleteLink(lk) for lk in sorted(links_gone, key=_link_sort, reverse=True)]
    ops += [DeleteNamespace(actual.namespaces[n]) for n in sorted(ns_gone)]

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
        old = None if key in gone_keys else actual.shapers.get(key)
        if old != shaper:
            ops.append(SetShaper(shaper.ns, shaper.dev, old, shaper))
    ops += [AddFdb(f) for f in sorted(fdb_add, key=_ns_sort)]
    ops += [AddRoute(r) for r in sorted(route_add, key=_ns_sort)]
    return ops
