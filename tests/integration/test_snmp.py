"""SNMP GET and SET against a real agent, with the Net-SNMP command-line tools as the
client (snmpget, snmpset, snmpbulkget, snmpwalk, snmpbulkwalk) and ncclient for the
NETCONF side of the same datastore."""

from __future__ import annotations

import pytest

from vnet.model.mib import oids

from .agent_support import AgentUnderTest
from .snmp_support import (  # noqa: F401  (agent_fixture, clean_fixture: pytest fixtures)
    NS,
    V2_RO,
    V2_RW,
    V3,
    V3_RO,
    V3_SHA256,
    agent_fixture,
    clean_fixture,
    create_args,
    d,
    if_col,
    ip,
    next_index,
    snmp,
    values,
    vr_col,
    vr_namespaces,
    vr_xml,
)


@pytest.mark.parametrize(
    ("write", "read"),
    [(V2_RW, V2_RO), (V3, V3), (V3_SHA256, V3_RO)],
    ids=["v2c", "v3-sha-aes", "v3-sha256-aes"],
)
def test_create_get_bulkget_walk_destroy(
    agent: AgentUnderTest, write: list[str], read: list[str]
) -> None:
    idx = next_index(agent, read)
    assert idx == 1
    snmp(agent, "snmpset", write, *create_args(idx, "r1"))
    assert vr_namespaces(agent) == [agent.node_ns("r1")]
    addrs = ip(agent.node_ns("r1"), "-br", "addr")
    assert "10.1.0.254/24" in addrs

    got = values(
        snmp(
            agent,
            "snmpget",
            read,
            vr_col(oids.VR_NAME, idx),
            vr_col(oids.VR_ADMIN, idx),
            vr_col(oids.VR_STATUS, idx),
            d((*oids.VR_ENTRY, oids.VR_OPER, idx)),
            d(oids.CONFIGURED) + ".0",
            d(oids.NEXT_INDEX) + ".0",
        ).stdout
    )
    assert list(got.values()) == ["r1", "1", "1", "1", "1", "2"], got

    # one GETBULK for the VR's objects: the column OIDs before its row, one repetition
    cols = [d((*oids.VR_CONFIG_ENTRY, c, idx - 1)) for c in (2, 3, 4)] + [
        d((*oids.IF_CONFIG_ENTRY, c, idx, 0)) for c in (2, 3, 4)
    ]
    got = values(snmp(agent, "snmpbulkget", read, "-Cn0", "-Cr1", *cols).stdout)
    assert got == {
        vr_col(oids.VR_NAME, idx): "r1",
        vr_col(oids.VR_ADMIN, idx): "1",
        vr_col(oids.VR_STATUS, idx): "1",
        if_col(oids.IF_NAME, idx, 1): "eth0",
        if_col(oids.IF_NETWORK, idx, 1): "n1",
        if_col(oids.IF_IPV4, idx, 1): "10.1.0.254/24",
    }

    walked = values(snmp(agent, "snmpwalk", read, d(oids.OBJECTS)).stdout)
    bulkwalked = values(snmp(agent, "snmpbulkwalk", read, d(oids.OBJECTS)).stdout)
    assert walked.keys() == bulkwalked.keys()
    assert walked[vr_col(oids.VR_NAME, idx)] == "r1"
    assert walked[d((*oids.IF_STATS_ENTRY, oids.IFS_OPER, idx, 1))] == "1"  # up
    assert walked[d((*oids.NETWORK_ENTRY, oids.NET_IPV4, 10))] == "10.1.0.0/24"
    assert list(walked) == sorted(walked, key=lambda o: tuple(int(x) for x in o[1:].split(".")))

    snmp(agent, "snmpset", write, vr_col(oids.VR_STATUS, idx), "i", "6")
    assert vr_namespaces(agent) == []
    walked = values(snmp(agent, "snmpwalk", read, d(oids.OBJECTS)).stdout)
    assert not [o for o in walked if o.startswith(d(oids.VR_CONFIG_ENTRY) + ".")]


