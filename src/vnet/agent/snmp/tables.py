"""The columns of VNET-ROUTER-MIB's per-VR tables, kept between requests and changed VR by
VR: after a commit that changed one VR among 10,000, remaking every column (and sorting its
keys) for the next request was most of SNMP's time.

Every instance of these columns belongs to one VR (its key starts with the VR's index), and
a VR's instances are made of that VR's entry alone (its configuration entry and pending
rows, or its state entry), so the VRs a change touched are taken out and put in again.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from vnet.agent.datastore.journal import router_change
from vnet.agent.snmp import rowstatus as rs
from vnet.agent.snmp.columns import IF_STATE, VR_STATE, router_state, row_cells, state_columns
from vnet.agent.snmp.resources import RESOURCE_COLUMNS, resource_cells
from vnet.agent.snmp.routing import ROUTING_COLUMNS, routing_cells
from vnet.agent.snmp.rows import (
    COLUMNS,
    ENTRY,
    MAX_INDEX,
    VR_TABLE,
    Key,
    Pending,
    Rows,
    index_available,
    pending_indexes,
    routers_by_index,
    working_rows_of,
)
from vnet.agent.snmp.view import Column
from vnet.model.mib import oids
from vnet.model.mib.oids import OID
from vnet.model.yang.host import routers_of

Tree = dict[str, Any]
Cell = tuple[OID, Key, Any]  # (column, key, value) of one instance


class VrColumns:
    """Columns whose instances each belong to one VR, set and dropped VR by VR."""

    def __init__(self, columns: Iterable[Column]):
        self.columns = {c.oid: c for c in columns}
        self._of_vr: dict[int, list[tuple[OID, Key]]] = {}  # VR index -> its instances

    def listed(self) -> list[Column]:
        return list(self.columns.values())

    def set_vr(self, idx: int, cells: Iterable[Cell]) -> None:
        """VR `idx`'s instances are `cells` (none: it has none)."""
        self.drop_vr(idx)
        placed = []
        for oid, key, value in cells:
            self.columns[oid].put(key, value)
            placed.append((oid, key))
        if placed:
            self._of_vr[idx] = placed

    def drop_vr(self, idx: int) -> None:
        for oid, key in self._of_vr.pop(idx, ()):
            self.columns[oid].drop(key)

    def rebuild(self, cells_by_vr: Iterable[tuple[int, Iterable[Cell]]]) -> None:
        """Every VR's instances anew (each column sorted once, not instance by instance)."""
        self._of_vr = {}
        for column in self.columns.values():
            column.values = {}
        for idx, cells in cells_by_vr:
            placed = []
            for oid, key, value in cells:
                self.columns[oid].values[key] = value
                placed.append((oid, key))
            if placed:
                self._of_vr[idx] = placed
        for column in self.columns.values():
            column.keys = sorted(column.values)


def _row_instances(rows: Rows) -> dict[int, list[Cell]]:
    """The instances of the read-create tables the rows make, by VR."""
    found: dict[int, list[Cell]] = {}
    for table, entry in ENTRY.items():
        for key, row in rows[table].items():
            cells = found.setdefault(key[0], [])
            for c, value in row_cells(table, row).items():
                cells.append((oids.column(entry, c), key, value))
    return found


