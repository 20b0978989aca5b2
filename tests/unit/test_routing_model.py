"""Routing in the model: static or ospf per VR, OSPF per interface, refused where it cannot work."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from vnet.model import TopologyError, build_topology
from vnet.model.routing_check import ospf_families, router_id

OSPF = {"protocol": "ospf"}
# r1 and r2 share `core` (both families) and each has a stub network toward its end hosts
BASE: dict[str, Any] = {
    "name": "t",
    "hosts": [{"name": "h1"}, {"name": "h2"}],
    "links": [{"a": "h1", "b": "h2"}],
    "networks": [
        {"name": "core", "tenant": "a", "vni": 10, "ipv4": "10.0.0.0/24", "ipv6": "fd00::/64"},
        {"name": "v4only", "tenant": "a", "vni": 11, "ipv4": "10.0.1.0/24"},
    ],
    "routers": [
        {
            "name": "r1",
            "host": "h1",
            "routing": OSPF,
            "interfaces": [
                {"network": "core", "ipv4": "10.0.0.1/24", "ipv6": "fd00::1/64", "ospf": {}},
                {"network": "v4only", "ipv4": "10.0.1.1/24"},
            ],
        },
        {
            "name": "r2",
            "host": "h2",
            "routing": OSPF,
            "interfaces": [
                {"network": "core", "ipv4": "10.0.0.2/24", "ipv6": "fd00::2/64", "ospf": {}},
            ],
        },
    ],
}


def problems(mutate) -> list[str]:  # type: ignore[no-untyped-def]
    data = copy.deepcopy(BASE)
    mutate(data)
    with pytest.raises(TopologyError) as info:
        build_topology(data)
    return [str(p) for p in info.value.problems]


def test_an_ospf_topology_builds_with_defaults() -> None:
    topo = build_topology(copy.deepcopy(BASE))
    r1 = topo.router("r1")
    assert r1.runs_ospf and not r1.interfaces[1].ospf
    ospf = r1.interfaces[0].ospf
    assert ospf is not None
    assert (ospf.area, ospf.hello, ospf.dead, ospf.bfd) == ("0.0.0.0", 10, 40, None)
    assert ospf_families(r1) == ["ipv4", "ipv6"]
    assert str(router_id(r1)) == "10.0.0.1"


def test_an_area_may_be_a_number() -> None:
    data = copy.deepcopy(BASE)
    for r in data["routers"]:
        r["interfaces"][0]["ospf"] = {"area": 1}
    topo = build_topology(data)
    assert topo.router("r2").interfaces[0].ospf.area == "0.0.0.1"  # type: ignore[union-attr]


def _set(router: int, path: list[Any], value: Any):  # type: ignore[no-untyped-def]
    def mutate(d: dict[str, Any]) -> None:
        target = d["routers"][router]
        for part in path[:-1]:
            target = target[part]
        target[path[-1]] = value

    return mutate


@pytest.mark.parametrize(
    "mutate, where, why",
    [
        (
            _set(1, ["interfaces", 0, "ospf"], {"area": "0.0.0.1"}),
            "routers[1].interfaces[0].ospf.area",
            "area 0.0.0.1 differs from 0.0.0.0 of router 'r1' interface 'eth0' on the shared "
            "network 'core'",
        ),
        (
            _set(1, ["interfaces", 0, "ospf"], {"hello": 1, "dead": 4}),
            "routers[1].interfaces[0].ospf.hello",
            "hello 1 s differs from 10 s",
        ),
        (
            _set(0, ["interfaces", 1, "ospf"], {}),
            "routers[0].interfaces[1].ospf",
            "OSPFv3 runs on every OSPF interface of this VR but network 'v4only' has no IPv6 "
            "address here (the network has none)",
        ),
        (
            _set(0, ["interfaces", 0, "ospf"], {"bfd": {"min_rx": 5}}),
            "routers[0].interfaces[0].ospf.bfd.min_rx",
            "greater than or equal to 10",
        ),
        (
            _set(0, ["interfaces", 0, "ospf"], {"bfd": {"multiplier": 300}}),
            "routers[0].interfaces[0].ospf.bfd.multiplier",
            "less than or equal to 255",
        ),
        (
            _set(0, ["interfaces", 0, "ospf"], {"hello": 10, "dead": 10}),
            "routers[0].interfaces[0].ospf",
            "dead interval 10 s must be longer than the hello interval 10 s",
        ),
        (
            _set(0, ["interfaces", 0, "ospf"], {"passive": True, "bfd": {}}),
            "routers[0].interfaces[0].ospf",
            "BFD on a passive interface: it has no neighbour to watch",
        ),
        (
            _set(0, ["routing"], {"protocol": "static"}),
            "routers[0].interfaces[0].ospf",
            "OSPF settings on an interface of a VR whose routing is static",
        ),
        (
            _set(1, ["routing"], {"protocol": "ospf", "router_id": "10.0.0.1"}),
            "routers[1].routing.router_id",
            "router id 10.0.0.1 is already that of router 'r1' in tenant 'a'",
        ),
        (
            _set(1, ["interfaces", 0, "ospf"], None),
            "routers[1].routing.protocol",
            "routing is ospf but no interface takes part",
        ),
        (
            _set(0, ["interfaces", 0, "ospf"], {"area": "backbone"}),
            "routers[0].interfaces[0].ospf.area",
            "'backbone' is not an OSPF area",
        ),
    ],
)
def test_each_routing_problem_is_located_and_explained(mutate, where: str, why: str) -> None:  # type: ignore[no-untyped-def]
    found = problems(mutate)
    assert any(p.startswith(where) and why in p for p in found), found


def test_families_can_be_narrowed_to_run_ospfv2_only() -> None:
    data = copy.deepcopy(BASE)
    data["routers"][0]["interfaces"][1]["ospf"] = {}
    data["routers"][0]["routing"] = {"protocol": "ospf", "families": ["ipv4"]}
    topo = build_topology(data)
    assert ospf_families(topo.router("r1")) == ["ipv4"]


def test_routing_round_trips_through_the_yang_tree_and_libyang() -> None:
    from vnet.model.host import host_configs
    from vnet.model.yang import host as codec
    from vnet.model.yang.schema import validate

    data = copy.deepcopy(BASE)
    data["routers"][0]["routing"] = {"protocol": "ospf", "router_id": "1.1.1.1"}
    data["routers"][0]["interfaces"][0]["ospf"] = {
        "area": 2,
        "cost": 7,
        "hello": 1,
        "dead": 4,
        "bfd": {"min_rx": 100, "min_tx": 150, "multiplier": 4},
    }
    data["routers"][1]["interfaces"][0]["ospf"] = {"area": 2, "hello": 1, "dead": 4}
    data["routers"][0]["routing"]["families"] = ["ipv4"]
    data["routers"][0]["interfaces"][1]["ospf"] = {"area": 2, "passive": True}
    hc = host_configs(build_topology(data))["h1"]
    tree = codec.tree(hc)
    validate(tree)
    entry = codec.routers_of(tree)[0]
    assert entry["routing"] == {"protocol": "ospf", "router-id": "1.1.1.1", "family": ["ipv4"]}
    assert entry["interface"][1]["ospf"]["passive"] is True
    assert entry["interface"][0]["ospf"]["bfd"] == {"min-rx": 100, "min-tx": 150, "multiplier": 4}
    back = codec.router_of(entry, "h1")
    assert back.routing == hc.routers[0].routing
    assert [i.ospf for i in back.interfaces] == [i.ospf for i in hc.routers[0].interfaces]


def test_a_routing_problem_is_reported_at_its_yang_path() -> None:
    from vnet.model.yang import host as codec

    r1 = BASE["routers"][0] | {"interface": [{"name": "e0"}]}
    tree = {"vnet-router:routers": {"router": [r1]}}
    loc = ("routers", 0, "interfaces", 0, "ospf", "bfd", "min_rx")
    assert codec.error_path(loc, tree) == (
        "/vr:routers/vr:router[vr:name='r1']/vr:interface[vr:name='e0']/vr:ospf/vr:bfd/vr:min-rx"
    )
    assert codec.error_path(("routers", 0, "routing", "router_id"), tree) == (
        "/vr:routers/vr:router[vr:name='r1']/vr:routing/vr:router-id"
    )


def test_auto_routing_leaves_an_ospf_vr_to_ospf() -> None:
    """Derived static routes would override OSPF's (and survive the failures it routes around)."""
    data = copy.deepcopy(BASE)
    data["tenants"] = [{"name": "a", "routing": "auto"}]
    data["networks"].append({"name": "far", "tenant": "a", "vni": 12, "ipv4": "10.0.2.0/24"})
    data["routers"][1]["interfaces"].append({"network": "far", "ipv4": "10.0.2.1/24"})
    topo = build_topology(data)
    assert topo.router("r1").routes == [], "r1 runs OSPF: no derived route to 'far'"
    data["routers"][0]["routing"] = {"protocol": "static"}
    data["routers"][0]["interfaces"][0].pop("ospf")
    static = build_topology(data).router("r1")
    assert [str(r.destination) for r in static.routes] == ["10.0.2.0/24"]
