"""The columns the agent serves, built from the datastore's trees and the working rows.

Configuration rows, kernel state (lazy until read), the networks, the scalars
of the hypervisor group, and the standard system and snmpEngine groups.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from vnet.agent.snmp import rowstatus as rs
from vnet.agent.snmp import smi
from vnet.agent.snmp.kept import Kept
from vnet.agent.snmp.resources import resource_columns
from vnet.agent.snmp.routing import routing_columns
from vnet.agent.snmp.rows import (
    COLUMNS,
    ENTRY,
    STATUS_COLUMN,
    VR_TABLE,
    Key,
    Row,
    Rows,
    next_available_index,
)
from vnet.agent.snmp.view import Column, Freshness, lazy, scalar
from vnet.model.mib import oids
from vnet.model.mib.oids import OID
from vnet.model.yang.host import networks_of, routers_of

Cells = dict[Key, smi.Value]
OPER_STATE = {"running": 1, "stopped": 2, "failed": 3}
MAX_UNSIGNED32 = 2**32 - 1


def _cell(row: Row, column: int, status_column: int) -> smi.Value | None:
    if column == status_column:
        return smi.integer(row.status)
    v = row.values.get(column)
    if v is None:
        return None
    return smi.integer(v) if isinstance(v, int) else smi.octets(v)


# the values made of each row (rows of an unchanged VR are kept, rows.KEPT_ROWS), and of
# each VR's state entry (kept by frontend.merged_state), by identity
KEPT_CELLS: Kept[Row, dict[int, smi.Value]] = Kept()
KEPT_STATE: Kept[dict[str, Any], list[tuple[int, Key, int]]] = Kept()


def config_columns(rows: Rows) -> list[Column]:
    """vnetVrConfigTable, vnetVrIfConfigTable, vnetVrRouteTable from the working rows."""
    out = []
    for table, columns in COLUMNS.items():
        cells: dict[int, Cells] = {c: {} for c in columns}
        made = partial(row_cells, table)
        for key, row in rows[table].items():
            for c, value in KEPT_CELLS.of(id(row), row, made).items():
                cells[c][key] = value
        out += [Column(oids.column(ENTRY[table], c), cells[c]) for c in columns]
    KEPT_CELLS.end()
    return out


def row_cells(table: str, row: Row) -> dict[int, smi.Value]:
    found = {c: _cell(row, c, STATUS_COLUMN[table]) for c in COLUMNS[table]}
    return {c: value for c, value in found.items() if value is not None}


# the syntax of each column of vnetVrTable and of vnetVrIfStatsTable (keyed by VR index,
# and by (VR index, interface position); columns 2.. are oids.IFS_COUNTERS)
VR_STATE = {
    oids.VR_OPER: smi.Kind.INTEGER,
    oids.VR_ROUTES: smi.Kind.GAUGE,
    oids.VR_UPTIME: smi.Kind.UNSIGNED,
    oids.VR_IFCOUNT: smi.Kind.GAUGE,
}
IF_STATE = {oids.IFS_OPER: smi.Kind.INTEGER} | {
    k: smi.Kind.COUNTER64 for k in range(2, 2 + len(oids.IFS_COUNTERS))
}


def router_state(r: dict[str, Any]) -> list[tuple[int, Key, int]]:
    """A VR's cells of the two state tables, as (column, key, number)."""
    key = (int(r["index"]),)
    itfs = r.get("interface", [])
    out = [
        (oids.VR_OPER, key, OPER_STATE.get(r.get("oper-state", ""), 3)),
        (oids.VR_ROUTES, key, int(r.get("route-count", 0))),
        (oids.VR_UPTIME, key, int(r.get("uptime", 0))),
        (oids.VR_IFCOUNT, key, len(itfs)),
    ]
    for pos, itf in enumerate(itfs, start=1):
        at = (*key, pos)
        out.append((oids.IFS_OPER, at, 1 if itf.get("oper-status") == "up" else 2))
        stats = itf.get("statistics", {})
        for k, name in enumerate(oids.IFS_COUNTERS, start=2):
            out.append((k, at, int(stats.get(name, 0))))
    return out


# the two tables' columns share numbers: a cell's table is told by its key's length
STATE_TABLES = ((oids.VR_ENTRY, VR_STATE), (oids.IF_STATS_ENTRY, IF_STATE))