def test_snmp_and_netconf_see_the_same_routers(agent: AgentUnderTest) -> None:
    snmp(agent, "snmpset", V2_RW, *create_args(5, "viasnmp"))
    with agent.netconf() as m:
        data = m.get(filter=("subtree", f'<routers xmlns="{NS}"/>')).data
        routers = {r.findtext(f"{{{NS}}}name"): r for r in data.iterfind(f".//{{{NS}}}router")}
        assert routers["viasnmp"].findtext(f"{{{NS}}}index") == "5"
        assert routers["viasnmp"].findtext(f".//{{{NS}}}ipv4") == "10.1.0.254/24"
        assert routers["viasnmp"].findtext(f"{{{NS}}}oper-state") == "running"
        m.edit_config(
            target="running",
            config=vr_xml(
                "vianc",
                extra=(
                    "<index>9</index><admin-state>down</admin-state><interface><name>e0</name>"
                    "<network>n2</network><ipv4>10.2.0.1/24</ipv4></interface>"
                ),
            ),
        )
    got = values(
        snmp(
            agent,
            "snmpget",
            V2_RO,
            vr_col(oids.VR_NAME, 9),
            vr_col(oids.VR_ADMIN, 9),
            if_col(oids.IF_NAME, 9, 1),
            if_col(oids.IF_NETWORK, 9, 1),
            d((*oids.VR_ENTRY, oids.VR_OPER, 9)),
        ).stdout
    )
    assert list(got.values()) == ["vianc", "2", "e0", "n2", "2"], got  # down -> stopped(2)
    # a change over SNMP to the NETCONF-made VR, seen over NETCONF
    snmp(agent, "snmpset", V2_RW, vr_col(oids.VR_ADMIN, 9), "i", "1")
    with agent.netconf() as m:
        data = m.get_config("running").data
        vianc = next(
            r for r in data.iterfind(f".//{{{NS}}}router") if r.findtext(f"{{{NS}}}name") == "vianc"
        )
        assert vianc.findtext(f"{{{NS}}}admin-state") == "up"


def test_routes_over_snmp_are_routes_over_netconf(agent: AgentUnderTest) -> None:
    snmp(agent, "snmpset", V2_RW, *create_args(2, "router"))
    index = (2, 1, 4, 10, 9, 0, 0, 16)  # VR 2, ipv4, 4 octets, 10.9.0.0, /16
    hop = d((*oids.ROUTE_ENTRY, oids.RT_NEXT_HOP, *index))
    status = d((*oids.ROUTE_ENTRY, oids.RT_STATUS, *index))
    snmp(agent, "snmpset", V2_RW, hop, "s", "10.1.0.1", status, "i", "4")
    routes = ip(agent.node_ns("router"), "route")
    assert "10.9.0.0/16 via 10.1.0.1" in routes, routes
    with agent.netconf() as m:
        xml = m.get_config("running").data_xml
        assert "<destination>10.9.0.0/16</destination>" in xml
        assert "<next-hop>10.1.0.1</next-hop>" in xml
        m.edit_config(
            target="running",
            config=vr_xml(
                "router",
                extra=(
                    "<route><destination>fd00:9::/48</destination><next-hop>fd00:1::1</next-hop>"
                    "</route><interface><name>eth0</name><ipv6>fd00:1::fe/64</ipv6></interface>"
                ),
            ),
        )
    walked = values(snmp(agent, "snmpbulkwalk", V3, d(oids.ROUTE_ENTRY[:-1])).stdout)
    v6 = (2, 2, 16, 0xFD, 0, 0, 9, *[0] * 12, 48)
    assert walked == {
        hop: "10.1.0.1",
        d((*oids.ROUTE_ENTRY, oids.RT_NEXT_HOP, *v6)): "fd00:1::1",
        status: "1",
        d((*oids.ROUTE_ENTRY, oids.RT_STATUS, *v6)): "1",
    }, walked
    snmp(agent, "snmpset", V2_RW, status, "i", "6")
    routes = ip(agent.node_ns("router"), "route")
    assert "10.9.0.0/16" not in routes, routes


def test_create_and_wait_goes_through_not_ready_and_not_in_service(agent: AgentUnderTest) -> None:
    idx = 3
    status = vr_col(oids.VR_STATUS, idx)
    snmp(agent, "snmpset", V2_RW, status, "i", "5")  # createAndWait
    assert values(snmp(agent, "snmpget", V2_RO, status).stdout)[status] == "3"  # notReady
    name = values(snmp(agent, "snmpget", V2_RO, vr_col(oids.VR_NAME, idx)).stdout)
    assert "No Such Instance" in name[vr_col(oids.VR_NAME, idx)]
    # the interface row of a VR that is not active yet
    snmp(
        agent,
        "snmpset",
        V2_RW,
        if_col(oids.IF_STATUS, idx, 1),
        "i",
        "5",
        if_col(oids.IF_NETWORK, idx, 1),
        "s",
        "n1",
    )
    snmp(agent, "snmpset", V2_RW, vr_col(oids.VR_NAME, idx), "s", "waiter")
    assert values(snmp(agent, "snmpget", V2_RO, status).stdout)[status] == "2"  # notInService
    with agent.netconf() as m:
        assert "waiter" not in m.get_config("running").data_xml  # not configured yet
    assert vr_namespaces(agent) == []
    snmp(
        agent, "snmpset", V2_RW, if_col(oids.IF_STATUS, idx, 1), "i", "1", status, "i", "1"
    )  # both active in one SET
    assert values(snmp(agent, "snmpget", V2_RO, status).stdout)[status] == "1"
    with agent.netconf() as m:
        assert "<name>waiter</name>" in m.get_config("running").data_xml
    assert vr_namespaces(agent) == [agent.node_ns("waiter")]
    snmp(agent, "snmpset", V2_RW, status, "i", "6")
    assert vr_namespaces(agent) == []


