"""Connections and bandwidth in the model: addressing, MTU, and validation with located errors."""

from __future__ import annotations

import copy
import functools
from ipaddress import IPv6Address
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from vnet.model import TopologyError, build_topology, network_mtu
from vnet.model.srv6 import connection_sids, locator, overhead, tunnels

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "em-testbed.yaml"
PATH_A = ["R1", "MR1", "MR5", "MR12", "MR7", "MR2", "R2"]
PATH_B = ["R1", "MR3", "MR6", "MR9", "MR10", "MR4", "R2"]


def load_testbed() -> dict[str, Any]:
    """A copy of the testbed's file as parsed: each test may change its own."""
    return copy.deepcopy(_parsed_testbed())


@functools.cache
def _parsed_testbed() -> dict[str, Any]:  # parsing takes 200 times as long as a deep copy
    parsed: dict[str, Any] = YAML(typ="safe").load(EXAMPLE.read_text())
    return parsed


def with_connections(*conns: dict[str, Any], edit=None) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    data = load_testbed()
    data["connections"] = [copy.deepcopy(c) for c in conns]
    if edit is not None:
        edit(data)
    return data


VIDEO = {
    "name": "video",
    "a": "hs",
    "b": "hd",
    "protocol": "udp",
    "dst_port": 5201,
    "bandwidth": "100mbit",
    "path": PATH_A,
}


def problems(data: dict[str, Any]) -> list[str]:
    with pytest.raises(TopologyError) as info:
        build_topology(data)
    return [str(p) for p in info.value.problems]


def test_tunnel_segments_sids_and_tables() -> None:
    topo = build_topology(with_connections({**VIDEO, "bidirectional": True}))
    fwd, rev = tunnels(topo)
    assert topo.connections[0].id == 1
    assert (fwd.ingress, fwd.egress, rev.ingress, rev.egress) == ("R1", "R2", "R2", "R1")
    # alpha is the first tenant: fc00:1::/32; MR1 is its 3rd router
    assert str(locator(topo, "MR1")) == "fc00:1:3::/48"
    assert fwd.segments(4)[0] == IPv6Address("fc00:1:3::1:0")
    assert fwd.segments(4)[-1] == IPv6Address("fc00:1:2::1:4")  # End.DX4 at R2 (router 2)
    assert fwd.segments(6)[-1] == IPv6Address("fc00:1:2::1:6")
    assert len(fwd.segments(4)) == len(PATH_A) - 1
    assert rev.segments(4) == (*(s for _, s in reversed(fwd.transit)), IPv6Address("fc00:1:1::1:4"))
    assert (fwd.table, fwd.priority, fwd.lan_ifname, fwd.out_ifname) == (
        65537,
        1001,
        "eth0",
        "eth1",
    )
    assert rev.src_port == 5201 and rev.dst_port is None  # the reverse swaps the ports
    assert str(connection_sids(fwd.segments(4)[0])) == "fc00:1:3::1:0/112"
    hs, hd = (next(e for e in topo.endhosts if e.name == n) for n in ("hs", "hd"))
    assert hs.ipv4 is not None and hd.ipv6 is not None
    assert (fwd.src_addr[4], fwd.dst_addr[6]) == (hs.ipv4.ip, hd.ipv6.ip)


def test_end_hosts_get_an_mtu_with_room_for_the_segments() -> None:
    topo = build_topology(with_connections(VIDEO))
    assert overhead(6) == 40 + 8 + 6 * 16
    lan_s = topo.network("lan-s")
    assert network_mtu(topo, lan_s) == 1450 - overhead(6)
    # no tunnel starts in lan-d (one direction only), and core networks keep theirs
    assert network_mtu(topo, topo.network("lan-d")) == 1450
    assert network_mtu(topo, topo.network("r1-mr1")) == 1450


def test_auto_routing_covers_every_locator_of_the_tenant() -> None:
    topo = build_topology(with_connections(VIDEO))
    alpha = [vr for vr in topo.routers if not vr.name.startswith("b-")]
    r1 = topo.router("R1")
    targets = {str(r.destination) for r in r1.routes if str(r.destination).startswith("fc00:")}
    assert targets == {str(locator(topo, vr.name)) for vr in alpha if vr.name != "R1"}
    # beta has no connection: no locators, no extra routes
    assert not any(str(r.destination).startswith("fc00:") for r in topo.router("b-R1").routes)


def test_static_routing_gets_routes_to_neighbours_only() -> None:
    def static(data: dict[str, Any]) -> None:
        data["tenants"][0]["routing"] = "static"
        for vr in data["routers"][:14]:
            vr["routes"] = []
        for eh in data["endhosts"][:2]:
            gw = "10.10.0.254" if eh["name"] == "hs" else "10.10.255.254"
            eh["routes"] = [{"to": "default", "via": gw}]

    topo = build_topology(with_connections({**VIDEO, "family": "ipv4"}, edit=static))
    mr1 = topo.router("MR1")
    dests = {str(r.destination) for r in mr1.routes}
    assert dests == {str(locator(topo, n)) for n in ("R1", "MR5", "MR3")}


def test_connection_ids_fill_gaps() -> None:
    conns = [
        {**VIDEO, "name": "a", "id": 2},
        {**VIDEO, "name": "b", "dst_port": 5202},
        {**VIDEO, "name": "c", "dst_port": 5203},
    ]
    topo = build_topology(with_connections(*conns))
    assert [c.id for c in topo.connections] == [2, 1, 3]


