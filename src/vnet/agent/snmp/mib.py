"""VNET-ROUTER-MIB over the datastore: rows, reads and SET planning (pure).

The datastore holds the configuration as a YANG (RFC 7951) tree. SNMP sees
it as conceptual rows: every router, interface and route of the running
configuration is an *active* row. Rows a manager made with createAndWait
and has not activated yet (notReady, notInService) live only here, in
`Pending`, until they become active and so part of the configuration.

A SET is planned as a whole: every variable binding is checked in the order
of RFC 3416 section 4.2.5 (notWritable, wrongType, wrongLength, wrongValue,
noCreation, inconsistentName), then the rows change state by RFC 2579, then
the routers of the VRs the PDU touched are rebuilt from their rows. The
result is the new configuration tree (committed by the caller through the
datastore, which validates it) and the new pending rows.

Values are tagged tuples (kind, value), kind one of: int, str, unsigned,
gauge, counter64, timeticks, oid. The engine turns them into pysnmp types.
"""

from __future__ import annotations

import ipaddress
import re
import time
from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from vnet.agent.snmp import oids
from vnet.agent.snmp import rowstatus as rs
from vnet.agent.snmp.oids import OID
from vnet.model import yangdata as convert

Value = tuple[str, Any]
NO_SUCH_OBJECT = ("noSuchObject", None)
NO_SUCH_INSTANCE = ("noSuchInstance", None)

PENDING_LIFETIME = 300.0  # RFC 2579: rows left notReady/notInService ~5 minutes are removed

VR_TABLE, IF_TABLE, ROUTE_TABLE = "vr", "if", "route"
ENTRY = {
    VR_TABLE: oids.VR_CONFIG_ENTRY,
    IF_TABLE: oids.IF_CONFIG_ENTRY,
    ROUTE_TABLE: oids.ROUTE_ENTRY,
}
STATUS_COLUMN = {VR_TABLE: oids.VR_STATUS, IF_TABLE: oids.IF_STATUS, ROUTE_TABLE: oids.RT_STATUS}
REQUIRED = {
    VR_TABLE: (oids.VR_NAME,),
    IF_TABLE: (oids.IF_NETWORK,),
    ROUTE_TABLE: (oids.RT_NEXT_HOP,),
}

_VR_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_\-]*")
_NET_NAME = _VR_NAME
_IF_NAME = re.compile(r"[^/:\s]+")


class SnmpError(Exception):
    """An error-status for the response, with the 1-based index of the variable binding."""

    def __init__(self, status: str, index: int, why: str = ""):
        super().__init__(f"{status} at varbind {index}: {why}")
        self.status = status
        self.index = index
        self.why = why


# -- rows ---------------------------------------------------------------------


@dataclass
class Row:
    status: int  # rowstatus.ACTIVE, NOT_IN_SERVICE or NOT_READY
    values: dict[int, Any] = field(default_factory=dict)  # column -> str | int
    since: float = 0.0  # when a pending row was created (for its removal)

    def copy(self) -> Row:
        return Row(self.status, dict(self.values), self.since)


Key = tuple[int, ...]  # the row's index, as it follows the column OID
Rows = dict[str, dict[Key, Row]]  # table -> key -> row


def empty_rows() -> Rows:
    return {VR_TABLE: {}, IF_TABLE: {}, ROUTE_TABLE: {}}


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


def _address_or_empty(entry: dict[str, Any], leaf: str) -> str:
    return str(entry.get(leaf, ""))


