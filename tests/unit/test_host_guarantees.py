"""Underlay classes and SRv6 connection pieces in a host's configuration (issue 11, part 1):
the codec round trip, and each bad input rejected at its exact path with nothing changed."""

from __future__ import annotations

import asyncio
import copy
from pathlib import Path
from typing import Any

import pytest

from tests.datastore_support import commit_as
from vnet.agent.datastore import Datastore
from vnet.model.agent_config import AgentConfig, User
from vnet.model.yang import host as codec
from vnet.model.yang.errors import RpcError
from vnet.model.yang.schema import validate

P = "vnet-router:"


def base_tree() -> dict[str, Any]:
    """Two VRs: r1 is a connection's ingress (lan n1, core n2), r2 its egress (core n2, lan n3)."""
    nets = [
        {"name": "n1", "tenant": "a", "vni": 11, "ipv4-prefix": "10.1.0.0/24"},
        {"name": "n2", "tenant": "a", "vni": 12, "ipv6-prefix": "fd02::/64"},
        {"name": "n3", "tenant": "a", "vni": 13, "ipv4-prefix": "10.3.0.0/24"},
    ]
    r1 = {
        "name": "r1",
        "interface": [
            {"name": "eth0", "network": "n1", "ipv4": "10.1.0.254/24"},
            {"name": "eth1", "network": "n2", "ipv6": "fd02::1/64"},
        ],
    }
    r2 = {
        "name": "r2",
        "interface": [
            {"name": "eth0", "network": "n2", "ipv6": "fd02::2/64"},
            {"name": "eth1", "network": "n3", "ipv4": "10.3.0.254/24"},
        ],
    }
    ingress = {
        "router": "r1",
        "destination": "10.3.0.1",
        "source": "10.1.0.1",
        "protocol": "udp",
        "destination-port": 5201,
        "lan-network": "n1",
        "network": "n2",
        "segment": ["fc00:1:2:1::4"],
        "bandwidth": "20000000",
    }
    egress = {"sid": "fc00:1:2:1::4", "router": "r2", "network": "n3", "next-hop": "10.3.0.1"}
    return {
        f"{P}virtual-networks": {"network": nets},
        f"{P}routers": {"router": [r1, r2]},
        f"{P}underlay": {
            "interface": [
                {
                    "name": "ul-h2",
                    "rate": "1000000000",
                    "reserved": "10000000",
                    "class": [{"network": "n2", "rate": "300000000", "ceil": "500000000"}],
                }
            ]
        },
        f"{P}srv6": {
            "locator": [
                {"prefix": "fc00:1:1::/48", "router": "r1"},
                {"prefix": "fc00:1:2::/48", "router": "r2"},
            ],
            "connection": [{"name": "c1", "id": 1, "ingress": [ingress], "egress": [egress]}],
        },
    }


def test_the_codec_round_trips_classes_locators_and_pieces() -> None:
    tree = base_tree()
    hc = codec.host_config(tree, "h1")
    assert hc.underlay[0].classes[0].ceil == 500_000_000
    conn = hc.srv6.connection("c1")
    assert conn.ingress[0].protocol == "udp" and str(conn.egress[0].sid) == "fc00:1:2:1::4"
    assert conn.egress[0].action == "End.DX4"
    again = codec.tree(hc)
    for key in ("underlay", "srv6"):
        assert again[P + key] == tree[P + key], key
    validate(again).free()  # the codec's output satisfies the YANG module


@pytest.fixture
def store(tmp_path: Path) -> Datastore:
    config = AgentConfig(state_dir=tmp_path, users=[User(name="admin", password="x")])
    ds = Datastore(config, apply_to_kernel=False)
    asyncio.run(ds.start())
    asyncio.run(commit_as(ds, base_tree()))
    return ds


def _rejected(ds: Datastore, tree: dict[str, Any]) -> RpcError:
    before = copy.deepcopy(ds.running)
    with pytest.raises(RpcError) as info:
        asyncio.run(commit_as(ds, tree))
    assert ds.running == before, "a rejected commit changed the running configuration"
    assert ds.file.load() == before, "a rejected commit changed the persisted configuration"
    return info.value


def _conn(tree: dict[str, Any]) -> dict[str, Any]:
    return tree[f"{P}srv6"]["connection"][0]


C1 = "/vr:srv6/vr:connection[vr:name='c1']"
ING = f"{C1}/vr:ingress[vr:router='r1'][vr:destination='10.3.0.1']"


def test_a_piece_on_a_router_this_host_does_not_have(store: Datastore) -> None:
    tree = base_tree()
    _conn(tree)["egress"][0]["router"] = "r9"
    err = _rejected(store, tree)
    assert err.path == f"{C1}/vr:egress[vr:sid='fc00:1:2:1::4']/vr:router"
    assert "this host has no router 'r9'" in err.message


