"""A bridge takes at most 1023 ports: more members of one network on one host are refused
up front, at the first member past the limit (issue 17, finding 6)."""

from __future__ import annotations

from typing import Any

import pytest

from vnet.agent.config import AgentConfig, User
from vnet.agent.datastore.validation import host_config
from vnet.model import TopologyError, build_topology
from vnet.model.bridge_ports import BRIDGE_MAX_PORTS
from vnet.model.check import check_host
from vnet.model.host import HostConfig, NetworkOnHost
from vnet.model.topology import VirtualNetwork, VirtualRouter
from vnet.model.yang import host as codec
from vnet.model.yang.errors import RpcError

NET = VirtualNetwork(name="big", tenant="t", vni=7, ipv4="10.0.0.0/16")


def vr(i: int, host: str = "h1") -> dict[str, Any]:
    addr = f"10.0.{(i + 1) // 256}.{(i + 1) % 256}/16"
    return {"name": f"r{i}", "host": host, "interfaces": [{"network": "big", "ipv4": addr}]}


def lab(vrs: int, hosts: int = 1) -> dict[str, Any]:
    return {
        "name": "ports",
        "hosts": [{"name": f"h{h + 1}"} for h in range(hosts)],
        "links": [{"a": "h1", "b": f"h{h + 1}"} for h in range(1, hosts)],
        "tenants": [{"name": "t"}],
        "networks": [NET.model_dump(mode="json", exclude_none=True)],
        "routers": [vr(i) for i in range(vrs)],
    }


def problems_of(data: dict[str, Any]) -> list[tuple[Any, str]]:
    with pytest.raises(TopologyError) as err:
        build_topology(data)
    return [(p.loc, p.message) for p in err.value.problems]


def test_a_full_bridge_is_accepted() -> None:
    topo = build_topology(lab(BRIDGE_MAX_PORTS))
    on_big = [r for r in topo.routers if any(i.network == "big" for i in r.interfaces)]
    assert len(on_big) == BRIDGE_MAX_PORTS


def test_one_port_more_is_refused_at_that_router() -> None:
    [(loc, message)] = problems_of(lab(1100))
    assert loc == ("routers", BRIDGE_MAX_PORTS, "interfaces", 0, "network")
    assert message == (
        "network 'big' would need more than 1023 ports on its bridge on host 'h1', "
        "the kernel's limit for one bridge; spread its members over more hosts or networks"
    )


def test_the_vxlan_device_takes_a_port_when_other_hosts_carry_the_network() -> None:
    data = lab(BRIDGE_MAX_PORTS, hosts=2)
    data["routers"][-1]["host"] = "h2"  # h1: 1022 VRs + VXLAN = 1023; h2: one VR
    build_topology(data)
    data["routers"].append(vr(BRIDGE_MAX_PORTS))
    [(loc, message)] = problems_of(data)
    assert loc == ("routers", BRIDGE_MAX_PORTS, "interfaces", 0, "network")
    assert "(one of them its VXLAN device)" in message


def test_end_hosts_count_too() -> None:
    data = lab(BRIDGE_MAX_PORTS)
    data["endhosts"] = [{"name": "e1", "host": "h1", "network": "big", "ipv4": "10.0.200.1/16"}]
    [(loc, _)] = problems_of(data)
    assert loc == ("endhosts", 0, "network")


def agent_host(vrs: int) -> HostConfig:
    routers = [VirtualRouter.model_validate(vr(i)) for i in range(vrs)]
    carried = NetworkOnHost(network=NET, remote_vteps=["192.0.2.2"])
    return HostConfig(host="h1", vtep="192.0.2.1", networks=[carried], routers=routers)


def test_an_agent_refuses_the_router_past_the_limit_with_its_path() -> None:
    assert check_host(agent_host(BRIDGE_MAX_PORTS - 1)) == []
    tree = codec.tree(agent_host(1100))
    config = AgentConfig(host="h1", vtep="192.0.2.1", users=[User(name="u", password="p")])
    with pytest.raises(RpcError) as err:
        host_config(config, tree)
    assert err.value.path == (
        "/vr:routers/vr:router[vr:name='r1022']/vr:interface[vr:name='eth0']/vr:network"
    )
    assert "more than 1023 ports" in str(err.value.message)