def rows_of(tree: dict[str, Any]) -> Rows:
    """The active rows of a configuration tree."""
    rows = empty_rows()
    for r in convert.routers_of(tree):
        idx = int(r["index"])
        rows[VR_TABLE][(idx,)] = Row(
            rs.ACTIVE,
            {
                oids.VR_NAME: r["name"],
                oids.VR_ADMIN: 2 if r.get("admin-state", "up") == "down" else 1,
            },
        )
        for pos, itf in enumerate(r.get("interface", []), start=1):
            rows[IF_TABLE][(idx, pos)] = Row(
                rs.ACTIVE,
                {
                    oids.IF_NAME: itf["name"],
                    oids.IF_NETWORK: itf["network"],
                    oids.IF_IPV4: _address_or_empty(itf, "ipv4"),
                    oids.IF_IPV6: _address_or_empty(itf, "ipv6"),
                },
            )
        for route in r.get("route", []):
            try:
                key = route_key(idx, route["destination"])
            except ValueError:
                continue
            rows[ROUTE_TABLE][key] = Row(rs.ACTIVE, {oids.RT_NEXT_HOP: route["next-hop"]})
    return rows


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
    rows = rows_of(tree)
    for table, pend in pending.rows.items():
        for key, row in pend.items():
            if key not in rows[table]:
                rows[table][key] = row
    # a child row needs its VR row
    for t in (IF_TABLE, ROUTE_TABLE):
        for key in [k for k in rows[t] if (k[0],) not in rows[VR_TABLE]]:
            del rows[t][key]
    return rows


def next_available_index(rows: Rows) -> int:
    used = {k[0] for k in rows[VR_TABLE]}
    for i in range(1, 65536):
        if i not in used:
            return i
    return 0


# -- reads --------------------------------------------------------------------


class NeedsState(Exception):
    """A request reached kernel state that is not at hand: read it, then answer again."""


class Column:
    """The instances of one columnar object (or one scalar, key (0,)), in OID order.

    A lazy column stands for kernel state not read yet: touching it raises
    NeedsState, so only requests that reach state pay for reading it.
    """

    __slots__ = ("keys", "lazy", "oid", "values")

    def __init__(self, oid: OID, values: dict[Key, Value], lazy: bool = False):
        self.oid = oid
        self.values = values
        self.keys = sorted(values)
        self.lazy = lazy


def lazy(columns: Iterable[Column]) -> list[Column]:
    return [Column(c.oid, {}, lazy=True) for c in columns]


class View:
    """Every instance the agent serves, for GET and GETNEXT (and so GETBULK)."""

    def __init__(self, columns: Iterable[Column]):
        self.columns = list(columns)
        self.oids = [c.oid for c in self.columns]
        for a, b in zip(self.oids, self.oids[1:], strict=False):
            if not a < b or b[: len(a)] == a:
                raise ValueError(f"columns out of order: {a} {b}")

    def get(self, oid: OID) -> Value:
        i = bisect_right(self.oids, oid) - 1
        if i < 0:
            return NO_SUCH_OBJECT
        col = self.columns[i]
        n = len(col.oid)
        if oid[:n] != col.oid:
            return NO_SUCH_OBJECT
        if col.lazy:
            raise NeedsState
        return col.values.get(oid[n:], NO_SUCH_INSTANCE)

    def next(self, oid: OID) -> tuple[OID, Value] | None:
        """The first instance after `oid`, or None (endOfMibView)."""
        i = bisect_right(self.oids, oid) - 1
        if i >= 0:
            col = self.columns[i]
            n = len(col.oid)
            if oid[:n] == col.oid:
                if col.lazy:
                    raise NeedsState
                j = bisect_right(col.keys, oid[n:])
                if j < len(col.keys):
                    key = col.keys[j]
                    return (*col.oid, *key), col.values[key]
        for col in self.columns[i + 1 :]:
            if col.lazy:
                raise NeedsState
            if col.keys:
                key = col.keys[0]
                return (*col.oid, *key), col.values[key]
        return None


def scalar(oid_without_zero: OID, value: Value) -> Column:
    return Column(oid_without_zero, {(0,): value})


