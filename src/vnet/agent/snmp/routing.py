"""vnetVrRoutingTable: the routing state of each OSPF VR, from the state tree, in numbers.

Rows only for VRs with `routing/state` (those that run OSPF); the neighbours and
routes themselves are in YANG (NETCONF <get>, RESTCONF).
"""

from __future__ import annotations

from typing import Any

from vnet.agent.snmp import smi
from vnet.agent.snmp.view import Column
from vnet.model.mib import oids
from vnet.model.yang.host import routers_of

DAEMONS = {"running": 1, "failed": 2}


ROUTING_COLUMNS = range(1, 7)


def routing_cells(r: dict[str, Any]) -> list[tuple[int, tuple[int, ...], smi.Value]]:
    """A VR's state entry's cells of the table, as (column, key, value)."""
    st = r.get("routing", {}).get("state")
    if st is None:
        return []
    key = (int(r["index"]),)
    neighbors = st.get("neighbor", [])
    full = sum(n.get("state") == "Full" for n in neighbors)
    return [
        (oids.RTG_DAEMONS, key, smi.integer(DAEMONS.get(st.get("daemons", ""), 2))),
        (oids.RTG_RESTARTS, key, smi.counter32(int(st.get("restarts", 0)))),
        (oids.RTG_NEIGHBORS, key, smi.gauge(len(neighbors))),
        (oids.RTG_FULL, key, smi.gauge(full)),
        (oids.RTG_ROUTES, key, smi.gauge(len(st.get("route", [])))),
        (oids.RTG_LAST_ERROR, key, smi.octets(st.get("last-error", "")[:255])),
    ]


def routing_columns(state: dict[str, Any]) -> list[Column]:
    cells: dict[int, dict[tuple[int, ...], smi.Value]] = {c: {} for c in ROUTING_COLUMNS}
    for r in routers_of(state):
        for c, key, value in routing_cells(r):
            cells[c][key] = value
    return [Column(oids.column(oids.VR_ROUTING_ENTRY, c), v) for c, v in cells.items()]