def state_columns(state: dict[str, Any] | None) -> list[Column]:
    """vnetVrTable and vnetVrIfStatsTable from a datastore state tree (None: lazy)."""
    cells = {entry: {c: {} for c in kinds} for entry, kinds in STATE_TABLES}
    if state is None:  # (the values kept stay for the next state)
        return lazy(_state_columns(cells, {}))
    vrs, interfaces = cells[oids.VR_ENTRY], cells[oids.IF_STATS_ENTRY]
    for r in routers_of(state):
        for c, key, value in KEPT_STATE.of(id(r), r, router_state):
            (vrs if len(key) == 1 else interfaces)[c][key] = value
    KEPT_STATE.end()
    return _state_columns(cells, state)


def _state_columns(
    cells: dict[OID, dict[int, dict[Key, int]]], state: dict[str, Any]
) -> list[Column]:
    columns = [
        Column(oids.column(entry, c), cells[entry][c], kind=kind)
        for entry, kinds in STATE_TABLES
        for c, kind in kinds.items()
    ]
    return columns + resource_columns(state) + routing_columns(state)


def network_columns(tree: dict[str, Any]) -> list[Column]:
    cells: dict[int, Cells] = {c: {} for c in range(2, 8)}
    for n in networks_of(tree):
        key = (int(n["vni"]),)
        cells[oids.NET_NAME][key] = smi.octets(n["name"])
        cells[oids.NET_TENANT][key] = smi.octets(n["tenant"])
        cells[oids.NET_IPV4][key] = smi.octets(str(n.get("ipv4-prefix", "")))
        cells[oids.NET_IPV6][key] = smi.octets(str(n.get("ipv6-prefix", "")))
        cells[oids.NET_MTU][key] = smi.unsigned(int(n.get("mtu", 0)))
        kbit = int(n.get("bandwidth", 0)) // 1000
        cells[oids.NET_BANDWIDTH][key] = smi.unsigned(min(kbit, MAX_UNSIGNED32))
    return [Column(oids.column(oids.NETWORK_ENTRY, c), v) for c, v in cells.items()]


def row_counts(rows: Rows) -> tuple[int, int]:
    """What the hypervisor group says of the rows: the VRs configured (active VR rows),
    and the next available index."""
    configured = sum(1 for r in rows[VR_TABLE].values() if r.status == rs.ACTIVE)
    return configured, next_available_index(rows)


def running_count(state: dict[str, Any]) -> int:
    """The VRs of a state tree that run."""
    return sum(1 for r in routers_of(state) if r.get("oper-state") == "running")


def hypervisor_columns(
    host: str,
    counts: tuple[int, int],
    running: int | None,
    fresh: Freshness | None = None,
) -> list[Column]:
    """The scalars (`counts`: row_counts; `running`: running_count of the state, None when
    it was not read yet: vnetActiveVRs is then lazy); vnetActiveVRs asks `fresh` (whether
    every VR's state is recent enough) before it is served."""
    configured, next_index = counts
    if running is None:
        active = Column(oids.ACTIVE, {}, lazy=True)
    else:
        active = scalar(oids.ACTIVE, smi.gauge(running))
    active = active if fresh is None else active.checked(fresh)
    return [
        scalar(oids.HOST_NAME, smi.octets(host)),
        scalar(oids.NEXT_INDEX, smi.unsigned(next_index)),
        scalar(oids.CONFIGURED, smi.gauge(configured)),
        active,
    ]


def system_columns(descr: str, host: str, uptime_ticks: int) -> list[Column]:
    """SNMPv2-MIB system group (RFC 3418), what a manager looks at first."""
    return [
        scalar(oids.SYS_DESCR[:-1], smi.octets(descr)),
        scalar(oids.SYS_OBJECT_ID[:-1], smi.object_id(oids.MIB)),
        scalar(oids.SYS_UPTIME[:-1], smi.timeticks(uptime_ticks)),
        scalar(oids.SYS_NAME[:-1], smi.octets(host)),
    ]


def engine_columns(engine_id: bytes, boots: int, seconds: int, max_size: int) -> list[Column]:
    """SNMP-FRAMEWORK-MIB snmpEngine group (RFC 3411): who answers, and since when."""
    return [
        scalar(oids.ENGINE_ID[:-1], smi.octets(engine_id)),
        scalar(oids.ENGINE_BOOTS[:-1], smi.integer(boots)),
        scalar(oids.ENGINE_TIME[:-1], smi.integer(seconds)),
        scalar(oids.ENGINE_MAX_SIZE[:-1], smi.integer(max_size)),
    ]