def config_columns(rows: Rows) -> list[Column]:
    """vnetVrConfigTable, vnetVrIfConfigTable, vnetVrRouteTable from the working rows."""
    out = []
    specs = (
        (VR_TABLE, (oids.VR_NAME, oids.VR_ADMIN, oids.VR_STATUS)),
        (IF_TABLE, (oids.IF_NAME, oids.IF_NETWORK, oids.IF_IPV4, oids.IF_IPV6, oids.IF_STATUS)),
        (ROUTE_TABLE, (oids.RT_NEXT_HOP, oids.RT_STATUS)),
    )
    for table, columns in specs:
        status_col = STATUS_COLUMN[table]
        for c in columns:
            cells: dict[Key, Value] = {}
            for key, row in rows[table].items():
                if c == status_col:
                    cells[key] = ("int", row.status)
                elif c in row.values and row.values[c] is not None:
                    v = row.values[c]
                    cells[key] = ("int", v) if isinstance(v, int) else ("str", v)
            out.append(Column(oids.column(ENTRY[table], c), cells))
    return out


OPER_STATE = {"running": 1, "stopped": 2, "failed": 3}


def state_columns(state: dict[str, Any] | None) -> list[Column]:
    """vnetVrTable and vnetVrIfStatsTable from a datastore state tree (None: lazy)."""
    vr_cells: dict[int, dict[Key, Value]] = {c: {} for c in (1, 2, 3, 4)}
    if_cells: dict[int, dict[Key, Value]] = {c: {} for c in range(1, 10)}
    for r in convert.routers_of(state or {}):
        idx = int(r["index"])
        itfs = r.get("interface", [])
        vr_cells[oids.VR_OPER][(idx,)] = ("int", OPER_STATE.get(r.get("oper-state", ""), 3))
        vr_cells[oids.VR_ROUTES][(idx,)] = ("gauge", int(r.get("route-count", 0)))
        vr_cells[oids.VR_UPTIME][(idx,)] = ("unsigned", int(r.get("uptime", 0)))
        vr_cells[oids.VR_IFCOUNT][(idx,)] = ("gauge", len(itfs))
        for pos, itf in enumerate(itfs, start=1):
            key = (idx, pos)
            if_cells[oids.IFS_OPER][key] = ("int", 1 if itf.get("oper-status") == "up" else 2)
            stats = itf.get("statistics", {})
            for k, name in enumerate(oids.IFS_COUNTERS, start=2):
                if_cells[k][key] = ("counter64", int(stats.get(name, 0)))
    columns = [Column(oids.column(oids.VR_ENTRY, c), v) for c, v in vr_cells.items()] + [
        Column(oids.column(oids.IF_STATS_ENTRY, c), v) for c, v in if_cells.items()
    ]
    return lazy(columns) if state is None else columns


def network_columns(tree: dict[str, Any]) -> list[Column]:
    cells: dict[int, dict[Key, Value]] = {c: {} for c in range(2, 8)}
    for n in convert.networks_of(tree):
        key = (int(n["vni"]),)
        cells[oids.NET_NAME][key] = ("str", n["name"])
        cells[oids.NET_TENANT][key] = ("str", n["tenant"])
        cells[oids.NET_IPV4][key] = ("str", str(n.get("ipv4-prefix", "")))
        cells[oids.NET_IPV6][key] = ("str", str(n.get("ipv6-prefix", "")))
        cells[oids.NET_MTU][key] = ("unsigned", int(n.get("mtu", 0)))
        kbit = int(n.get("bandwidth", 0)) // 1000
        cells[oids.NET_BANDWIDTH][key] = ("unsigned", min(kbit, 2**32 - 1))
    return [Column(oids.column(oids.NETWORK_ENTRY, c), v) for c, v in cells.items()]


def hypervisor_columns(host: str, rows: Rows, state: dict[str, Any] | None) -> list[Column]:
    """The scalars; vnetActiveVRs is lazy when `state` is None (not read yet)."""
    configured = sum(1 for r in rows[VR_TABLE].values() if r.status == rs.ACTIVE)
    if state is None:
        active = Column(oids.ACTIVE, {}, lazy=True)
    else:
        running = sum(1 for r in convert.routers_of(state) if r.get("oper-state") == "running")
        active = scalar(oids.ACTIVE, ("gauge", running))
    return [
        scalar(oids.HOST_NAME, ("str", host)),
        scalar(oids.NEXT_INDEX, ("unsigned", next_available_index(rows))),
        scalar(oids.CONFIGURED, ("gauge", configured)),
        active,
    ]


