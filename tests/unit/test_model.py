"""Model validation: every error names the object, the field and the reason."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from vnet.model import TopologyError, build_topology, network_mtu, parse_rate
from vnet.model.errors import format_loc

BASE: dict[str, Any] = {
    "name": "t",
    "hosts": [{"name": "h1"}, {"name": "h2"}],
    "links": [{"a": "h1", "b": "h2"}],
    "networks": [
        {"name": "n1", "tenant": "a", "vni": 10, "ipv4": "10.0.0.0/24", "ipv6": "fd00::/64"},
        {"name": "n2", "tenant": "a", "vni": 11, "ipv4": "10.0.1.0/24"},
    ],
    "routers": [
        {
            "name": "r1",
            "host": "h1",
            "interfaces": [
                {"network": "n1", "ipv4": "10.0.0.1/24", "ipv6": "fd00::1/64"},
                {"network": "n2", "ipv4": "10.0.1.1/24"},
            ],
            "routes": [{"to": "10.9.0.0/16", "via": "10.0.1.2"}],
        }
    ],
    "endhosts": [{"name": "e1", "host": "h2", "network": "n1", "ipv4": "10.0.0.2/24"}],
}


def problems(mutate) -> list[str]:  # type: ignore[no-untyped-def]
    data = copy.deepcopy(BASE)
    mutate(data)
    with pytest.raises(TopologyError) as info:
        build_topology(data)
    return [str(p) for p in info.value.problems]


def test_valid_topology_builds_and_assigns_indexes() -> None:
    topo = build_topology(copy.deepcopy(BASE))
    assert topo.routers[0].index == 1
    assert topo.router("r1").ifname(1) == "eth1"


def test_next_free_index_skips_taken_ones() -> None:
    data = copy.deepcopy(BASE)
    data["routers"].append({**copy.deepcopy(data["routers"][0]), "name": "r2", "index": 1})
    data["routers"][1]["routes"] = []
    for itf in data["routers"][1]["interfaces"]:
        itf["ipv4"] = itf["ipv4"].replace(".1/", ".5/")
        itf.pop("ipv6", None)
    topo = build_topology(data)
    assert [r.index for r in topo.routers] == [2, 1]


@pytest.mark.parametrize(
    ("mutate", "where", "why"),
    [
        (lambda d: d["hosts"].append({"name": "h1"}), "hosts[2].name", "duplicate host"),
        (lambda d: d["networks"][1].update(vni=10), "networks[1].vni", "already used by"),
        (
            lambda d: d["routers"][0]["interfaces"][0].update(ipv4="10.0.5.1/24"),
            "routers[0].interfaces[0].ipv4",
            "outside 'n1'",
        ),
        (
            lambda d: d["routers"][0]["interfaces"][0].update(name="a-very-long-ifname"),
            "routers[0].interfaces[0].name",
            "IFNAMSIZ",
        ),
        (
            lambda d: d["routers"][0].update(name="router-name-too-long"),
            "routers[0].name",
            "IFNAMSIZ",
        ),
        (
            lambda d: d["routers"][0]["routes"][0].update(via="10.7.7.7"),
            "routers[0].routes[0].via",
            "unreachable",
        ),
        (
            lambda d: d["routers"][0]["interfaces"][0].update(network="nope"),
            "routers[0].interfaces[0].network",
            "unknown network 'nope'",
        ),
        (lambda d: d["routers"][0].update(host="h9"), "routers[0].host", "unknown host 'h9'"),
        (
            lambda d: d["endhosts"][0].update(ipv4="10.0.0.1/24"),
            "endhosts[0].ipv4",
            "already used by router 'r1'",
        ),
        (lambda d: d["endhosts"][0].update(ipv4="10.0.0.255/24"), "endhosts[0].ipv4", "broadcast"),
        (
            lambda d: d["endhosts"][0].update(ipv4="10.0.0.2/16"),
            "endhosts[0].ipv4",
            "prefix length",
        ),
        (
            lambda d: d["endhosts"][0].update(ipv6="fd00::9/64", network="n2"),
            "endhosts[0].ipv6",
            "has no ipv6 subnet",
        ),
        (
            lambda d: d["endhosts"][0].update(name="r1"),
            "endhosts[0].name",
            "already used by a router",
        ),
        (lambda d: d["links"].append({"a": "h2", "b": "h1"}), "links[1]", "duplicate link"),
        (lambda d: d["links"][0].update(b="h1"), "links[0].b", "two different hosts"),
        (lambda d: d["networks"][1].update(ipv4="10.0.0.0/23"), "networks[1].ipv4", "overlaps"),
        (
            lambda d: d["networks"][0].update(mtu=1500),
            "networks[0].mtu",
            "does not fit the underlay",
        ),
        (lambda d: d.update(name="Bad-Name"), "name", "lab name"),
        (lambda d: d["routers"][0].update(colour="red"), "routers[0].colour", "unknown field"),
        (lambda d: d["networks"][0].update(vni=2**24), "networks[0].vni", "less than or equal"),
        (
            lambda d: d["networks"][0].update(ipv4="10.0.0.1/24"),
            "networks[0].ipv4",
            "host bits are set",
        ),
        (lambda d: d["links"][0].update(rate="10 zbit"), "links[0].rate", "unknown rate unit"),
        (
            lambda d: d.update(tenants=[{"name": "b"}]),
            "networks[0].tenant",
            "unknown tenant 'a'",
        ),
    ],
)
def test_each_problem_is_located_and_explained(mutate, where: str, why: str) -> None:  # type: ignore[no-untyped-def]
    found = problems(mutate)
    assert any(p.startswith(where) and why in p for p in found), found


def test_router_cannot_join_two_tenants() -> None:
    def mutate(d: dict[str, Any]) -> None:
        d["networks"][1]["tenant"] = "b"

    found = problems(mutate)
    assert any("a router serves one tenant" in p for p in found), found


def test_overlapping_subnets_are_fine_across_tenants() -> None:
    data = copy.deepcopy(BASE)
    data["networks"].append({"name": "m1", "tenant": "b", "vni": 20, "ipv4": "10.0.0.0/24"})
    topo = build_topology(data)
    same = [n for n in topo.networks if str(n.ipv4) == "10.0.0.0/24"]
    assert {n.tenant for n in same} == {"a", "b"}, same


def test_all_problems_are_reported_at_once() -> None:
    def mutate(d: dict[str, Any]) -> None:
        d["networks"][1]["vni"] = 10
        d["routers"][0]["host"] = "nowhere"

    assert len(problems(mutate)) >= 2


def test_auto_routes_follow_shortest_paths() -> None:
    data = copy.deepcopy(BASE)
    data["tenants"] = [{"name": "a", "routing": "auto"}]
    data["routers"][0]["routes"] = []
    data["networks"].append({"name": "n3", "tenant": "a", "vni": 12, "ipv4": "10.0.2.0/24"})
    data["routers"].append(
        {
            "name": "r2",
            "host": "h2",
            "interfaces": [
                {"network": "n2", "ipv4": "10.0.1.2/24"},
                {"network": "n3", "ipv4": "10.0.2.1/24"},
            ],
        }
    )
    topo = build_topology(data)
    r1_routes = {str(r.destination): str(r.via) for r in topo.router("r1").routes}
    assert r1_routes == {"10.0.2.0/24": "10.0.1.2"}
    r2_routes = {str(r.destination): str(r.via) for r in topo.router("r2").routes}
    assert r2_routes == {"10.0.0.0/24": "10.0.1.1"}
    e1 = topo.endhosts[0]
    assert [(str(r.destination), str(r.via)) for r in e1.routes] == [("0.0.0.0/0", "10.0.0.1")]


def test_tenant_mtu_leaves_room_for_vxlan() -> None:
    topo = build_topology(copy.deepcopy(BASE))
    assert network_mtu(topo, topo.networks[0]) == 1450
    data = copy.deepcopy(BASE)
    data["underlay"] = {"family": "ipv6"}
    topo = build_topology(data)
    assert network_mtu(topo, topo.networks[0]) == 1430
    data["links"][0]["mtu"] = 1600
    topo = build_topology(data)
    assert network_mtu(topo, topo.networks[0]) == 1500


@pytest.mark.parametrize(
    ("text", "bits"),
    [("100mbit", 10**8), ("1.5gbit", 15 * 10**8), ("2G", 2 * 10**9), ("64kbit", 64_000)],
)
def test_rates(text: str, bits: int) -> None:
    assert parse_rate(text) == bits


@pytest.mark.parametrize("bad", ["0mbit", "-1", "fast", "10 zbit"])
def test_bad_rates(bad: str) -> None:
    with pytest.raises(ValueError):
        parse_rate(bad)


def test_format_loc() -> None:
    assert format_loc(("routers", 2, "interfaces", 0, "ipv4")) == "routers[2].interfaces[0].ipv4"


def test_auto_routes_skip_a_family_the_router_has_no_address_of() -> None:
    """An IPv4-only router on a dual-stack network gets no IPv6 routes (issue 17, finding 7).

    Before, r0 got `fd00:2::/64 via fd00::1` although it has no IPv6 address, so
    the file passed every check and `lab up` failed with "No route to host".
    """
    data = copy.deepcopy(BASE)
    data["tenants"] = [{"name": "a", "routing": "auto"}]
    data["routers"][0]["routes"] = []
    data["networks"][1]["ipv6"] = "fd00:1::/64"
    data["networks"].append(
        {"name": "n0", "tenant": "a", "vni": 9, "ipv4": "10.0.9.0/24", "ipv6": "fd00:9::/64"}
    )
    data["routers"][0]["interfaces"][1]["ipv6"] = "fd00:1::1/64"
    data["routers"].append(
        {
            "name": "r0",
            "host": "h2",
            "interfaces": [
                {"network": "n1", "ipv4": "10.0.0.9/24"},
                {"network": "n0", "ipv4": "10.0.9.1/24", "ipv6": "fd00:9::1/64"},
            ],
        }
    )
    topo = build_topology(data)
    r0_routes = {str(r.destination): str(r.via) for r in topo.router("r0").routes}
    assert r0_routes == {"10.0.1.0/24": "10.0.0.1"}
    r1_routes = {str(r.destination): str(r.via) for r in topo.router("r1").routes}
    assert r1_routes == {"10.0.9.0/24": "10.0.0.9"}
    for vr in topo.routers:
        own = {itf.ipv6.network for itf in vr.interfaces if itf.ipv6 is not None}
        for route in vr.routes:
            if route.via.version == 6:
                assert any(route.via in net for net in own), (vr.name, route)
