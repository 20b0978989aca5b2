"""A VR's configuration entry rebuilt from its conceptual rows, keeping what did not change.

An interface, route or router whose rows say the same as the configuration
stays the very same object, so the datastore sees no change (and sends no
modify event) when a SET only rewrites values the configuration already has.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from vnet.agent.snmp import rowstatus as rs
from vnet.agent.snmp.errors import SnmpError
from vnet.agent.snmp.rows import (
    IF_TABLE,
    ROUTE_TABLE,
    VR_TABLE,
    Rows,
    children,
    route_destination,
    routes_by_key,
)
from vnet.model.mib import oids
from vnet.model.yang.host import routers_of
from vnet.model.yang.module import ROUTERS

Entry = dict[str, Any]  # one list entry of the YANG tree (router, interface, route)


def _same_interface(a: Entry, b: Entry) -> bool:
    def norm(e: Entry) -> tuple[Any, ...]:
        addrs = tuple(ipaddress.ip_interface(e[k]) if e.get(k) else None for k in ("ipv4", "ipv6"))
        return e["name"], e["network"], addrs

    return norm(a) == norm(b)


def _same_router(a: Entry, b: Entry) -> bool:
    def norm(r: Entry) -> tuple[Any, ...]:
        return (
            r["name"],
            int(r["index"]),
            r.get("admin-state", "up"),
            tuple(id(i) for i in r.get("interface", [])),
            tuple(id(x) for x in r.get("route", [])),
        )

    return norm(a) == norm(b)


def _interfaces(idx: int, rows: Rows, old: Entry | None, blame: int) -> list[Entry]:
    active = [k for k in children(rows, IF_TABLE, idx) if rows[IF_TABLE][k].status == rs.ACTIVE]
    if [k[1] for k in active] != list(range(1, len(active) + 1)):
        raise SnmpError(
            "inconsistentValue",
            blame,
            "active interfaces must take positions 1, 2, ... without gaps",
        )
    old_itfs = (old or {}).get("interface", [])
    itfs = []
    for k in active:
        v = rows[IF_TABLE][k].values
        entry: Entry = {"name": v[oids.IF_NAME], "network": v[oids.IF_NETWORK]}
        if v.get(oids.IF_IPV4):
            entry["ipv4"] = v[oids.IF_IPV4]
        if v.get(oids.IF_IPV6):
            entry["ipv6"] = v[oids.IF_IPV6]
        pos = k[1] - 1
        if pos < len(old_itfs) and _same_interface(old_itfs[pos], entry):
            entry = old_itfs[pos]
        itfs.append(entry)
    return itfs


def _routes(idx: int, rows: Rows, old: Entry | None) -> list[Entry]:
    old_routes = routes_by_key(idx, old)
    routes = []
    for k in children(rows, ROUTE_TABLE, idx):
        row = rows[ROUTE_TABLE][k]
        if row.status != rs.ACTIVE:
            continue
        hop = row.values[oids.RT_NEXT_HOP]
        prev = old_routes.get(k)
        if prev is not None and ipaddress.ip_address(prev["next-hop"]) == ipaddress.ip_address(hop):
            routes.append(prev)
        else:
            routes.append({"destination": route_destination(k), "next-hop": hop})
    # keep the configuration's own order of routes
    order = {id(r): n for n, r in enumerate((old or {}).get("route", []))}
    routes.sort(key=lambda r: order.get(id(r), len(order)))
    return routes


def router_from_rows(idx: int, rows: Rows, old: Entry | None, blame: int) -> Entry:
    """VR `idx` as the rows describe it; `old`: its configured entry, None for a new VR.

    Leaves this MIB does not describe keep their configured values. `blame` is
    the varbind an inconsistency of the interface positions is reported at."""
    vr = rows[VR_TABLE][(idx,)]
    itfs = _interfaces(idx, rows, old, blame)
    routes = _routes(idx, rows, old)
    router: Entry = {"name": vr.values[oids.VR_NAME], "index": idx}
    admin = "down" if vr.values.get(oids.VR_ADMIN) == 2 else "up"
    had = old or {}
    # a leaf or list the configuration leaves out stays out while it has its default
    for leaf, value, default in (
        ("admin-state", admin, admin == "up"),
        ("interface", itfs, not itfs),
        ("route", routes, not routes),
    ):
        if not default or leaf in had:
            router[leaf] = value
    if old is None:
        return router
    for k, v in old.items():
        router.setdefault(k, v)
    return old if _same_router(old, router) else router


def replace_routers(
    tree: dict[str, Any], new: dict[int, Entry | None], configured: dict[int, Entry]
) -> dict[str, Any]:
    """`tree` with the routers of `new` (by index) replaced in place, removed (None) or,
    new, added at the end in index order; `configured`: the tree's entries of those VRs
    it has (rows.routers_by_index), looked for in its list by identity."""
    routers = routers_of(tree)
    gone = []
    for idx, entry in new.items():
        if (old := configured.get(idx)) is None:
            continue
        at = routers.index(old)  # (found by identity where each entry before is another)
        if entry is None:
            gone.append(at)
        else:
            routers[at] = entry
    for at in sorted(gone, reverse=True):
        del routers[at]
    routers += [r for idx, r in sorted(new.items()) if r is not None and idx not in configured]
    return {**tree, ROUTERS: {**tree.get(ROUTERS, {}), "router": routers}}