def system_columns(descr: str, host: str, uptime_ticks: int) -> list[Column]:
    """SNMPv2-MIB system group (RFC 3418), what a manager looks at first."""
    return [
        scalar(oids.SYS_DESCR[:-1], ("str", descr)),
        scalar(oids.SYS_OBJECT_ID[:-1], ("oid", oids.MIB)),
        scalar(oids.SYS_UPTIME[:-1], ("timeticks", uptime_ticks)),
        scalar(oids.SYS_NAME[:-1], ("str", host)),
    ]


def engine_columns(engine_id: bytes, boots: int, seconds: int, max_size: int) -> list[Column]:
    """SNMP-FRAMEWORK-MIB snmpEngine group (RFC 3411): who answers, and since when."""
    return [
        scalar(oids.ENGINE_ID[:-1], ("str", engine_id)),
        scalar(oids.ENGINE_BOOTS[:-1], ("int", boots)),
        scalar(oids.ENGINE_TIME[:-1], ("int", seconds)),
        scalar(oids.ENGINE_MAX_SIZE[:-1], ("int", max_size)),
    ]


# -- SET ----------------------------------------------------------------------


@dataclass
class SetPlan:
    tree: dict[str, Any] | None  # the new configuration, None when it does not change
    pending: Rows  # the pending rows after the SET
    vr_varbind: dict[int, int]  # VR index -> varbind (1-based) to blame for its errors
    names: dict[str, int]  # VR name -> index, for the new and old configuration


def _writable(oid: OID) -> tuple[str, int, Key] | None:
    """(table, column, raw index) for an OID under a read-create column, else None."""
    for table, entry in ENTRY.items():
        n = len(entry)
        if oid[:n] == entry and len(oid) > n:
            col = oid[n]
            writable = {
                VR_TABLE: (oids.VR_NAME, oids.VR_ADMIN, oids.VR_STATUS),
                IF_TABLE: (
                    oids.IF_NAME,
                    oids.IF_NETWORK,
                    oids.IF_IPV4,
                    oids.IF_IPV6,
                    oids.IF_STATUS,
                ),
                ROUTE_TABLE: (oids.RT_NEXT_HOP, oids.RT_STATUS),
            }[table]
            if col in writable:
                return table, col, tuple(oid[n + 1 :])
    return None


def _valid_key(table: str, key: Key) -> bool:
    if not key or not 1 <= key[0] <= 65535:
        return False
    if table == VR_TABLE:
        return len(key) == 1
    if table == IF_TABLE:
        return len(key) == 2 and 1 <= key[1] <= 64
    # route: vr, type, n, bytes..., prefix length
    if len(key) < 4:
        return False
    typ, n = key[1], key[2]
    if (typ, n) not in ((1, 4), (2, 16)) or len(key) != 4 + n:
        return False
    if any(not 0 <= b <= 255 for b in key[3 : 3 + n]):
        return False
    plen = key[3 + n]
    if plen > (32 if typ == 1 else 128):
        return False
    net = ipaddress.ip_network(route_destination(key), strict=False)
    return net.network_address.packed == bytes(key[3 : 3 + n])  # no host bits


def _text(value: Value, index: int, lo: int, hi: int) -> str:
    kind, raw = value
    if kind != "str":
        raise SnmpError("wrongType", index, "an OCTET STRING is required")
    if not lo <= len(raw) <= hi:
        raise SnmpError("wrongLength", index, f"length must be {lo}..{hi}")
    try:
        text: str = raw.decode("ascii") if isinstance(raw, bytes) else str(raw)
    except UnicodeDecodeError:
        raise SnmpError("wrongValue", index, "DisplayString must be ASCII") from None
    if any(ord(ch) < 32 for ch in text):
        raise SnmpError("wrongValue", index, "control characters are not allowed")
    return text


def _integer(value: Value, index: int) -> int:
    kind, raw = value
    if kind != "int":
        raise SnmpError("wrongType", index, "an INTEGER is required")
    return int(raw)


