"""vnetVrResourceTable (issue 14): in the MIB file, and served from the state tree."""

from __future__ import annotations

from vnet.agent.snmp import smi
from vnet.agent.snmp.columns import state_columns
from vnet.agent.snmp.view import View
from vnet.model.mib import oids

from .test_snmp_mib import mib_file_oids

STATE = {
    "vnet-router:routers": {
        "router": [
            {"name": "plain", "index": 1, "oper-state": "running"},
            {
                "name": "limited",
                "index": 2,
                "oper-state": "running",
                "resources": {
                    "cpu": "0.5",
                    "cpuset": "0-1",
                    "memory": "536870912",
                    "cpu-time": "123456",
                    "memory-used": "4194304",
                },
            },
        ]
    }
}


def test_the_table_is_where_the_mib_file_puts_it() -> None:
    f = mib_file_oids()
    assert f["vnetVrResourceEntry"] == oids.VR_RESOURCE_ENTRY
    assert f["vnetVrCpuTime"] == (*oids.VR_RESOURCE_ENTRY, oids.RES_CPU_TIME)
    assert f["vnetVrCurMem"] == (*oids.VR_RESOURCE_ENTRY, oids.RES_CUR_MEM)
    assert f["vnetVrCpuLimit"] == (*oids.VR_RESOURCE_ENTRY, oids.RES_CPU_LIMIT)


def test_rows_only_for_vrs_with_resources_in_the_mibs_units() -> None:
    view = View(state_columns(STATE))

    def get(column: int, index: int) -> smi.Value:
        return view.get((*oids.VR_RESOURCE_ENTRY, column, index))

    assert get(oids.RES_CPU_LIMIT, 2) == smi.unsigned(50)
    assert get(oids.RES_CPUSET, 2) == smi.octets("0-1")
    assert get(oids.RES_MEM_LIMIT, 2) == smi.unsigned(524288)
    assert get(oids.RES_CPU_TIME, 2) == smi.counter64(123456)
    assert get(oids.RES_CUR_MEM, 2) == smi.gauge(4096)
    assert get(oids.RES_CPU_TIME, 1) == smi.NO_SUCH_INSTANCE
    # a walk of the VR state table runs into the resource table after it, in order
    varbind = view.next((*oids.VR_RESOURCE_ENTRY[:-2], 8))
    assert varbind is not None and varbind[0] == (*oids.VR_RESOURCE_ENTRY, 1, 2)