# snmpset arguments (after creating VR 1 named r1), the error Net-SNMP reports, the
# failed object; the datastore must not change
ERRORS = [
    ([vr_col(oids.VR_STATUS, 2), "s", "createAndGo"], "wrongType", vr_col(oids.VR_STATUS, 2)),
    ([vr_col(oids.VR_STATUS, 2), "i", "7"], "wrongValue", vr_col(oids.VR_STATUS, 2)),
    ([vr_col(oids.VR_STATUS, 2), "i", "3"], "wrongValue", vr_col(oids.VR_STATUS, 2)),
    ([vr_col(oids.VR_STATUS, 1), "i", "2"], "wrongValue", vr_col(oids.VR_STATUS, 1)),
    ([vr_col(oids.VR_ADMIN, 1), "i", "3"], "wrongValue", vr_col(oids.VR_ADMIN, 1)),
    (
        [vr_col(oids.VR_NAME, 2), "s", "name-too-long", vr_col(oids.VR_STATUS, 2), "i", "4"],
        "wrongLength",
        vr_col(oids.VR_NAME, 2),
    ),
    ([vr_col(oids.VR_STATUS, 0), "i", "4"], "noCreation", vr_col(oids.VR_STATUS, 0)),
    ([vr_col(oids.VR_STATUS, 65536), "i", "4"], "noCreation", vr_col(oids.VR_STATUS, 65536)),
    ([d(oids.HOST_NAME) + ".0", "s", "x"], "notWritable", d(oids.HOST_NAME) + ".0"),
    (
        [d((*oids.VR_ENTRY, oids.VR_OPER, 1)), "i", "1"],
        "notWritable",
        d((*oids.VR_ENTRY, oids.VR_OPER, 1)),
    ),
    (
        [vr_col(oids.VR_NAME, 1), "s", "r1", vr_col(oids.VR_STATUS, 1), "i", "4"],
        "inconsistentValue",
        vr_col(oids.VR_STATUS, 1),
    ),  # createAndGo on an existing row
    (
        [vr_col(oids.VR_STATUS, 2), "i", "4"],
        "inconsistentValue",
        vr_col(oids.VR_STATUS, 2),
    ),  # createAndGo without vnetVrName
    ([vr_col(oids.VR_STATUS, 2), "i", "1"], "inconsistentValue", vr_col(oids.VR_STATUS, 2)),
    ([vr_col(oids.VR_NAME, 1), "s", "other"], "inconsistentValue", vr_col(oids.VR_NAME, 1)),
    ([vr_col(oids.VR_NAME, 2), "s", "r2"], "inconsistentName", vr_col(oids.VR_NAME, 2)),
    # the datastore's validation refuses the activation
    (create_args(2, "r1", "10.1.0.253/24"), "inconsistentValue", vr_col(oids.VR_STATUS, 2)),
    (create_args(2, "r2", "10.9.0.1/24"), "inconsistentValue", vr_col(oids.VR_STATUS, 2)),
]


@pytest.mark.parametrize(
    ("args", "reason", "failed"), ERRORS, ids=[f"{e[1]}-{n}" for n, e in enumerate(ERRORS)]
)
def test_set_errors_follow_rfc_3416_and_2579(
    agent: AgentUnderTest, args: list[str], reason: str, failed: str
) -> None:
    snmp(agent, "snmpset", V2_RW, *create_args(1, "r1"))
    with agent.netconf() as m:
        before = m.get_config("running").data_xml
    done = snmp(agent, "snmpset", V2_RW, *args, check=False)
    assert done.returncode != 0, done.stdout
    assert f"Reason: {reason}" in done.stderr, done.stderr
    assert f"Failed object: {failed}" in done.stderr, done.stderr
    with agent.netconf() as m:
        assert m.get_config("running").data_xml == before
    assert vr_namespaces(agent) == [agent.node_ns("r1")]