def _address(text: str, version: int, index: int) -> str:
    if text == "":
        return text
    try:
        itf = ipaddress.ip_interface(text)
    except ValueError:
        raise SnmpError("wrongValue", index, f"{text!r} is no address/prefix-length") from None
    if itf.version != version or "/" not in text:
        raise SnmpError("wrongValue", index, f"{text!r} is no IPv{version} address/length")
    return text


def decode_value(table: str, col: int, key: Key, value: Value, index: int) -> Any:
    """Check one variable binding's value (wrongType, wrongLength, wrongValue)."""
    if col == STATUS_COLUMN[table]:
        v = _integer(value, index)
        try:
            rs.check_settable(v)
        except rs.RowStatusError as err:
            raise SnmpError(err.status, index, err.why) from None
        return v
    if table == VR_TABLE:
        if col == oids.VR_NAME:
            text = _text(value, index, 1, 12)
            if not _VR_NAME.fullmatch(text):
                raise SnmpError(
                    "wrongValue",
                    index,
                    "a name starts with a letter, then letters, digits, '_' or '-'",
                )
            return text
        v = _integer(value, index)  # admin state
        if v not in (1, 2):
            raise SnmpError("wrongValue", index, "admin state is up(1) or down(2)")
        return v
    if table == IF_TABLE:
        if col == oids.IF_NAME:
            text = _text(value, index, 1, 15)
            if not _IF_NAME.fullmatch(text):
                raise SnmpError("wrongValue", index, "no '/', ':' or blanks in names")
            return text
        if col == oids.IF_NETWORK:
            text = _text(value, index, 1, 32)
            if not _NET_NAME.fullmatch(text):
                raise SnmpError("wrongValue", index, "no such network name")
            return text
        text = _text(value, index, 0, 49)
        return _address(text, 4 if col == oids.IF_IPV4 else 6, index)
    # route next hop
    text = _text(value, index, 1, 45)
    try:
        hop = ipaddress.ip_address(text)
    except ValueError:
        raise SnmpError("wrongValue", index, f"{text!r} is no IP address") from None
    if len(key) > 1 and hop.version != (4 if key[1] == 1 else 6):
        raise SnmpError("wrongValue", index, "the next hop's family differs from the route's")
    return text


@dataclass
class _RowChange:
    table: str
    key: Key
    first: int  # first varbind (1-based) for this row
    status: int | None = None  # RowStatus value written, if any
    status_at: int = 0
    values: dict[int, Any] = field(default_factory=dict)
    at: dict[int, int] = field(default_factory=dict)  # column -> varbind


def _defaults(table: str, key: Key) -> dict[int, Any]:
    if table == VR_TABLE:
        return {oids.VR_ADMIN: 1}
    if table == IF_TABLE:
        return {oids.IF_NAME: f"eth{key[1] - 1}", oids.IF_IPV4: "", oids.IF_IPV6: ""}
    return {}


def _complete(table: str, values: dict[int, Any]) -> bool:
    return all(values.get(c) not in (None, "") for c in REQUIRED[table])


