"""vnetVrResourceTable: the limits and use of each VR's cgroup, from the state tree.

Rows only for VRs with a `resources` container (the YANG leaves, converted
to the MIB's units: hundredths of a core, KiB, microseconds).
"""

from __future__ import annotations

from typing import Any

from vnet.agent.snmp import smi
from vnet.agent.snmp.view import Column
from vnet.model.mib import oids
from vnet.model.yang.host import routers_of

MAX_UNSIGNED32 = 2**32 - 1


def _kib(value: Any) -> int:
    return min(int(value or 0) // 1024, MAX_UNSIGNED32)


RESOURCE_COLUMNS = range(1, 6)


def resource_cells(r: dict[str, Any]) -> list[tuple[int, tuple[int, ...], smi.Value]]:
    """A VR's state entry's cells of the table, as (column, key, value)."""
    res = r.get("resources")
    if res is None:
        return []
    key = (int(r["index"]),)
    cpu = round(float(res["cpu"]) * 100) if "cpu" in res else 0
    return [
        (oids.RES_CPU_LIMIT, key, smi.unsigned(cpu)),
        (oids.RES_CPUSET, key, smi.octets(res.get("cpuset", ""))),
        (oids.RES_MEM_LIMIT, key, smi.unsigned(_kib(res.get("memory")))),
        (oids.RES_CPU_TIME, key, smi.counter64(int(res.get("cpu-time", 0)))),
        (oids.RES_CUR_MEM, key, smi.gauge(_kib(res.get("memory-used")))),
    ]


def resource_columns(state: dict[str, Any]) -> list[Column]:
    cells: dict[int, dict[tuple[int, ...], smi.Value]] = {c: {} for c in RESOURCE_COLUMNS}
    for r in routers_of(state):
        for c, key, value in resource_cells(r):
            cells[c][key] = value
    return [Column(oids.column(oids.VR_RESOURCE_ENTRY, c), v) for c, v in cells.items()]
