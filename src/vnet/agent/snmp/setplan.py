"""A SET PDU planned as a whole over the conceptual rows (pure).

Every variable binding is checked on its own first (`setcheck`, RFC 3416
4.2.5), then the rows change state by RFC 2579 (VRs first, so their
interfaces and routes can refer to them), then the routers of the VRs the
PDU touched are rebuilt from their rows. The result is the new
configuration tree (committed by the caller through the datastore, which
validates it) and the new pending rows.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from vnet.agent.snmp import rowstatus as rs
from vnet.agent.snmp import smi
from vnet.agent.snmp.errors import SnmpError
from vnet.agent.snmp.routers import Entry, replace_routers, router_from_rows
from vnet.agent.snmp.rows import (
    IF_TABLE,
    REQUIRED,
    STATUS_COLUMN,
    TABLES,
    VR_TABLE,
    Cell,
    Key,
    Pending,
    Row,
    Rows,
    children,
    drop_children,
    empty_rows,
    pending_indexes,
    routers_by_index,
    working_rows_of,
)
from vnet.agent.snmp.setcheck import decode_value, valid_key, writable
from vnet.model.mib import oids


@dataclass
class SetPlan:
    tree: dict[str, Any] | None  # the new configuration, None when it does not change
    pending: Rows  # the pending rows after the SET
    vr_varbind: dict[int, int]  # VR index -> varbind (1-based) to blame for its errors
    names: dict[str, int]  # VR name -> index, for the new and old configuration


@dataclass
class _RowChange:
    """What one PDU writes into one row."""

    table: str
    key: Key
    first: int  # first varbind (1-based) for this row
    status: int | None = None  # RowStatus value written, if any
    status_at: int = 0
    values: dict[int, Cell] = field(default_factory=dict)
    at: dict[int, int] = field(default_factory=dict)  # column -> varbind

    @property
    def blame(self) -> int:
        """The varbind an error of the row as a whole is reported at."""
        return self.status_at or self.first

    @property
    def creating(self) -> bool:
        return self.status in (rs.CREATE_AND_GO, rs.CREATE_AND_WAIT)


def _row_changes(varbinds: list[smi.Varbind]) -> list[_RowChange]:
    """Each variable binding checked on its own (RFC 3416 4.2.5 steps 2-7), grouped by row.

    In the order the rows change state: VR rows first, then interfaces, then routes."""
    changes: dict[tuple[str, Key], _RowChange] = {}
    for i, (oid, value) in enumerate(varbinds, start=1):
        where = writable(oid)
        if where is None:
            raise SnmpError("notWritable", i, "not a read-create object of VNET-ROUTER-MIB")
        table, col, key = where
        decoded = decode_value(table, col, key, value, i)
        if not valid_key(table, key):
            raise SnmpError("noCreation", i, "no such row can ever exist")
        ch = changes.setdefault((table, key), _RowChange(table, key, i))
        if col == STATUS_COLUMN[table]:
            assert isinstance(decoded, int)
            ch.status, ch.status_at = decoded, i
        else:
            ch.values[col] = decoded
            ch.at[col] = i
    return sorted(changes.values(), key=lambda ch: (TABLES.index(ch.table), ch.key))


def _defaults(table: str, key: Key) -> dict[int, Cell]:
    if table == VR_TABLE:
        return {oids.VR_ADMIN: 1}
    if table == IF_TABLE:
        return {oids.IF_NAME: f"eth{key[1] - 1}", oids.IF_IPV4: "", oids.IF_IPV6: ""}
    return {}


def _complete(table: str, values: dict[int, Cell]) -> bool:
    return all(values.get(c) not in (None, "") for c in REQUIRED[table])


@dataclass
class _Working:
    """The rows while a PDU's changes are laid over them, and what the PDU touched."""

    rows: Rows
    now: float
    touched: set[int] = field(default_factory=set)  # VR indexes
    destroyed: set[int] = field(default_factory=set)  # VR indexes whose VR row went
    vr_varbind: dict[int, int] = field(default_factory=dict)

    def note(self, ch: _RowChange) -> None:
        idx = ch.key[0]
        self.touched.add(idx)
        self.vr_varbind.setdefault(idx, ch.blame)
        if ch.table == VR_TABLE and ch.status_at:
            self.vr_varbind[idx] = ch.status_at

    def destroy(self, table: str, key: Key) -> None:
        self.rows[table].pop(key, None)
        if table == VR_TABLE:
            self.destroyed.add(key[0])
            drop_children(self.rows, key[0])

    def renumber_interfaces(self) -> None:
        """Interfaces keep consecutive positions: a destroyed one moves the later ones down."""
        table = self.rows[IF_TABLE]
        for idx in self.touched - self.destroyed:
            keys = children(self.rows, IF_TABLE, idx)
            if [k[1] for k in keys] != list(range(1, len(keys) + 1)):
                moved: dict[Key, Row] = {
                    (idx, pos): table.pop(k) for pos, k in enumerate(keys, start=1)
                }
                table.update(moved)