def test_a_piece_in_a_network_its_router_is_not_in(store: Datastore) -> None:
    tree = base_tree()
    _conn(tree)["ingress"][0]["lan-network"] = "n3"
    err = _rejected(store, tree)
    assert err.path == f"{ING}/vr:lan-network"
    assert "router 'r1' has no interface in 'n3'" in err.message


def test_a_sid_outside_the_routers_locator(store: Datastore) -> None:
    tree = base_tree()
    _conn(tree)["egress"][0]["sid"] = "fc00:1:1:1::4"  # r1's locator, not r2's
    err = _rejected(store, tree)
    assert err.path == f"{C1}/vr:egress[vr:sid='fc00:1:1:1::4']/vr:sid"
    assert "outside the locators of router 'r2' (fc00:1:2::/48)" in err.message


def test_overlapping_steering_of_the_same_5_tuple(store: Datastore) -> None:
    tree = base_tree()
    other = copy.deepcopy(_conn(tree))
    other |= {"name": "c2", "id": 2, "egress": []}
    del other["ingress"][0]["protocol"]  # any protocol: covers c1's UDP flow
    del other["ingress"][0]["destination-port"]
    tree[f"{P}srv6"]["connection"].append(other)
    err = _rejected(store, tree)
    c2 = "/vr:srv6/vr:connection[vr:name='c2']"
    assert err.path == f"{c2}/vr:ingress[vr:router='r1'][vr:destination='10.3.0.1']/vr:destination"
    assert "steers the same 5-tuple as connection 'c1'" in err.message


def test_a_different_port_is_no_overlap(store: Datastore) -> None:
    tree = base_tree()
    other = copy.deepcopy(_conn(tree))
    other |= {"name": "c2", "id": 2, "egress": []}
    other["ingress"][0]["destination-port"] = 5202
    tree[f"{P}srv6"]["connection"].append(other)
    asyncio.run(commit_as(store, tree))
    assert len(store.running[f"{P}srv6"]["connection"]) == 2


def test_an_oversubscribed_underlay_interface(store: Datastore) -> None:
    tree = base_tree()
    classes = tree[f"{P}underlay"]["interface"][0]["class"]
    classes.append({"network": "n1", "rate": "700000000"})
    err = _rejected(store, tree)
    assert (
        err.path == "/vr:underlay/vr:interface[vr:name='ul-h2']/vr:class[vr:network='n1']/vr:rate"
    )
    assert "oversubscribes the interface" in err.message and "1gbit" in err.message


def test_a_class_for_a_network_this_host_does_not_carry(store: Datastore) -> None:
    tree = base_tree()
    tree[f"{P}underlay"]["interface"][0]["class"][0]["network"] = "n7"
    err = _rejected(store, tree)
    assert (
        err.path
        == "/vr:underlay/vr:interface[vr:name='ul-h2']/vr:class[vr:network='n7']/vr:network"
    )
    assert "carries no network 'n7'" in err.message


def test_a_ceil_above_the_interface_rate(store: Datastore) -> None:
    tree = base_tree()
    tree[f"{P}underlay"]["interface"][0]["class"][0]["ceil"] = "2000000000"
    err = _rejected(store, tree)
    assert err.path.endswith("/vr:class[vr:network='n2']/vr:ceil")


def test_a_malformed_segment(store: Datastore) -> None:
    tree = base_tree()
    _conn(tree)["ingress"][0]["segment"] = ["fc00:1:2:1::4", "not-an-address"]
    err = _rejected(store, tree)
    assert err.path == f"{ING}/vr:segment"


def test_a_locator_of_a_router_this_host_does_not_have(store: Datastore) -> None:
    tree = base_tree()
    tree[f"{P}srv6"]["locator"].append({"prefix": "fc00:1:9::/48", "router": "r9"})
    err = _rejected(store, tree)
    assert err.path == "/vr:srv6/vr:locator[vr:prefix='fc00:1:9::/48']/vr:router"


# -- a lab's guarantees as each host's agent gets them (part 4) --------------------


