"""A VR's resources in the YANG model: one mapping both ways, YANG-valid, exact error paths
(issue 14, part 2)."""

from __future__ import annotations

import pytest

from vnet.model.errors import TopologyError
from vnet.model.resources import Resources
from vnet.model.topology import Interface, VirtualRouter
from vnet.model.yang import host as codec
from vnet.model.yang import schema
from vnet.model.yang.module import NETWORKS, ROUTERS

NETWORKS_TREE = {NETWORKS: {"network": [{"name": "n1", "tenant": "a", "vni": 10}]}}


def _vr(res: Resources | None) -> VirtualRouter:
    return VirtualRouter(
        name="r1",
        host="agent",
        index=3,
        interfaces=[Interface(network="n1", name="eth0")],
        resources=res,
    )


@pytest.mark.parametrize(
    "res", [Resources(cpu=0.5, cpuset="0-1", memory="512MiB"), Resources(), None]
)
def test_a_router_entry_carries_its_resources_both_ways(res: Resources | None) -> None:
    entry = codec.router_entry(_vr(res))
    assert codec.router_of(entry) == _vr(res)
    schema.validate({**NETWORKS_TREE, ROUTERS: {"router": [entry]}})
    if res is not None and res.cpu is not None:
        assert entry["resources"] == {"cpu": "0.50", "cpuset": "0-1", "memory": "536870912"}


def test_state_leaves_are_state_only() -> None:
    entry = codec.router_entry(_vr(Resources(cpu=1)))
    entry["resources"] |= {"cpu-time": "10", "memory-used": "4096"}
    schema.validate({**NETWORKS_TREE, ROUTERS: {"router": [entry]}}, with_state=True)
    with pytest.raises(Exception, match="cpu-time"):
        schema.validate({**NETWORKS_TREE, ROUTERS: {"router": [entry]}})


@pytest.mark.parametrize(
    ("resources", "leaf", "why"),
    [
        ({"cpuset": "1,0"}, "cpuset", "ascend"),
        ({"cpu": "0.005"}, "cpu", "greater than or equal to 0.01"),
        ({"memory": "1024"}, "memory", "greater than or equal to 4194304"),
    ],
)
def test_a_bad_value_is_reported_at_its_leaf(resources: dict, leaf: str, why: str) -> None:
    entry = {**codec.router_entry(_vr(None)), "resources": resources}
    tree = {**NETWORKS_TREE, ROUTERS: {"router": [entry]}}
    with pytest.raises(TopologyError) as info:
        codec.host_config(tree, "agent")
    (problem,) = info.value.problems
    assert codec.error_path(problem.loc, tree) == (
        f"/vr:routers/vr:router[vr:name='r1']/vr:resources/vr:{leaf}"
    )
    assert why in problem.message, problem.message