def _check_parent(w: _Working, ch: _RowChange) -> None:
    idx = ch.key[0]
    orphan = ch.table != VR_TABLE and (idx,) not in w.rows[VR_TABLE]
    if orphan and (ch.creating or ch.status is None):
        raise SnmpError(
            "inconsistentValue" if ch.creating else "inconsistentName",
            ch.blame,
            f"VR {idx} has no vnetVrConfigEntry",
        )


def _next_state(ch: _RowChange, current: Row | None, complete: bool) -> int | None:
    was = current.status if current else None
    try:
        if ch.status is not None:
            return rs.transition(was, ch.status, complete)
        return rs.other(was, complete, creating=False)
    except rs.RowStatusError as err:
        raise SnmpError(err.status, ch.blame, err.why) from None


def _check_rules(w: _Working, ch: _RowChange, current: Row | None, values: dict[int, Cell]) -> None:
    """This MIB's own rules: no renaming of an active VR, interfaces at consecutive positions."""
    idx = ch.key[0]
    if (
        current is not None
        and current.status == rs.ACTIVE
        and ch.table == VR_TABLE
        and values.get(oids.VR_NAME) != current.values.get(oids.VR_NAME)
    ):
        raise SnmpError(
            "inconsistentValue",
            ch.at.get(oids.VR_NAME, ch.blame),
            "an active VR cannot be renamed; destroy and create it",
        )
    if current is None and ch.table == IF_TABLE:
        last = max((k[1] for k in w.rows[IF_TABLE] if k[0] == idx), default=0)
        if ch.key[1] != last + 1:
            raise SnmpError(
                "inconsistentValue",
                ch.blame,
                f"the next interface position of VR {idx} is {last + 1}",
            )


def _apply(w: _Working, ch: _RowChange) -> None:
    """One row's change of state (RFC 2579) and values."""
    w.note(ch)
    _check_parent(w, ch)
    current = w.rows[ch.table].get(ch.key)
    start = _defaults(ch.table, ch.key) if ch.creating else {}
    values = {**(current.values if current else start), **ch.values}
    new = _next_state(ch, current, _complete(ch.table, values))
    if new is None:
        w.destroy(ch.table, ch.key)
        return
    _check_rules(w, ch, current, values)
    since = current.since if current and current.status != rs.ACTIVE else w.now
    w.rows[ch.table][ch.key] = Row(new, values, since)


def _routers(w: _Working, configured: dict[int, Entry]) -> dict[int, Entry | None]:
    """The touched VRs rebuilt from their rows; None for those not (or no longer) active."""
    new: dict[int, Entry | None] = {}
    for idx in sorted(w.touched):
        vr = w.rows[VR_TABLE].get((idx,))
        if vr is None or vr.status != rs.ACTIVE:
            new[idx] = None
        else:
            new[idx] = router_from_rows(idx, w.rows, configured.get(idx), w.vr_varbind.get(idx, 1))
    return new


def _still_pending(rows: Rows) -> Rows:
    """Rows outside the (new) configuration: not active, or of a VR that is not."""
    pend = empty_rows()
    for table, table_rows in rows.items():
        for key, row in table_rows.items():
            vr = rows[VR_TABLE].get((key[0],))
            in_config = row.status == rs.ACTIVE and vr is not None and vr.status == rs.ACTIVE
            if not in_config:
                pend[table][key] = row
    return pend


def plan_set(
    varbinds: list[smi.Varbind],
    tree: dict[str, Any],
    pending: Pending,
    now: float | None = None,
) -> SetPlan:
    """Plan a SET PDU; raise SnmpError for the first variable binding that fails.

    Only the rows of the VRs the PDU touches and of those with pending rows are looked
    at: every other VR has active rows alone, which the PDU leaves as they are."""
    changes = _row_changes(varbinds)
    by_index = routers_by_index(tree)
    looked_at = {ch.key[0] for ch in changes} | pending_indexes(pending)
    configured = {i: r for i in looked_at if (r := by_index.get(i)) is not None}
    w = _Working(working_rows_of(configured, pending), time.time() if now is None else now)
    for ch in changes:
        _apply(w, ch)
    w.renumber_interfaces()
    new_routers = _routers(w, configured)
    changed = any(new_routers[i] != configured.get(i) for i in new_routers)
    names = {r["name"]: idx for idx, r in configured.items()}
    names.update({r["name"]: idx for idx, r in new_routers.items() if r is not None})
    return SetPlan(
        replace_routers(tree, new_routers, configured) if changed else None,
        _still_pending(w.rows),
        w.vr_varbind,
        names,
    )


def blame_for(plan: SetPlan, path: str | None, default: int = 1) -> int:
    """The varbind to blame for a datastore error at `path` (a YANG instance path)."""
    if path:
        for name, idx in plan.names.items():
            if f"'{name}'" in path and idx in plan.vr_varbind:
                return plan.vr_varbind[idx]
    return next(iter(plan.vr_varbind.values()), default)