def plan_set(
    varbinds: list[tuple[OID, Value]],
    tree: dict[str, Any],
    pending: Pending,
    now: float | None = None,
) -> SetPlan:
    """Plan a SET PDU; raise SnmpError for the first variable binding that fails."""
    now = time.time() if now is None else now
    # 1. each variable binding on its own (RFC 3416 4.2.5 steps 2-7)
    changes: dict[tuple[str, Key], _RowChange] = {}
    for i, (oid, value) in enumerate(varbinds, start=1):
        where = _writable(oid)
        if where is None:
            raise SnmpError("notWritable", i, "not a read-create object of VNET-ROUTER-MIB")
        table, col, key = where
        decoded = decode_value(table, col, key, value, i)
        if not _valid_key(table, key):
            raise SnmpError("noCreation", i, "no such row can ever exist")
        ch = changes.setdefault((table, key), _RowChange(table, key, i))
        if col == STATUS_COLUMN[table]:
            ch.status, ch.status_at = decoded, i
        else:
            ch.values[col] = decoded
            ch.at[col] = i

    rows = working_rows(tree, pending)
    vr_varbind: dict[int, int] = {}
    touched: set[int] = set()
    order = {VR_TABLE: 0, IF_TABLE: 1, ROUTE_TABLE: 2}
    destroyed_vrs: set[int] = set()

    # 2. row states (RFC 2579), VRs first so their children can refer to them
    for (table, key), ch in sorted(changes.items(), key=lambda kv: (order[kv[0][0]], kv[0][1])):
        idx = key[0]
        touched.add(idx)
        vr_varbind.setdefault(idx, ch.status_at or ch.first)
        if table == VR_TABLE and ch.status_at:
            vr_varbind[idx] = ch.status_at
        blame = ch.status_at or ch.first
        current = rows[table].get(key)
        creating = ch.status in (rs.CREATE_AND_GO, rs.CREATE_AND_WAIT)
        orphan = table != VR_TABLE and (idx,) not in rows[VR_TABLE]
        if orphan and (creating or ch.status is None):
            raise SnmpError(
                "inconsistentValue" if creating else "inconsistentName",
                blame,
                f"VR {idx} has no vnetVrConfigEntry",
            )
        values = dict(current.values) if current else (_defaults(table, key) if creating else {})
        values.update(ch.values)
        complete = _complete(table, values)
        try:
            if ch.status is not None:
                new = rs.transition(current.status if current else None, ch.status, complete)
            else:
                new = rs.other(current.status if current else None, complete, creating=False)
        except rs.RowStatusError as err:
            raise SnmpError(err.status, blame, err.why) from None
        if new is None:
            rows[table].pop(key, None)
            if table == VR_TABLE:
                destroyed_vrs.add(idx)
                for t in (IF_TABLE, ROUTE_TABLE):
                    for k in [k for k in rows[t] if k[0] == idx]:
                        del rows[t][k]
            continue
        if current is not None and current.status == rs.ACTIVE and table == VR_TABLE:
            old_name = current.values.get(oids.VR_NAME)
            if values.get(oids.VR_NAME) != old_name:
                raise SnmpError(
                    "inconsistentValue",
                    ch.at.get(oids.VR_NAME, blame),
                    "an active VR cannot be renamed; destroy and create it",
                )
        if current is None and table == IF_TABLE:
            last = max((k[1] for k in rows[IF_TABLE] if k[0] == idx), default=0)
            if key[1] != last + 1:
                raise SnmpError(
                    "inconsistentValue",
                    blame,
                    f"the next interface position of VR {idx} is {last + 1}",
                )
        since = current.since if current and current.status != rs.ACTIVE else now
        rows[table][key] = Row(new, values, since)

    # interfaces keep consecutive positions: a destroyed one moves the later ones down
    for idx in touched - destroyed_vrs:
        keys = sorted(k for k in rows[IF_TABLE] if k[0] == idx)
        if [k[1] for k in keys] != list(range(1, len(keys) + 1)):
            moved = {(idx, pos): rows[IF_TABLE].pop(k) for pos, k in enumerate(keys, start=1)}
            rows[IF_TABLE].update(moved)

    # 3. routers rebuilt from their rows
    by_index = {int(r["index"]): r for r in convert.routers_of(tree)}
    new_routers: dict[int, dict[str, Any] | None] = {}
    for idx in sorted(touched):
        vr = rows[VR_TABLE].get((idx,))
        if vr is None or vr.status != rs.ACTIVE:
            new_routers[idx] = None
            continue
        new_routers[idx] = _router(idx, rows, by_index.get(idx), vr_varbind.get(idx, 1))

    changed = any(new_routers[i] != by_index.get(i) for i in new_routers)
    new_tree = _replace_routers(tree, new_routers) if changed else None

    # 4. what stays pending: rows outside the (new) configuration
    pend = empty_rows()
    for table, table_rows in rows.items():
        for key, row in table_rows.items():
            vr = rows[VR_TABLE].get((key[0],))
            in_config = row.status == rs.ACTIVE and vr is not None and vr.status == rs.ACTIVE
            if not in_config:
                pend[table][key] = row
    names = {r["name"]: int(r["index"]) for r in convert.routers_of(tree)}
    for idx, r in new_routers.items():
        if r is not None:
            names[r["name"]] = idx
    return SetPlan(new_tree, pend, vr_varbind, names)


