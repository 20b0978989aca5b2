"""The conceptual rows of VNET-ROUTER-MIB's three read-create tables.

The datastore holds the configuration as a YANG (RFC 7951) tree. SNMP sees
it as conceptual rows: every router, interface and route of the running
configuration is an *active* row. Rows a manager made with createAndWait
and has not activated yet (notReady, notInService) live only here, in
`Pending`, until they become active and so part of the configuration.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Container
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

from vnet.agent.datastore.journal import router_change
from vnet.agent.snmp import rowstatus as rs
from vnet.agent.snmp.kept import Kept
from vnet.model.mib import oids
from vnet.model.resolve import next_free_index
from vnet.model.yang.host import routers_of
from vnet.model.yang.module import ROUTERS

MAX_INDEX = 65535  # the MIB's VR indexes are 1..65535
PENDING_LIFETIME = 300.0  # RFC 2579: rows left notReady/notInService ~5 minutes are removed

VR_TABLE, IF_TABLE, ROUTE_TABLE = "vr", "if", "route"
TABLES = (VR_TABLE, IF_TABLE, ROUTE_TABLE)  # parents first
CHILD_TABLES = (IF_TABLE, ROUTE_TABLE)  # their rows' key starts with the VR index
ENTRY = {
    VR_TABLE: oids.VR_CONFIG_ENTRY,
    IF_TABLE: oids.IF_CONFIG_ENTRY,
    ROUTE_TABLE: oids.ROUTE_ENTRY,
}
STATUS_COLUMN = {VR_TABLE: oids.VR_STATUS, IF_TABLE: oids.IF_STATUS, ROUTE_TABLE: oids.RT_STATUS}
# the read-create columns of each table, in column order
COLUMNS = {
    VR_TABLE: (oids.VR_NAME, oids.VR_ADMIN, oids.VR_STATUS),
    IF_TABLE: (oids.IF_NAME, oids.IF_NETWORK, oids.IF_IPV4, oids.IF_IPV6, oids.IF_STATUS),
    ROUTE_TABLE: (oids.RT_NEXT_HOP, oids.RT_STATUS),
}
REQUIRED = {
    VR_TABLE: (oids.VR_NAME,),
    IF_TABLE: (oids.IF_NETWORK,),
    ROUTE_TABLE: (oids.RT_NEXT_HOP,),
}

Cell = str | int  # a column's value: DisplayString or INTEGER


@dataclass(frozen=True)  # shared between requests (rows_of): never changed in place
class Row:
    status: int  # rowstatus.ACTIVE, NOT_IN_SERVICE or NOT_READY
    values: dict[int, Cell] = field(default_factory=dict)  # column -> value
    since: float = 0.0  # when a pending row was created (for its removal)

    def copy(self) -> Row:
        return Row(self.status, dict(self.values), self.since)


Key = tuple[int, ...]  # the row's index, as it follows the column OID
Rows = dict[str, dict[Key, Row]]  # table -> key -> row


def empty_rows() -> Rows:
    return {table: {} for table in TABLES}


def route_key(index: int, destination: str) -> Key:
    """(vr, type, length, address bytes..., prefix length): inetCidrRouteTable style."""
    itf = ipaddress.ip_interface(destination)
    packed = itf.ip.packed
    return (index, 1 if itf.version == 4 else 2, len(packed), *packed, itf.network.prefixlen)


def route_destination(key: Key) -> str:
    """The YANG destination prefix of a route key (index included)."""
    n = key[2]
    addr = ipaddress.ip_address(bytes(key[3 : 3 + n]))
    return f"{addr}/{key[3 + n]}"


def routes_by_key(index: int, router: dict[str, Any] | None) -> dict[Key, dict[str, Any]]:
    """The routes of a configured router by their row key (unparsable ones left out)."""
    found = {}
    for route in (router or {}).get("route", []):
        try:
            found[route_key(index, route["destination"])] = route
        except ValueError:
            continue
    return found


def _interface_row(itf: dict[str, Any]) -> Row:
    return Row(
        rs.ACTIVE,
        {
            oids.IF_NAME: itf["name"],
            oids.IF_NETWORK: itf["network"],
            oids.IF_IPV4: str(itf.get("ipv4", "")),
            oids.IF_IPV6: str(itf.get("ipv6", "")),
        },
    )


RouterRows = list[tuple[str, Key, Row]]  # (table, key, row) of one VR entry
# per VR name, the rows made of its entry (rows are never changed in place either: a SET
# lays new ones over them)
KEPT_ROWS: Kept[dict[str, Any], RouterRows] = Kept()


def rows_of(tree: dict[str, Any]) -> Rows:
    """The active rows of a configuration tree."""
    rows = empty_rows()
    for r in routers_of(tree):
        for table, key, row in KEPT_ROWS.of(r["name"], r, _router_rows):
            rows[table][key] = row
    KEPT_ROWS.end()
    return rows


def _router_rows(r: dict[str, Any]) -> RouterRows:
    idx = int(r["index"])
    admin = 2 if r.get("admin-state", "up") == "down" else 1
    out = [(VR_TABLE, (idx,), Row(rs.ACTIVE, {oids.VR_NAME: r["name"], oids.VR_ADMIN: admin}))]
    for pos, itf in enumerate(r.get("interface", []), start=1):
        out.append((IF_TABLE, (idx, pos), _interface_row(itf)))
    for key, route in routes_by_key(idx, r).items():
        out.append((ROUTE_TABLE, key, Row(rs.ACTIVE, {oids.RT_NEXT_HOP: route["next-hop"]})))
    return out


def children(rows: Rows, table: str, idx: int) -> list[Key]:
    """The keys of VR `idx`'s rows in a child table, in key order."""
    return sorted(k for k in rows[table] if k[0] == idx)