def test_bandwidth_above_the_link_capacity_is_rejected() -> None:
    found = problems(with_connections({**VIDEO, "bandwidth": "2gbit"}))
    assert len(found) == 1
    assert found[0].startswith("connections[0].bandwidth (connection 'video'): 2gbit does not fit")
    assert "esxi-mininet (rate 1gbit) has 990mbit left" in found[0]


def test_connections_share_a_network_guarantee_in_file_order() -> None:
    def guarantee(data: dict[str, Any]) -> None:
        data["networks"][2]["bandwidth"] = "150mbit"  # r1-mr1

    found = problems(
        with_connections(VIDEO, {**VIDEO, "name": "second", "dst_port": 5202}, edit=guarantee)
    )
    assert found == [
        "connections[1].bandwidth (connection 'second'): 100mbit does not fit: network "
        "'r1-mr1' guarantees 150mbit on underlay link esxi-mininet from esxi to mininet; "
        "already admitted there: 'video' 100mbit"
    ]


def test_path_of_routers_that_are_not_adjacent_is_rejected() -> None:
    bad = ["R1", "MR1", "MR7", "MR2", "R2"]
    found = problems(with_connections({**VIDEO, "path": bad}))
    assert found == [
        "connections[0].path[2] (connection 'video'): MR1 and MR7 are not adjacent: they "
        "share no network (MR1: r1-mr1, mr1-mr5, mr1-mr3; MR7: mr12-mr7, mr7-mr2, mr7-mr10, "
        "mr8-mr7); consecutive routers of a path must share a network"
    ]


def test_endpoint_outside_the_tenant_is_rejected() -> None:
    found = problems(with_connections({**VIDEO, "b": "b-hd"}))
    assert len(found) == 1 and found[0].startswith("connections[0].b (connection 'video'): ")
    assert "outside tenant 'alpha'" in found[0]


def test_path_must_start_at_the_gateway_and_end_at_the_far_network() -> None:
    found = problems(with_connections({**VIDEO, "path": PATH_A[1:]}))
    assert any("path[0]" in p and "network 'lan-s'; MR1 has no interface there" in p for p in found)
    found = problems(with_connections({**VIDEO, "path": PATH_A[:-1]}))
    assert any("path[5]" in p and "network 'lan-d'; MR2 has no interface there" in p for p in found)


def test_router_of_another_tenant_and_repeats_are_rejected() -> None:
    found = problems(with_connections({**VIDEO, "path": ["R1", "b-MR1", "MR5"]}))
    assert any("path[1]" in p and "belongs to tenant 'beta'" in p for p in found)
    found = problems(with_connections({**VIDEO, "path": ["R1", "MR1", "R1", "MR1"]}))
    assert any("appears twice" in p for p in found)


def test_ports_need_a_protocol_with_ports() -> None:
    found = problems(with_connections({**VIDEO, "protocol": None}))
    assert any(p.startswith("connections[0].protocol") for p in found)
    found = problems(with_connections({**VIDEO, "protocol": "icmp"}))
    assert any(p.startswith("connections[0].protocol") for p in found)


def test_the_same_flow_cannot_be_steered_twice() -> None:
    found = problems(with_connections(VIDEO, {**VIDEO, "name": "again", "path": PATH_B}))
    assert found == [
        "connections[1] (connection 'again'): the same traffic is already steered by "
        "connection 'video' (same end hosts, protocol and ports); give one of them other ports"
    ]


def test_an_explicit_mtu_without_room_for_the_segments_is_rejected() -> None:
    def mtu(data: dict[str, Any]) -> None:
        data["networks"][0]["mtu"] = 1400

    found = problems(with_connections(VIDEO, edit=mtu))
    assert found == [
        "networks[0].mtu (network 'lan-s'): MTU 1400 leaves no room for the 144 bytes of "
        "connection 'video''s SRv6 encapsulation on a path with MTU 1450, and the kernel "
        "would drop larger packets silently; set it to at most 1306 or leave it unset "
        "(vnet then picks it)"
    ]


def test_network_guarantees_must_fit_the_link_rate() -> None:
    data = load_testbed()
    data["networks"][2]["bandwidth"] = "600mbit"  # r1-mr1
    data["networks"][25]["bandwidth"] = "500mbit"  # b-r1-mr1
    found = problems(data)
    assert found == [
        "links[0].rate (link esxi-mininet): guarantees on underlay link esxi-mininet add up "
        "to 1110mbit (management 10mbit, r1-mr1 600mbit, b-r1-mr1 500mbit), more than its "
        "rate 1gbit; lower a network's bandwidth or raise the rate"
    ]


def test_network_bandwidth_needs_a_rated_link_and_a_sane_ceil() -> None:
    data = load_testbed()
    del data["links"][0]["rate"]
    data["networks"][2]["bandwidth"] = "100mbit"
    found = problems(data)
    assert found == [
        "networks[2].bandwidth (network 'r1-mr1'): the network crosses underlay link "
        "esxi-mininet, which has no rate, so its bandwidth cannot be guaranteed there; set "
        "links[0].rate"
    ]
    data = load_testbed()
    data["networks"][2]["bandwidth"] = "100mbit"
    data["networks"][2]["ceil"] = "50mbit"
    assert problems(data) == [
        "networks[2].ceil (network 'r1-mr1'): ceil 50mbit is below the bandwidth 100mbit it "
        "should guarantee"
    ]


def test_locators_may_not_overlap_the_tenant_addresses() -> None:
    def clash(data: dict[str, Any]) -> None:
        data["tenants"][0]["locators"] = "fd00:10::/32"

    found = problems(with_connections(VIDEO, edit=clash))
    assert any(p.startswith("tenants[0].locators") and "overlaps network" in p for p in found)
