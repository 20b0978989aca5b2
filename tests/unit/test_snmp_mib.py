"""VNET-ROUTER-MIB without a network: the RFC 2579 RowStatus machine, SET planning
with RFC 3416's error codes, GET/GETNEXT over rows, notifications, the MIB file."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from pysnmp.proto import rfc1902

from vnet.agent.datastore import Event
from vnet.agent.snmp import columns, setplan, smi
from vnet.agent.snmp import rowstatus as rs
from vnet.agent.snmp.errors import SnmpError
from vnet.agent.snmp.notify import event_varbinds
from vnet.agent.snmp.rows import (
    VR_TABLE,
    Pending,
    next_available_index,
    route_key,
    rows_of,
    working_rows,
)
from vnet.agent.snmp.view import NeedsState, View
from vnet.model.mib import oids
from vnet.model.yang import host as convert

MIB_FILE = Path(__file__).resolve().parents[2] / "src/vnet/model/mib/VNET-ROUTER-MIB.txt"
A, B, C, D = None, rs.NOT_READY, rs.NOT_IN_SERVICE, rs.ACTIVE

# -- RFC 2579's state table, cell by cell ------------------------------------------
# (current state, value written, row complete after the PDU) -> new state or error
TABLE = [
    (A, rs.CREATE_AND_GO, True, D),
    (A, rs.CREATE_AND_GO, False, "inconsistentValue"),
    (B, rs.CREATE_AND_GO, True, "inconsistentValue"),
    (C, rs.CREATE_AND_GO, True, "inconsistentValue"),
    (D, rs.CREATE_AND_GO, True, "inconsistentValue"),
    (A, rs.CREATE_AND_WAIT, False, B),
    (A, rs.CREATE_AND_WAIT, True, C),
    (B, rs.CREATE_AND_WAIT, True, "inconsistentValue"),
    (C, rs.CREATE_AND_WAIT, True, "inconsistentValue"),
    (D, rs.CREATE_AND_WAIT, True, "inconsistentValue"),
    (A, rs.ACTIVE, True, "inconsistentValue"),
    (B, rs.ACTIVE, False, "inconsistentValue"),
    (B, rs.ACTIVE, True, D),  # footnote 2: the same PDU supplied the missing columns
    (C, rs.ACTIVE, True, D),
    (D, rs.ACTIVE, True, D),
    (A, rs.NOT_IN_SERVICE, True, "inconsistentValue"),
    (B, rs.NOT_IN_SERVICE, False, "inconsistentValue"),
    (B, rs.NOT_IN_SERVICE, True, C),  # footnote 3
    (C, rs.NOT_IN_SERVICE, True, C),
    (D, rs.NOT_IN_SERVICE, True, "wrongValue"),  # this agent cannot take VRs out of service
    (A, rs.DESTROY, False, A),
    (B, rs.DESTROY, False, A),
    (C, rs.DESTROY, True, A),
    (D, rs.DESTROY, True, A),
]


@pytest.mark.parametrize(("current", "value", "complete", "expected"), TABLE)
def test_rowstatus_table(current: int | None, value: int, complete: bool, expected: Any) -> None:
    if isinstance(expected, str):
        with pytest.raises(rs.RowStatusError) as info:
            rs.transition(current, value, complete)
        assert info.value.status == expected
    else:
        assert rs.transition(current, value, complete) == expected


def test_active_to_not_in_service_where_a_table_allows_it() -> None:
    assert rs.transition(D, rs.NOT_IN_SERVICE, True, can_leave_active=True) == C


@pytest.mark.parametrize("value", [0, rs.NOT_READY, 7, -1])
def test_values_a_manager_may_not_write(value: int) -> None:
    for current in (A, B, C, D):
        with pytest.raises(rs.RowStatusError) as info:
            rs.transition(current, value, True)
        assert info.value.status == "wrongValue"


@pytest.mark.parametrize(
    ("current", "complete", "expected"),
    [(A, True, "inconsistentName"), (B, False, B), (B, True, C), (C, True, C), (D, True, D)],
)
def test_setting_another_column(current: int | None, complete: bool, expected: Any) -> None:
    if isinstance(expected, str):
        with pytest.raises(rs.RowStatusError) as info:
            rs.other(current, complete, creating=False)
        assert info.value.status == expected
    else:
        assert rs.other(current, complete, creating=False) == expected


# -- SET planning ------------------------------------------------------------------

NETS = {
    convert.NETWORKS: {
        "network": [
            {"name": "n1", "tenant": "a", "vni": 10, "ipv4-prefix": "10.1.0.0/24"},
        ]
    }
}


def col(entry: tuple[int, ...], c: int, *index: int) -> tuple[int, ...]:
    return (*entry, c, *index)


def vr(c: int, idx: int) -> tuple[int, ...]:
    return col(oids.VR_CONFIG_ENTRY, c, idx)


def itf(c: int, idx: int, pos: int) -> tuple[int, ...]:
    return col(oids.IF_CONFIG_ENTRY, c, idx, pos)


def s(text: str) -> smi.Value:
    return smi.octets(text.encode())


def i(n: int) -> smi.Value:
    return smi.integer(n)


def plan(
    varbinds: list[tuple[tuple[int, ...], smi.Value]],
    tree: dict[str, Any] | None = None,
    pending: Pending | None = None,
) -> setplan.SetPlan:
    return setplan.plan_set(
        varbinds, tree if tree is not None else NETS, pending or Pending(), now=1000.0
    )


def apply(p: setplan.SetPlan, tree: dict[str, Any], pending: Pending) -> dict[str, Any]:
    pending.replace(p.pending)
    return p.tree if p.tree is not None else tree


def test_create_and_go_with_an_interface_in_one_pdu() -> None:
    p = plan(
        [
            (vr(oids.VR_NAME, 3), s("r1")),
            (vr(oids.VR_STATUS, 3), i(rs.CREATE_AND_GO)),
            (itf(oids.IF_NETWORK, 3, 1), s("n1")),
            (itf(oids.IF_IPV4, 3, 1), s("10.1.0.254/24")),
            (itf(oids.IF_STATUS, 3, 1), i(rs.CREATE_AND_GO)),
        ]
    )
    assert p.tree is not None
    assert convert.routers_of(p.tree) == [
        {
            "name": "r1",
            "index": 3,
            "interface": [{"name": "eth0", "network": "n1", "ipv4": "10.1.0.254/24"}],
        }
    ]
    assert convert.networks_of(p.tree) == convert.networks_of(NETS)
    assert all(not rows for rows in p.pending.values())


def test_create_and_wait_then_name_then_active_then_destroy() -> None:
    tree, pending = NETS, Pending()
    p = plan([(vr(oids.VR_STATUS, 1), i(rs.CREATE_AND_WAIT))], tree, pending)
    assert p.tree is None  # nothing for the datastore yet
    tree = apply(p, tree, pending)
    view = View(columns.config_columns(working_rows(tree, pending)))
    assert view.get(vr(oids.VR_STATUS, 1)) == smi.integer(rs.NOT_READY)
    assert view.get(vr(oids.VR_NAME, 1)) == smi.NO_SUCH_INSTANCE  # no value yet
    assert view.get(vr(oids.VR_ADMIN, 1)) == smi.integer(1)  # DEFVAL up

    tree = apply(plan([(vr(oids.VR_NAME, 1), s("r1"))], tree, pending), tree, pending)
    view = View(columns.config_columns(working_rows(tree, pending)))
    assert view.get(vr(oids.VR_STATUS, 1)) == smi.integer(rs.NOT_IN_SERVICE)
    assert convert.routers_of(tree) == []

    p = plan([(vr(oids.VR_STATUS, 1), i(rs.ACTIVE))], tree, pending)
    assert p.tree is not None
    tree = apply(p, tree, pending)
    assert convert.routers_of(tree) == [{"name": "r1", "index": 1}]
    assert working_rows(tree, pending)[VR_TABLE][(1,)].status == rs.ACTIVE

    p = plan([(vr(oids.VR_STATUS, 1), i(rs.DESTROY))], tree, pending)
    assert p.tree is not None and convert.routers_of(p.tree) == []


def test_admin_state_of_an_active_vr_changes_in_place() -> None:
    tree = {**NETS, convert.ROUTERS: {"router": [{"name": "r1", "index": 2}]}}
    p = plan([(vr(oids.VR_ADMIN, 2), i(2))], tree)
    assert p.tree is not None
    assert convert.routers_of(p.tree) == [{"name": "r1", "index": 2, "admin-state": "down"}]


def test_an_unchanged_router_is_the_same_object() -> None:
    router = {
        "name": "r1",
        "index": 2,
        "admin-state": "up",
        "interface": [{"name": "eth0", "network": "n1", "ipv4": "10.1.0.1/24"}],
    }
    tree = {**NETS, convert.ROUTERS: {"router": [router]}}
    p = plan([(vr(oids.VR_ADMIN, 2), i(1)), (vr(oids.VR_STATUS, 2), i(rs.ACTIVE))], tree)
    assert p.tree is None  # nothing to commit, no modify event


def test_destroying_the_first_interface_moves_the_second_down() -> None:
    router = {
        "name": "r1",
        "index": 2,
        "interface": [{"name": "eth0", "network": "n1"}, {"name": "eth1", "network": "n1"}],
    }
    tree = {**NETS, convert.ROUTERS: {"router": [router]}}
    p = plan([(itf(oids.IF_STATUS, 2, 1), i(rs.DESTROY))], tree)
    assert p.tree is not None
    assert convert.routers_of(p.tree)[0]["interface"] == [{"name": "eth1", "network": "n1"}]


def test_routes_are_indexed_by_type_address_and_length() -> None:
    router = {
        "name": "r1",
        "index": 2,
        "interface": [{"name": "eth0", "network": "n1", "ipv4": "10.1.0.254/24"}],
    }
    tree = {**NETS, convert.ROUTERS: {"router": [router]}}
    key = route_key(2, "10.9.0.0/16")
    assert key == (2, 1, 4, 10, 9, 0, 0, 16)
    p = plan(
        [
            ((*oids.ROUTE_ENTRY, oids.RT_NEXT_HOP, *key), s("10.1.0.1")),
            ((*oids.ROUTE_ENTRY, oids.RT_STATUS, *key), i(rs.CREATE_AND_GO)),
        ],
        tree,
    )
    assert p.tree is not None
    assert convert.routers_of(p.tree)[0]["route"] == [
        {"destination": "10.9.0.0/16", "next-hop": "10.1.0.1"}
    ]


EXISTING = {**NETS, convert.ROUTERS: {"router": [{"name": "r1", "index": 1}]}}


@pytest.mark.parametrize(
    ("varbinds", "status", "index"),
    [
        # RFC 3416 4.2.5 (2): no writable variable under that name
        ([((*oids.HOST_NAME, 0), s("x"))], "notWritable", 1),
        ([(col(oids.VR_ENTRY, oids.VR_OPER, 1), i(1))], "notWritable", 1),
        ([((1, 3, 6, 1, 2, 1, 1, 5, 0), s("x"))], "notWritable", 1),
        # (3) wrong ASN.1 type
        ([(vr(oids.VR_STATUS, 2), s("createAndGo"))], "wrongType", 1),
        ([(vr(oids.VR_NAME, 2), i(5))], "wrongType", 1),
        ([(vr(oids.VR_ADMIN, 2), smi.unsigned(1))], "wrongType", 1),
        # (4) wrong length
        ([(vr(oids.VR_NAME, 2), s("a-name-too-long"))], "wrongLength", 1),
        # (6) values it can never take
        ([(vr(oids.VR_STATUS, 2), i(7))], "wrongValue", 1),
        ([(vr(oids.VR_STATUS, 2), i(rs.NOT_READY))], "wrongValue", 1),
        ([(vr(oids.VR_ADMIN, 1), i(3))], "wrongValue", 1),
        ([(vr(oids.VR_NAME, 2), s("9lives"))], "wrongValue", 1),
        ([(itf(oids.IF_IPV4, 1, 1), s("10.1.0.300/24"))], "wrongValue", 1),
        ([(itf(oids.IF_IPV4, 1, 1), s("fd00::1/64"))], "wrongValue", 1),
        ([(vr(oids.VR_STATUS, 1), i(rs.NOT_IN_SERVICE))], "wrongValue", 1),
        # (7) rows that can never exist
        ([(vr(oids.VR_STATUS, 0), i(rs.CREATE_AND_GO))], "noCreation", 1),
        ([(vr(oids.VR_STATUS, 70000), i(rs.CREATE_AND_GO))], "noCreation", 1),
        ([(col(oids.VR_CONFIG_ENTRY, oids.VR_STATUS, 2, 1), i(rs.CREATE_AND_GO))], "noCreation", 1),
        ([(itf(oids.IF_STATUS, 1, 65), i(rs.CREATE_AND_GO))], "noCreation", 1),
        (
            [((*oids.ROUTE_ENTRY, oids.RT_STATUS, 1, 1, 4, 10, 9, 0, 1, 16), i(rs.CREATE_AND_GO))],
            "noCreation",
            1,
        ),  # host bits set
        # (8) inconsistentName: a column of a row nobody creates
        ([(vr(oids.VR_NAME, 5), s("r5"))], "inconsistentName", 1),
        # (10) inconsistentValue, from RFC 2579's table and this MIB's rules
        (
            [(vr(oids.VR_NAME, 1), s("r1")), (vr(oids.VR_STATUS, 1), i(rs.CREATE_AND_GO))],
            "inconsistentValue",
            2,
        ),
        ([(vr(oids.VR_STATUS, 2), i(rs.CREATE_AND_GO))], "inconsistentValue", 1),
        ([(vr(oids.VR_STATUS, 2), i(rs.ACTIVE))], "inconsistentValue", 1),
        ([(vr(oids.VR_NAME, 1), s("other"))], "inconsistentValue", 1),
        (
            [
                (itf(oids.IF_NETWORK, 9, 1), s("n1")),
                (itf(oids.IF_STATUS, 9, 1), i(rs.CREATE_AND_GO)),
            ],
            "inconsistentValue",
            2,
        ),
        (
            [
                (itf(oids.IF_NETWORK, 1, 2), s("n1")),
                (itf(oids.IF_STATUS, 1, 2), i(rs.CREATE_AND_GO)),
            ],
            "inconsistentValue",
            2,
        ),  # position 1 is still free
    ],
)
def test_set_errors(
    varbinds: list[tuple[tuple[int, ...], smi.Value]], status: str, index: int
) -> None:
    with pytest.raises(SnmpError) as info:
        plan(varbinds, EXISTING)
    assert (info.value.status, info.value.index) == (status, index), info.value.why


def test_the_first_failing_varbind_is_named() -> None:
    with pytest.raises(SnmpError) as info:
        plan([(vr(oids.VR_ADMIN, 1), i(1)), (vr(oids.VR_STATUS, 1), i(9))], EXISTING)
    assert (info.value.status, info.value.index) == ("wrongValue", 2)


def test_pending_rows_expire_after_five_minutes() -> None:
    pending = Pending()
    pending.replace(plan([(vr(oids.VR_STATUS, 4), i(rs.CREATE_AND_WAIT))]).pending)
    assert not pending.expire(1000.0 + 299)
    assert pending.expire(1000.0 + 301)
    assert not pending.rows[VR_TABLE]


def test_next_index_skips_pending_rows() -> None:
    pending = Pending()
    pending.replace(plan([(vr(oids.VR_STATUS, 2), i(rs.CREATE_AND_WAIT))], EXISTING).pending)
    rows = working_rows(EXISTING, pending)
    assert next_available_index(rows) == 3


# -- values and their pysnmp form ----------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        smi.integer(-5),
        smi.octets(b"r1"),
        smi.unsigned(7),
        smi.counter64(2**40),
        smi.timeticks(123),
        smi.object_id(oids.VR_CREATED),
    ],
)
def test_values_survive_the_trip_through_pysnmp(value: smi.Value) -> None:
    assert smi.from_pysnmp(smi.to_pysnmp(value)) == value


def test_a_set_with_an_ip_address_is_a_wrong_type_not_a_general_error() -> None:
    ip = smi.from_pysnmp(rfc1902.IpAddress("10.1.0.1"))
    assert ip == smi.Value(smi.Kind.IP_ADDRESS, bytes([10, 1, 0, 1]))
    with pytest.raises(SnmpError) as info:
        plan([(vr(oids.VR_NAME, 2), ip), (vr(oids.VR_STATUS, 2), i(rs.CREATE_AND_GO))])
    assert (info.value.status, info.value.index) == ("wrongType", 1)


# -- reads -------------------------------------------------------------------------


def test_getnext_walks_in_oid_order_and_ends() -> None:
    tree = {
        **NETS,
        convert.ROUTERS: {"router": [{"name": "r10", "index": 10}, {"name": "r2", "index": 2}]},
    }
    view = View(columns.config_columns(rows_of(tree)) + columns.network_columns(tree))
    walked = []
    oid: tuple[int, ...] = oids.MIB
    for _ in range(100):
        found = view.next(oid)
        if found is None:
            break
        oid, value = found
        walked.append((oid, value))
    names = [
        v
        for o, v in walked
        if o[: len(oids.VR_CONFIG_ENTRY) + 1] == (*oids.VR_CONFIG_ENTRY, oids.VR_NAME)
    ]
    assert names == [smi.octets("r2"), smi.octets("r10")]
    assert [o for o, _ in walked] == sorted(o for o, _ in walked)
    assert walked[-1] == ((*oids.NETWORK_ENTRY, oids.NET_BANDWIDTH, 10), smi.unsigned(0))


def test_state_columns_are_lazy_until_read() -> None:
    view = View(columns.config_columns(rows_of(EXISTING)) + columns.state_columns(None))
    assert view.get(vr(oids.VR_NAME, 1)) == smi.octets("r1")
    with pytest.raises(NeedsState):
        view.get(col(oids.VR_ENTRY, oids.VR_OPER, 1))
    with pytest.raises(NeedsState):
        view.next(vr(oids.VR_STATUS, 1))  # the walk would go on into vnetVrTable


def test_failure_event_varbinds() -> None:
    ev = Event("r1", 4, "create", "failure", "File exists")
    vbs = dict(event_varbinds(ev, {}, uptime=123))
    assert vbs[oids.SNMP_TRAP_OID] == smi.object_id(oids.VR_FAILED)
    assert vbs[oids.SYS_UPTIME] == smi.timeticks(123)
    assert vbs[vr(oids.VR_NAME, 4)] == smi.octets("r1")
    assert vbs[oids.EVENT_OPERATION] == smi.integer(1)
    assert vbs[oids.EVENT_MESSAGE] == smi.octets("File exists")


# -- the MIB file and the code agree -------------------------------------------------


def mib_file_oids() -> dict[str, tuple[int, ...]]:
    text = re.sub(r"--[^\n]*", "", MIB_FILE.read_text())
    found = {"enterprises": (1, 3, 6, 1, 4, 1)}
    pattern = re.compile(
        r"^([a-z][A-Za-z0-9]*)\s+(?:OBJECT IDENTIFIER|OBJECT-TYPE|MODULE-IDENTITY|"
        r"NOTIFICATION-TYPE|OBJECT-GROUP|NOTIFICATION-GROUP|MODULE-COMPLIANCE)"
        r".*?::=\s*\{\s*([A-Za-z0-9]+)\s+(\d+)\s*\}",
        re.S | re.M,
    )
    defs = {m.group(1): (m.group(2), int(m.group(3))) for m in pattern.finditer(text)}
    for _ in range(10):
        for name, (parent, arc) in defs.items():
            if parent in found:
                found[name] = (*found[parent], arc)
    return found


def test_oids_match_the_mib_file() -> None:
    f = mib_file_oids()
    assert f["vnetRouterMIB"] == oids.MIB
    assert f["vnetHostName"] == oids.HOST_NAME
    assert f["vnetNextAvailableVrIndex"] == oids.NEXT_INDEX
    assert f["vnetActiveVRs"] == oids.ACTIVE
    assert f["vnetVrConfigEntry"] == oids.VR_CONFIG_ENTRY
    assert f["vnetVrRowStatus"] == (*oids.VR_CONFIG_ENTRY, oids.VR_STATUS)
    assert f["vnetVrName"] == (*oids.VR_CONFIG_ENTRY, oids.VR_NAME)
    assert f["vnetVrIfConfigEntry"] == oids.IF_CONFIG_ENTRY
    assert f["vnetVrIfRowStatus"] == (*oids.IF_CONFIG_ENTRY, oids.IF_STATUS)
    assert f["vnetVrIfIpv6Address"] == (*oids.IF_CONFIG_ENTRY, oids.IF_IPV6)
    assert f["vnetVrRouteRowStatus"] == (*oids.ROUTE_ENTRY, oids.RT_STATUS)
    assert f["vnetVrRouteNextHop"] == (*oids.ROUTE_ENTRY, oids.RT_NEXT_HOP)
    assert f["vnetVrOperState"] == (*oids.VR_ENTRY, oids.VR_OPER)
    assert f["vnetVrIfCount"] == (*oids.VR_ENTRY, oids.VR_IFCOUNT)
    assert f["vnetVrIfOutDiscards"] == (*oids.IF_STATS_ENTRY, 9)
    assert f["vnetNetworkBandwidth"] == (*oids.NETWORK_ENTRY, oids.NET_BANDWIDTH)
    assert f["vnetEventMessage"] == oids.EVENT_MESSAGE[:-1]
    assert f["vnetVrRoutingEntry"] == oids.VR_ROUTING_ENTRY
    assert f["vnetVrRoutingFullNeighbors"] == (*oids.VR_ROUTING_ENTRY, oids.RTG_FULL)
    assert f["vnetVrRoutingLastError"] == (*oids.VR_ROUTING_ENTRY, oids.RTG_LAST_ERROR)
    for name, oid in [
        ("vnetVrCreated", oids.VR_CREATED),
        ("vnetVrRemoved", oids.VR_REMOVED),
        ("vnetVrFailed", oids.VR_FAILED),
        ("vnetVrModified", oids.VR_MODIFIED),
    ]:
        assert f[name] == oid


def test_routing_columns_count_an_ospf_vrs_neighbours_and_routes() -> None:
    from vnet.agent.snmp.columns import state_columns

    state = {
        "vnet-router:routers": {
            "router": [
                {"name": "static", "index": 1},
                {
                    "name": "r2",
                    "index": 2,
                    "routing": {
                        "protocol": "ospf",
                        "state": {
                            "daemons": "running",
                            "restarts": 1,
                            "last-error": "ospfd exited",
                            "neighbor": [{"state": "Full"}, {"state": "Init"}],
                            "route": [{"destination": "10.9.0.0/24"}],
                        },
                    },
                },
            ]
        }
    }
    cells = {
        col.oid[-1]: col.values
        for col in state_columns(state)
        if col.oid[:-1] == oids.VR_ROUTING_ENTRY
    }
    assert {c: v[(2,)].raw for c, v in cells.items()} == {
        oids.RTG_DAEMONS: 1,
        oids.RTG_RESTARTS: 1,
        oids.RTG_NEIGHBORS: 2,
        oids.RTG_FULL: 1,
        oids.RTG_ROUTES: 1,
        oids.RTG_LAST_ERROR: "ospfd exited",
    }
    assert all((1,) not in v for v in cells.values()), "no row for a static VR"
