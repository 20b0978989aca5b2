"""A VR's resources over SNMP (issue 14): Net-SNMP's snmpget reads vnetVrResourceTable
for a VR made through NETCONF with a cgroup, in the MIB's units."""

from __future__ import annotations

from vnet.model.mib import oids
from vnet.tools import processes

from .agent_support import AgentUnderTest
from .snmp_support import (  # noqa: F401  (agent_fixture, clean_fixture: pytest fixtures)
    NS,
    V2_RO,
    agent_fixture,
    clean_fixture,
    d,
    snmp,
    values,
    vr_xml,
)

BUSY = ["sh", "-c", "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done"]

RESOURCES = (
    "<interface><name>eth0</name><network>n1</network><ipv4>10.1.0.7/24</ipv4></interface>"
    "<resources><cpu>0.25</cpu><cpuset>0</cpuset><memory>134217728</memory></resources>"
)


def test_snmpget_reads_the_limits_and_the_use(agent: AgentUnderTest) -> None:
    with agent.netconf() as m:
        m.edit_config(target="running", config=vr_xml("rs", extra=RESOURCES))
        data = m.get_config("running").data
    index = int(data.findtext(f".//{{{NS}}}router/{{{NS}}}index"))
    # something runs in the VR, so its group has CPU time to show
    processes.run(agent.node_ns("rs"), BUSY, timeout=30)
    cols = {
        c: d((*oids.VR_RESOURCE_ENTRY, c, index))
        for c in (
            oids.RES_CPU_LIMIT,
            oids.RES_CPUSET,
            oids.RES_MEM_LIMIT,
            oids.RES_CPU_TIME,
            oids.RES_CUR_MEM,
        )
    }
    got = values(snmp(agent, "snmpget", V2_RO, *cols.values()).stdout)
    assert got[cols[oids.RES_CPU_LIMIT]] == "25", got
    assert got[cols[oids.RES_CPUSET]] == "0", got
    assert got[cols[oids.RES_MEM_LIMIT]] == str(128 * 1024), got
    assert int(got[cols[oids.RES_CPU_TIME]]) > 0, got
    assert int(got[cols[oids.RES_CUR_MEM]]) >= 0, got