def drop_children(rows: Rows, idx: int) -> None:
    for table in CHILD_TABLES:
        for key in children(rows, table, idx):
            del rows[table][key]


@dataclass
class Pending:
    """Rows that are not (yet) part of the configuration, held by the SNMP front-end."""

    rows: Rows = field(default_factory=empty_rows)
    version: int = 0

    def expire(self, now: float) -> bool:
        """Drop pending rows older than PENDING_LIFETIME; True if any went.

        Children of a VR row that went are dropped by `working_rows`."""
        gone = False
        for table in self.rows.values():
            for key in [k for k, row in table.items() if now - row.since > PENDING_LIFETIME]:
                del table[key]
                gone = True
        if gone:
            self.version += 1
        return gone

    def replace(self, rows: Rows) -> None:
        self.rows = rows
        self.version += 1


def working_rows(tree: dict[str, Any], pending: Pending) -> Rows:
    """Active rows from the configuration, with the pending rows laid over them.

    A pending row whose key the configuration now uses (someone created that
    VR over NETCONF meanwhile) is dropped: the configuration wins.
    """
    return _laid_over(rows_of(tree), pending)


def working_rows_of(routers: dict[int, dict[str, Any]], pending: Pending) -> Rows:
    """`working_rows` of the VRs of `routers` (by index: configured entries) and of those
    with pending rows only: what a SET that touches these VRs plans on, whatever else the
    configuration holds."""
    rows = empty_rows()
    for r in routers.values():
        for table, key, row in _router_rows(r):
            rows[table][key] = row
    return _laid_over(rows, pending)


def pending_indexes(pending: Pending) -> set[int]:
    """The VRs with a pending row."""
    return {key[0] for table in pending.rows.values() for key in table}


def _laid_over(rows: Rows, pending: Pending) -> Rows:
    """`rows` (a configuration's: a child row comes with its VR row) with the pending rows
    laid over them, less the pending child rows whose VR row is in neither."""
    for table, pend in pending.rows.items():
        for key, row in pend.items():
            if key not in rows[table]:
                rows[table][key] = row
    for t in CHILD_TABLES:
        orphans = [k for k in pending.rows[t] if (k[0],) not in rows[VR_TABLE]]
        for key in orphans:
            rows[t].pop(key, None)
    return rows


# the tree a map of its VRs by index was made of, and that map (one at a time: running's)
_BY_INDEX: tuple[dict[str, Any] | None, dict[int, dict[str, Any]]] = (None, {})


def routers_by_index(tree: dict[str, Any]) -> dict[int, dict[str, Any]]:
    """VR index -> the tree's entry (or one equal to it), made once per tree (trees are
    never changed in place) from the last one's by the VRs that changed: a SET looks up
    the few VRs it touches among thousands."""
    global _BY_INDEX
    last, found = _BY_INDEX
    if last is tree:
        return found
    listed = None if last is None else router_change(last, tree)
    if listed is None:
        routers = tree.get(ROUTERS, {}).get("router", [])
        found = dict(zip(map(int, map(itemgetter("index"), routers)), routers, strict=True))
    else:
        found = dict(found)
        for entry in listed.superseded():  # all out first: two VRs may swap indexes
            found.pop(int(entry["index"]), None)
        for entry in listed.put:
            found[int(entry["index"])] = entry
    _BY_INDEX = (tree, found)
    return found


def next_available_index(rows: Rows) -> int:
    """vnetNextAvailableIndex of the rows (0: none left)."""
    return index_available({k[0] for k in rows[VR_TABLE]})


def index_available(used: Container[int], start: int = 1) -> int:
    """The lowest index from `start` on (every one below it used) without a VR row in
    `used` (0: none left)."""
    found = next_free_index(used, start)
    return found if found <= MAX_INDEX else 0