def _router(idx: int, rows: Rows, old: dict[str, Any] | None, blame: int) -> dict[str, Any]:
    vr = rows[VR_TABLE][(idx,)]
    keys = sorted(k for k in rows[IF_TABLE] if k[0] == idx)
    active = [k for k in keys if rows[IF_TABLE][k].status == rs.ACTIVE]
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
        entry: dict[str, Any] = {"name": v[oids.IF_NAME], "network": v[oids.IF_NETWORK]}
        if v.get(oids.IF_IPV4):
            entry["ipv4"] = v[oids.IF_IPV4]
        if v.get(oids.IF_IPV6):
            entry["ipv6"] = v[oids.IF_IPV6]
        pos = k[1] - 1
        if pos < len(old_itfs) and _same_interface(old_itfs[pos], entry):
            entry = old_itfs[pos]
        itfs.append(entry)
    old_routes = {}
    for route in (old or {}).get("route", []):
        try:
            old_routes[route_key(idx, route["destination"])] = route
        except ValueError:
            continue
    routes = []
    for k in sorted(k for k in rows[ROUTE_TABLE] if k[0] == idx):
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
    router: dict[str, Any] = {"name": vr.values[oids.VR_NAME], "index": idx}
    admin = "down" if vr.values.get(oids.VR_ADMIN) == 2 else "up"
    if admin == "down" or (old is not None and "admin-state" in old):
        router["admin-state"] = admin
    if itfs or (old is not None and "interface" in old):
        router["interface"] = itfs
    if routes or (old is not None and "route" in old):
        router["route"] = routes
    if old is not None:
        for k, v in old.items():  # leaves this MIB does not describe stay as they are
            router.setdefault(k, v)
        if _same_router(old, router):
            return old
    return router


def _same_interface(a: dict[str, Any], b: dict[str, Any]) -> bool:
    def norm(e: dict[str, Any]) -> tuple[Any, ...]:
        addrs = tuple(ipaddress.ip_interface(e[k]) if e.get(k) else None for k in ("ipv4", "ipv6"))
        return e["name"], e["network"], addrs

    return norm(a) == norm(b)


def _same_router(a: dict[str, Any], b: dict[str, Any]) -> bool:
    def norm(r: dict[str, Any]) -> tuple[Any, ...]:
        return (
            r["name"],
            int(r["index"]),
            r.get("admin-state", "up"),
            tuple(id(i) for i in r.get("interface", [])),
            tuple(id(x) for x in r.get("route", [])),
        )

    return norm(a) == norm(b)


def _replace_routers(tree: dict[str, Any], new: dict[int, dict[str, Any] | None]) -> dict[str, Any]:
    out = dict(tree)
    routers = []
    seen = set()
    for r in convert.routers_of(tree):
        idx = int(r["index"])
        seen.add(idx)
        if idx in new:
            if new[idx] is not None:
                routers.append(new[idx])
        else:
            routers.append(r)
    for idx, r in sorted(new.items()):
        if idx not in seen and r is not None:
            routers.append(r)
    out[convert.ROUTERS] = {**tree.get(convert.ROUTERS, {}), "router": routers}
    return out  # shares unchanged routers with `tree`; the datastore copies on commit


def blame_for(plan: SetPlan, path: str | None, default: int = 1) -> int:
    """The varbind to blame for a datastore error at `path` (a YANG instance path)."""
    if path:
        for name, idx in plan.names.items():
            if f"'{name}'" in path and idx in plan.vr_varbind:
                return plan.vr_varbind[idx]
    return next(iter(plan.vr_varbind.values()), default)