def test_a_labs_agents_get_the_same_tunnels_and_classes_the_lab_makes() -> None:
    from vnet.model import build_topology
    from vnet.model.check import check_host
    from vnet.model.host import host_configs
    from vnet.model.host_pieces import with_guarantees
    from vnet.substrate import Placement, lab_placement, realize, realize_host
    from vnet.substrate.placement import underlay_port_name

    from .test_qos_model import VIDEO, with_connections

    data = with_connections({**VIDEO, "bidirectional": True})
    data["networks"][2]["bandwidth"] = "100mbit"  # a class on the underlay link
    topo = build_topology(data)
    lab = realize(topo, lab_placement(topo.name))
    sids, steers, rules, classes = {}, {}, set(), {}
    for host, hc in host_configs(topo).items():
        hc = with_guarantees(topo, hc, underlay_port_name)
        assert check_host(hc) == [], host
        validate(codec.tree(hc)).free()
        where = Placement(scope=host, prefix=f"vnet-{topo.name}-", own_host=host, endhosts=False)
        state = realize_host(hc, where)
        sids |= state.sids
        steers |= state.steers
        rules |= state.rules
        classes |= {(ns, dev, cid & 0xFFFF): c for (ns, dev, cid), c in state.tc_classes.items()}
    assert sids == lab.sids and steers == lab.steers and rules == lab.rules
    lab_classes = {(ns, dev, cid & 0xFFFF): c for (ns, dev, cid), c in lab.tc_classes.items()}
    # the same rates per class: on router ports as they are, on the underlay link ends the
    # agent's own tree ("75:" in its namespace) instead of the lab's ("1:" in the host's)
    assert {k: c.rate for k, c in classes.items() if k[0] is not None} == {
        k: c.rate for k, c in lab_classes.items() if not k[0].endswith(("esxi", "mininet"))
    }
    agent_links = sorted((k[1], k[2], c.rate, c.ceil) for k, c in classes.items() if k[0] is None)
    lab_links = sorted(
        (k[1], k[2], c.rate, c.ceil)
        for k, c in lab_classes.items()
        if k[0].endswith(("esxi", "mininet"))
    )
    assert agent_links == lab_links and len(agent_links) == 6


def test_the_managed_connections_example_hands_each_agent_valid_pieces() -> None:
    from vnet.lab.topology_file import load_topology
    from vnet.model.check import check_host
    from vnet.model.host import host_configs
    from vnet.model.host_pieces import with_guarantees
    from vnet.substrate.placement import underlay_port_name

    example = Path(__file__).resolve().parents[2] / "examples" / "managed-connections.yaml"
    topo = load_topology(example)
    roles = {}
    for host, hc in host_configs(topo).items():
        hc = with_guarantees(topo, hc, underlay_port_name)
        assert check_host(hc) == [], host
        validate(codec.tree(hc)).free()
        (conn,) = hc.srv6.connections
        roles[host] = (len(conn.ingress), len(conn.transit), len(conn.egress))
        assert [c.network for c in hc.underlay[0].classes] == ["core"]
    assert roles == {"h1": (2, 0, 2), "h2": (0, 1, 0)}  # IPv4 and IPv6 ends on h1


def test_lab_up_keeps_connections_made_through_the_agent_and_drops_the_files_old_ones() -> None:
    from vnet.lab.agents import merge_file_connections

    stored = base_tree()
    made = copy.deepcopy(_conn(stored)) | {"name": "agent-made", "id": 7}
    made["ingress"][0]["destination-port"] = 5999
    stored[f"{P}srv6"]["connection"].append(made)
    from_file = base_tree()
    del from_file[f"{P}srv6"]["connection"]  # the file no longer has c1
    merged = merge_file_connections(stored, from_file, {"c1"})
    assert [c["name"] for c in merged[f"{P}srv6"]["connection"]] == ["agent-made"]
    gone = copy.deepcopy(from_file)
    gone[f"{P}routers"]["router"].pop()  # r2, which the agent-made connection leaves at
    gone[f"{P}srv6"]["locator"].pop()
    assert "connection" not in merge_file_connections(stored, gone, {"c1"}).get(f"{P}srv6", {})


def test_a_change_of_a_vrs_connection_pieces_is_a_modify_event_of_that_vr() -> None:
    from vnet.agent.datastore.events import diff_events

    old, new = base_tree(), base_tree()
    _conn(new)["ingress"][0]["bandwidth"] = "40000000"
    assert [(e.router, e.operation) for e in diff_events(old, new)] == [("r1", "modify")]
    _conn(new)["egress"][0]["next-hop"] = "10.3.0.2"
    assert {e.router for e in diff_events(old, new)} == {"r1", "r2"}
    assert diff_events(old, base_tree()) == []


def test_a_commit_parses_only_the_connections_it_changes(store: Datastore) -> None:
    """An unchanged connection keeps the model object running has (it is not parsed
    again); a changed one is parsed from its new entry; either way the HostConfig is the
    one a fresh parse of the tree gives."""
    memo = store.validator.connections
    first = memo.parsed["c1"][1]
    tree = base_tree()
    c2 = copy.deepcopy(_conn(tree)) | {"name": "c2", "id": 2, "egress": []}
    c2["ingress"][0]["destination-port"] = 5202
    tree[f"{P}srv6"]["connection"].append(c2)
    asyncio.run(commit_as(store, tree))
    assert memo.parsed["c1"][1] is first and set(memo.parsed) == {"c1", "c2"}
    tree = copy.deepcopy(tree)
    _conn(tree)["ingress"][0]["bandwidth"] = "30000000"
    asyncio.run(commit_as(store, tree))
    again = memo.parsed["c1"][1]
    assert again is not first and again.ingress[0].bandwidth == 30_000_000
    fresh = codec.host_config(store.running, store.config.host, store.config.vtep)
    assert [memo.parsed[c.name][1] for c in fresh.srv6.connections] == fresh.srv6.connections