class ConfigTables:
    """vnetVrConfigTable, vnetVrIfConfigTable and vnetVrRouteTable of the running
    configuration with the pending rows laid over it (rows.working_rows), and the two
    counts the hypervisor group says of them, changed for the VRs a commit changed
    (journal.router_change) and those with pending rows."""

    def __init__(self) -> None:
        made = [Column(oids.column(ENTRY[t], c), {}) for t, cs in COLUMNS.items() for c in cs]
        self.tables = VrColumns(made)
        self.tree: Tree | None = None
        self.version = -1  # of the pending rows
        self.pending_vrs: set[int] = set()
        self.vr_rows: dict[int, int] = {}  # VR index -> the status of its VR row
        self.configured = 0  # VR rows active
        self.next_index = 1  # the lowest index without a VR row (0: none left)

    def columns(self) -> list[Column]:
        return self.tables.listed()

    def counts(self) -> tuple[int, int]:
        """columns.row_counts of the working rows."""
        return self.configured, self.next_index

    def refresh(self, running: Tree, pending: Pending) -> None:
        if self.tree is running and self.version == pending.version:
            return
        vrs = self._changed(running)
        now_pending = pending_indexes(pending)
        by_index = routers_by_index(running)
        if vrs is None:
            self._remake(by_index, pending)
        else:
            self._redo(by_index, pending, vrs | self.pending_vrs | now_pending)
        self.tree, self.version, self.pending_vrs = running, pending.version, now_pending

    def _changed(self, running: Tree) -> set[int] | None:
        """The VRs whose configuration entry changed since the last refresh (None: the
        VR list's container changed, or none was made yet: every VR)."""
        if self.tree is None:
            return None
        change = router_change(self.tree, running)
        if change is None:
            return None
        entries = [*change.put, *change.superseded()]
        return {int(r["index"]) for r in entries}

    def _remake(self, by_index: dict[int, Tree], pending: Pending) -> None:
        rows = working_rows_of(by_index, pending)
        self.tables.rebuild(_row_instances(rows).items())
        self.vr_rows = {key[0]: row.status for key, row in rows[VR_TABLE].items()}
        self.configured = sum(1 for s in self.vr_rows.values() if s == rs.ACTIVE)
        self.next_index = index_available(self.vr_rows)

    def _redo(self, by_index: dict[int, Tree], pending: Pending, vrs: set[int]) -> None:
        rows = working_rows_of({i: by_index[i] for i in vrs if i in by_index}, pending)
        made = _row_instances(rows)
        for idx in vrs:
            self.tables.set_vr(idx, made.get(idx, ()))
            if self.vr_rows.pop(idx, None) == rs.ACTIVE:
                self.configured -= 1
            if (row := rows[VR_TABLE].get((idx,))) is not None:
                self.vr_rows[idx] = row.status
                self.configured += row.status == rs.ACTIVE
        freed = [i for i in vrs if i not in self.vr_rows]
        self.next_index = index_available(
            self.vr_rows, min([*freed, self.next_index or MAX_INDEX + 1])
        )


def _column_oids(entry: OID, numbers: Iterable[int]) -> dict[int, OID]:
    return {c: oids.column(entry, c) for c in numbers}


_VR = _column_oids(oids.VR_ENTRY, VR_STATE)
_IF_STATS = _column_oids(oids.IF_STATS_ENTRY, IF_STATE)
_RESOURCE = _column_oids(oids.VR_RESOURCE_ENTRY, RESOURCE_COLUMNS)
_ROUTING = _column_oids(oids.VR_ROUTING_ENTRY, ROUTING_COLUMNS)


def _state_instances(r: Tree) -> list[Cell]:
    """The instances a VR's state entry makes in the four state tables."""
    found: list[Cell] = [
        ((_VR if len(key) == 1 else _IF_STATS)[c], key, value) for c, key, value in router_state(r)
    ]
    found += [(_RESOURCE[c], key, value) for c, key, value in resource_cells(r)]
    found += [(_ROUTING[c], key, value) for c, key, value in routing_cells(r)]
    return found


class StateTables:
    """vnetVrTable, vnetVrIfStatsTable, vnetVrResourceTable and vnetVrRoutingTable, and
    the count of VRs running (vnetActiveVRs), changed for the VRs whose state was read."""

    def __init__(self) -> None:
        self.tables = VrColumns(state_columns({}))
        self.up: set[int] = set()  # the VRs running

    def columns(self) -> list[Column]:
        return self.tables.listed()

    def running(self) -> int:
        return len(self.up)

    def remake(self, state: Tree) -> None:
        """Every VR's instances, of a state tree with every VR."""
        routers = routers_of(state)
        self.tables.rebuild((int(r["index"]), _state_instances(r)) for r in routers)
        self.up = {int(r["index"]) for r in routers if r.get("oper-state") == "running"}

    def change(self, gone: Iterable[int], read: Iterable[Tree]) -> None:
        """The VRs `gone` (indexes) taken out, then those `read` (state entries) put in."""
        for idx in gone:
            self.tables.drop_vr(idx)
            self.up.discard(idx)
        for r in read:
            idx = int(r["index"])
            self.tables.set_vr(idx, _state_instances(r))
            if r.get("oper-state") == "running":
                self.up.add(idx)
            else:
                self.up.discard(idx)
