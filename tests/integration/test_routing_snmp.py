"""A VR's routing state over SNMP: Net-SNMP's snmpget reads vnetVrRoutingTable for two OSPF
VRs on one agent's network n1 (FRRouting in each), and no row for a static VR."""

from __future__ import annotations

import pytest

from vnet.model.mib import oids
from vnet.tools import frr
from vnet.tools.wait import wait_until

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


def ospf_vr(address: str) -> str:
    return (
        "<routing><protocol>ospf</protocol></routing>"
        f"<interface><name>eth0</name><network>n1</network><ipv4>{address}</ipv4>"
        "<ospf><hello>1</hello><dead>4</dead></ospf></interface>"
    )


def test_snmpget_reads_the_routing_state(agent: AgentUnderTest) -> None:
    if reason := frr.installed():
        pytest.skip(reason)
    with agent.netconf() as m:
        m.edit_config(target="running", config=vr_xml("ra", extra=ospf_vr("10.1.0.11/24")))
        m.edit_config(target="running", config=vr_xml("rb", extra=ospf_vr("10.1.0.12/24")))
        m.edit_config(
            target="running",
            config=vr_xml(
                "rs",
                extra="<interface><name>eth0</name><network>n1</network>"
                "<ipv4>10.1.0.13/24</ipv4></interface>",
            ),
        )
        data = m.get_config("running").data
    index = {
        r.findtext(f"{{{NS}}}name"): int(r.findtext(f"{{{NS}}}index") or 0)
        for r in data.iterfind(f".//{{{NS}}}router")
    }
    col = {c: d((*oids.VR_ROUTING_ENTRY, c, index["ra"])) for c in range(1, 7)}

    def adjacent() -> dict[str, str] | None:
        got = values(snmp(agent, "snmpget", V2_RO, *col.values()).stdout)
        return got if got[col[oids.RTG_FULL]] == "1" else None

    got = wait_until(adjacent, 60, "ra Full with rb, read over SNMP", interval=0.5)
    assert got[col[oids.RTG_DAEMONS]] == "1", got  # running
    assert got[col[oids.RTG_NEIGHBORS]] == "1" and got[col[oids.RTG_RESTARTS]] == "0", got
    static = d((*oids.VR_ROUTING_ENTRY, oids.RTG_DAEMONS, index["rs"]))
    out = snmp(agent, "snmpget", V2_RO, static, check=False).stdout
    assert "No Such Instance" in out, out
