"""One host's configuration: split from a lab, checked, realised, and as a YANG tree."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from vnet.lab.topology_file import load_topology
from vnet.model import TopologyError
from vnet.model.check import check_host
from vnet.model.host import HostConfig, NetworkOnHost, host_configs, max_host_mtu
from vnet.model.topology import VirtualNetwork, VirtualRouter
from vnet.model.underlay import underlay_addressing
from vnet.model.yang import host as codec
from vnet.substrate import KernelState, Placement, lab_placement, realize, realize_host

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def net(name: str = "n1", vni: int = 10, **extra: Any) -> VirtualNetwork:
    return VirtualNetwork(name=name, tenant="a", vni=vni, ipv4=f"10.{vni}.0.0/24", **extra)


def router(name: str = "r1", *itfs: dict[str, Any], **extra: Any) -> VirtualRouter:
    return VirtualRouter(name=name, host="h1", interfaces=list(itfs), **extra)


def host(*networks: VirtualNetwork, routers: list[VirtualRouter] = (), **extra: Any) -> HostConfig:  # type: ignore[assignment]
    carried = [NetworkOnHost(network=n) for n in networks]
    return HostConfig(host="h1", networks=carried, routers=list(routers), **extra)


# -- splitting a lab -------------------------------------------------------------


def test_a_lab_splits_into_one_host_config_per_host() -> None:
    topo = load_topology(EXAMPLES / "managed.yaml")
    loopback = underlay_addressing(topo).loopback
    configs = host_configs(topo)
    assert sorted(configs) == ["h1", "h2"]
    h1, h2 = configs["h1"], configs["h2"]
    assert [vr.name for vr in h1.routers] == ["r1"] and h2.routers == []
    assert str(h1.vtep) == loopback["h1"]
    # with agents every host carries every network, tunnelled to the other host
    assert [n.network.name for n in h2.networks] == ["lan1", "lan2"]
    assert all([str(v) for v in n.remote_vteps] == [loopback["h1"]] for n in h2.networks)
    assert all(n.network.mtu == 1450 for n in h1.networks)  # resolved for VXLAN


def test_an_agents_share_realises_what_the_lab_would_for_its_host() -> None:
    topo = load_topology(EXAMPLES / "managed.yaml")
    where = dataclasses.replace(lab_placement(topo.name), endhosts=False)
    for name, hc in host_configs(topo).items():
        lab = realize(topo, dataclasses.replace(where, only_host=name))
        agent = realize_host(hc, where)
        host_ns = where.host_ns(name)
        assert agent.links == {k: v for k, v in lab.links.items() if k[0] != host_ns or
                               not k[1].startswith(("ul-", "mgmt"))}  # fmt: skip
        assert agent.fdb == lab.fdb
        assert agent.addresses == {a for a in lab.addresses if a.ns != host_ns}
        assert agent.routes == {r for r in lab.routes if r.ns != host_ns}


def test_an_agent_on_its_own_host_realises_there() -> None:
    hc = host(net(), routers=[router("r1", {"network": "n1", "ipv4": "10.10.0.1/24"}, index=3)])
    where = Placement("agent", "vnet-agent-", own_host="h1")
    state = realize_host(hc, where)
    assert set(state.links) == {(None, "vb10"), (None, "vr3i0")}  # no VTEP: no VXLAN
    assert state.links[(None, "vr3i0")].mtu == 1500
    assert set(state.namespaces) == {"vnet-agent-r1"}
    assert realize_host(hc, dataclasses.replace(where, networks=False)).links.keys() == {
        (None, "vr3i0")
    }
    assert realize_host(HostConfig(host="h1"), where) == KernelState()


# -- checks ----------------------------------------------------------------------


def test_the_vxlan_mtu_limit_comes_from_the_vtep_and_the_underlay_mtu() -> None:
    big = net(mtu=1460)
    assert check_host(host(big)) == []  # no VTEP: nothing is tunnelled
    assert max_host_mtu(host(vtep="10.200.0.1")) == 1450
    assert max_host_mtu(host(vtep="fd00:200::1")) == 1430
    [problem] = check_host(host(big, vtep="10.200.0.1"))
    assert problem.loc == ("networks", 0, "mtu") and "at most 1450" in problem.message
    assert check_host(host(big, vtep="10.200.0.1", underlay_mtu=9000)) == []


def test_problems_keep_the_locations_of_the_lab_checks() -> None:
    hc = host(
        net("n1", 10),
        net("n2", 10),
        routers=[router("r1", {"network": "n1", "ipv4": "10.10.0.1/24"},
                        {"network": "n1", "ipv4": "10.99.0.1/24"})],
    )  # fmt: skip
    locs = {p.loc for p in check_host(hc)}
    assert ("networks", 1, "vni") in locs
    assert ("routers", 0, "interfaces", 1, "network") in locs
    assert ("routers", 0, "interfaces", 1, "ipv4") in locs


# -- the YANG tree ---------------------------------------------------------------


def tree_of(hc: HostConfig) -> dict[str, Any]:
    return codec.tree(hc)


def test_the_tree_and_the_host_config_round_trip() -> None:
    hc = host(
        net(bandwidth="10M", mtu=1400),
        net("n2", 11),
        routers=[
            router(
                "r1",
                {"network": "n1", "ipv4": "10.10.0.1/24"},
                {"network": "n2", "ipv4": "10.11.0.1/24"},
                index=1,
                routes=[{"to": "10.9.0.0/16", "via": "10.11.0.2"}],
            )
        ],
    )
    tree = tree_of(hc)
    assert tree["vnet-router:virtual-networks"]["network"][0]["bandwidth"] == "10000000"
    back = codec.host_config(tree, "h1")
    assert back.networks == hc.networks
    assert back.routers[0].routes == hc.routers[0].routes
    assert [i.ipv4 for i in back.routers[0].interfaces] == [
        i.ipv4 for i in hc.routers[0].interfaces
    ]


def test_a_problem_maps_to_its_element_in_the_tree() -> None:
    hc = host(net(), routers=[router("r1", {"network": "n1", "ipv4": "10.10.0.1/24"}, index=1)])
    tree = tree_of(hc)
    path = codec.error_path(("routers", 0, "interfaces", 0, "ipv4"), tree)
    assert path == "/vr:routers/vr:router[vr:name='r1']/vr:interface[vr:name='eth0']/vr:ipv4"
    assert codec.error_path(("routers", 0, "admin_state"), tree).endswith("/vr:admin-state")
    assert codec.error_path(("networks", 0, "ipv4"), tree) == (
        "/vr:virtual-networks/vr:network[vr:name='n1']/vr:ipv4-prefix"
    )


def test_a_field_that_does_not_parse_is_reported_at_the_tree_level() -> None:
    tree = tree_of(host(net()))
    tree["vnet-router:virtual-networks"]["network"][0]["vni"] = 0
    with pytest.raises(TopologyError) as info:
        codec.host_config(tree, "h1")
    [problem] = info.value.problems
    assert problem.loc == ("networks", 0, "vni")
    assert codec.error_path(problem.loc, tree).endswith("[vr:name='n1']/vr:vni")
