"""Underlay classes and SRv6 connection pieces configured over NETCONF on a real agent
(issue 11, part 1): they land in the kernel (checked with ip and tc), re-applying plans
nothing, a bad piece changes nothing, a bandwidth or path change is applied in place,
and the counters come back in <get>."""

from __future__ import annotations

import copy
import json
import subprocess
from typing import Any

import pytest
from lxml import etree
from ncclient.operations.rpc import RPCError

from tests.metrics_support import parse
from vnet.client import Endpoint, NetconfClient
from vnet.lab.sandbox import ADDRESS
from vnet.model.yang import host as codec
from vnet.model.yang.encode import tree_to_xml
from vnet.substrate import Kernel, Placement, converge, nsfs, realize_host

from ..unit.test_host_guarantees import P, base_tree
from .agent_support import AgentUnderTest, running_agent, start_agent_process, stop_agent
from .test_restconf import JSON_T, curl

NS = {"vr": "urn:vnet:yang:vnet-router"}


def sh(*argv: str) -> str:
    return subprocess.run(argv, check=True, capture_output=True, text=True).stdout


def config(tree: dict[str, Any]) -> str:
    return f"<config>{tree_to_xml(tree)}</config>"


def full_tree() -> dict[str, Any]:
    tree = base_tree()
    # r1 reaches r2's locator over the core network (a static route, as a lab adds)
    tree[f"{P}routers"]["router"][0]["route"] = [
        {"destination": "fc00:1:2::/48", "next-hop": "fd02::2"}
    ]
    return tree


def kernel_view(a: AgentUnderTest) -> str:
    """What ip and tc show of the pieces: rules, the encap table, SIDs and the classes."""
    r1, r2 = a.node_ns("r1"), a.node_ns("r2")
    return "\n".join(
        [
            sh("ip", "-n", r1, "rule", "show"),
            sh("ip", "-n", r1, "route", "show", "table", "65537"),
            sh("ip", "-n", r2, "-6", "route", "show"),
            sh("tc", "-n", a.namespace, "class", "show", "dev", "ul-h2"),
            sh("tc", "-n", a.namespace, "filter", "show", "dev", "ul-h2"),
            sh("tc", "-n", r1, "class", "show", "dev", "eth1"),
        ]
    )


def running_host_config(a: AgentUnderTest) -> Any:
    ep = Endpoint(ADDRESS, a.netconf_port, a.user, a.password, a.namespace)
    with NetconfClient(ep) as client:
        return codec.host_config(client.get_config(), "h1")


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Any:
    with running_agent(tmp_path_factory.mktemp("guarantees"), frontends="netconf,restconf") as a:
        # the host's underlay interface: a veth in its namespace (it goes with it)
        sh("ip", "-n", a.namespace, "link", "add", "ul-h2", "type", "veth", "peer", "ul-peer")
        sh("ip", "-n", a.namespace, "link", "set", "ul-h2", "up")
        with a.netconf() as m:
            m.edit_config(target="running", config=config(full_tree()))
        yield a


def test_the_pieces_are_in_the_kernel(agent: AgentUnderTest) -> None:
    view = kernel_view(agent)
    assert "1001:" in view and "lookup 65537" in view and "dport 5201" in view, view
    assert "encap seg6 mode encap segs 1 [ fc00:1:2:1::4 ]" in view, view
    assert "fc00:1:2:1::4 " in view and "End.DX4 nh4 10.3.0.1" in view, view
    # the underlay tree "75:" with n2's class (minor = VNI 12) and the connection's shaper
    assert "class htb 75:c parent 75:1" in view and "rate 300Mbit ceil 500Mbit" in view, view
    assert "class htb 76:1" in view and "rate 20Mbit" in view, view


def test_re_applying_plans_nothing(agent: AgentUnderTest) -> None:
    hc = running_host_config(agent)
    where = Placement(scope=agent.scope, prefix=agent.prefix, own_host="h1", endhosts=False)
    kernel = Kernel()
    try:
        with nsfs.entered(agent.namespace):
            ops = converge(kernel, realize_host(hc, where), where, own_namespace=True, dry_run=True)
    finally:
        kernel.close()
    assert ops == [], [op.describe() for op in ops]


def test_a_bad_piece_is_rejected_at_its_path_and_changes_nothing(agent: AgentUnderTest) -> None:
    tree = full_tree()
    tree[f"{P}srv6"]["connection"][0]["egress"][0]["sid"] = "fc00:1:1:1::4"
    before = kernel_view(agent)
    with agent.netconf() as m:
        running = m.get_config("running").data_xml
        with pytest.raises(RPCError) as info:
            m.edit_config(target="running", config=config(tree))
        assert m.get_config("running").data_xml == running
    assert info.value.tag == "invalid-value"
    assert (
        info.value.path
        == "/vr:srv6/vr:connection[vr:name='c1']/vr:egress[vr:sid='fc00:1:1:1::4']/vr:sid"
    )
    assert "outside the locators of router 'r2'" in info.value.message
    assert kernel_view(agent) == before


def test_bandwidth_and_path_changes_are_applied_in_place(agent: AgentUnderTest) -> None:
    tree = full_tree()
    ingress = tree[f"{P}srv6"]["connection"][0]["ingress"][0]
    ingress["bandwidth"] = "40000000"
    moved = copy.deepcopy(tree)
    # a second egress SID on r2 and the ingress switched to it: a path change
    moved[f"{P}srv6"]["connection"][0]["egress"].append(
        {"sid": "fc00:1:2:1::5", "router": "r2", "network": "n3", "next-hop": "10.3.0.1"}
    )
    moved[f"{P}srv6"]["connection"][0]["ingress"][0]["segment"] = ["fc00:1:2:1::5"]
    with agent.netconf() as m:
        m.edit_config(target="running", config=config(tree))
        assert "rate 40Mbit" in sh("tc", "-n", agent.node_ns("r1"), "class", "show", "dev", "eth1")
        m.edit_config(target="running", config=config(moved), default_operation="replace")
    view = kernel_view(agent)
    assert "segs 1 [ fc00:1:2:1::5 ]" in view, view
    assert "fc00:1:2:1::5 " in view and "fc00:1:2:1::4 " in view, view
    with agent.netconf() as m:
        m.edit_config(
            target="running", config=config(full_tree()), default_operation="replace"
        )  # and back
    view = kernel_view(agent)
    assert "segs 1 [ fc00:1:2:1::4 ]" in view and "fc00:1:2:1::5 " not in view, view


def test_a_path_change_on_the_same_interface_keeps_both_filters_then_the_new(
    agent: AgentUnderTest,
) -> None:
    """Make before break as a controller does it, three commits: the new egress SID (another
    /112, so the shaper's u32 filter on r1's eth1 matches something new), then the ingress
    switched to it (old and new filter on eth1 in one plan: the kernel must number them
    apart), then the old SID gone. The commits trust what the last one left in the kernel;
    a filter numbered by the planner from that (which holds no kernel numbers) took the old
    generation's number, and the kernel refused it (ENOSPC)."""
    tree = full_tree()
    new_egress = {"sid": "fc00:1:2:2::4", "router": "r2", "network": "n3", "next-hop": "10.3.0.1"}
    make = copy.deepcopy(tree)
    make[f"{P}srv6"]["connection"][0]["egress"].append(new_egress)
    switch = copy.deepcopy(make)
    switch[f"{P}srv6"]["connection"][0]["ingress"][0]["segment"] = [new_egress["sid"]]
    final = copy.deepcopy(switch)
    final[f"{P}srv6"]["connection"][0]["egress"] = [new_egress]
    r1 = agent.node_ns("r1")
    try:
        with agent.netconf() as m:
            m.edit_config(target="running", config=config(tree), default_operation="replace")
            for step in (make, switch, final):
                m.edit_config(target="running", config=config(step), default_operation="replace")
        filters = sh("tc", "-n", r1, "filter", "show", "dev", "eth1")
        assert "fc000001" in filters and filters.count("flowid 76:1") == 1, filters
        routes = sh("ip", "-n", r1, "route", "show", "table", "65537")
        assert "segs 1 [ fc00:1:2:2::4 ]" in routes, routes
    finally:
        with agent.netconf() as m:  # and back, the same way
            m.edit_config(target="running", config=config(conn_back(final, tree)))
            m.edit_config(target="running", config=config(tree), default_operation="replace")
    assert "segs 1 [ fc00:1:2:1::4 ]" in sh("ip", "-n", r1, "route", "show", "table", "65537")


def conn_back(now: dict[str, Any], old: dict[str, Any]) -> dict[str, Any]:
    """`now` with the old egress back next to the new one and the ingress on the old path."""
    out = copy.deepcopy(now)
    c, was = out[f"{P}srv6"]["connection"][0], old[f"{P}srv6"]["connection"][0]
    c["egress"] = [*was["egress"], *c["egress"]]
    c["ingress"] = copy.deepcopy(was["ingress"])
    return out


def test_counters_come_back_in_get(agent: AgentUnderTest) -> None:
    with agent.netconf() as m:
        reply = m.get(filter=("subtree", '<srv6 xmlns="urn:vnet:yang:vnet-router"/>'))
        underlay = m.get(filter=("subtree", '<underlay xmlns="urn:vnet:yang:vnet-router"/>'))
    data = etree.fromstring(reply.data_xml.encode())
    stats = data.find(".//vr:connection/vr:ingress/vr:statistics", NS)
    assert stats is not None, reply.data_xml
    assert {c.tag.split("}")[1] for c in stats} == {"bytes", "packets", "drops"}
    udata = etree.fromstring(underlay.data_xml.encode())
    assert udata.find(".//vr:class/vr:statistics/vr:packets", NS) is not None, underlay.data_xml
    assert udata.find(".//vr:reserved-statistics/vr:bytes", NS) is not None, underlay.data_xml


def test_restconf_reads_and_refuses_like_netconf(agent: AgentUnderTest) -> None:
    """curl: the connection with its shaper's counters; a bad piece is a 400 at its path."""
    got = curl(agent, "GET", "/restconf/data/vnet-router:srv6")
    assert got.status == 200, got
    conn = json.loads(got.body)["vnet-router:srv6"]["connection"][0]
    assert conn["name"] == "c1" and "packets" in conn["ingress"][0]["statistics"], got.body
    classes = curl(agent, "GET", "/restconf/data/vnet-router:underlay?content=config")
    assert json.loads(classes.body)["vnet-router:underlay"]["interface"][0]["name"] == "ul-h2"
    config_before = curl(agent, "GET", "/restconf/data/vnet-router:srv6?content=config").body
    bad = full_tree()[f"{P}srv6"]
    bad["connection"][0]["ingress"][0]["lan-network"] = "n3"
    refused = curl(
        agent,
        "PUT",
        "/restconf/data/vnet-router:srv6",
        json.dumps({f"{P}srv6": bad}),
        "application/yang-data+json",
    )
    assert refused.status == 400, refused
    path = json.loads(refused.body)["ietf-restconf:errors"]["error"][0]["error-path"]
    assert path == (  # RFC 8040's JSON form of the same path
        "/vnet-router:srv6/connection[name='c1']"
        "/ingress[router='r1'][destination='10.3.0.1']/lan-network"
    )
    after = curl(agent, "GET", "/restconf/data/vnet-router:srv6?content=config").body
    assert after == config_before, "a refused PUT changed the configuration"


def test_a_change_the_kernel_refuses_is_rolled_back(agent: AgentUnderTest) -> None:
    """A new VR and a class tree on an interface whose root qdisc is someone else's: the
    VR's namespace and links are made first, the kernel refuses the tree, everything is
    undone, and the other's qdisc is left as it was."""
    sh("ip", "-n", agent.namespace, "link", "add", "ul-busy", "type", "veth", "peer", "ul-busy-p")
    try:
        sh(
            "tc",
            "-n",
            agent.namespace,
            "qdisc",
            "add",
            "dev",
            "ul-busy",
            "root",
            "handle",
            "5:",
            "pfifo",
        )
        foreign = sh("tc", "-n", agent.namespace, "qdisc", "show", "dev", "ul-busy")
        tree = full_tree()
        tree[f"{P}routers"]["router"].append(
            {"name": "r3", "interface": [{"name": "eth0", "network": "n1", "ipv4": "10.1.0.3/24"}]}
        )
        tree[f"{P}underlay"]["interface"].append(
            {"name": "ul-busy", "rate": "100000000", "reserved": "1000000"}
        )
        before = kernel_view(agent)
        with agent.netconf() as m:
            running = m.get_config("running").data_xml
            with pytest.raises(RPCError) as info:
                m.edit_config(target="running", config=config(tree))
            assert m.get_config("running").data_xml == running
        assert info.value.tag == "operation-failed", info.value.message
        assert "rolled back" in info.value.message and "ul-busy" in info.value.message
        assert not nsfs.exists(agent.node_ns("r3")), "the new VR's namespace outlived the rollback"
        assert kernel_view(agent) == before
        assert sh("tc", "-n", agent.namespace, "qdisc", "show", "dev", "ul-busy") == foreign
    finally:
        sh("ip", "-n", agent.namespace, "link", "del", "ul-busy")


def test_an_underlay_interface_the_host_lacks_is_the_clients_error(agent: AgentUnderTest) -> None:
    """Named before anything changes, at its path: invalid-value over NETCONF (edit and
    validate), 400 over RESTCONF; the kernel and the configuration stay as they were."""
    tree = full_tree()
    tree[f"{P}underlay"]["interface"].append(
        {"name": "nosuch0", "rate": "100000000", "reserved": "1000000"}
    )
    path = "/vr:underlay/vr:interface[vr:name='nosuch0']/vr:name"
    before = kernel_view(agent)
    with agent.netconf() as m:
        running = m.get_config("running").data_xml
        for rpc in (
            lambda: m.edit_config(target="running", config=config(tree)),
            lambda: m.validate(source=etree.fromstring(config(tree))),
        ):
            with pytest.raises(RPCError) as info:
                rpc()
            assert info.value.tag == "invalid-value", info.value.message
            assert info.value.path == path and "nosuch0" in info.value.message
        assert m.get_config("running").data_xml == running
    entry = {
        "vnet-router:interface": [{"name": "nosuch0", "rate": "100000000", "reserved": "1000000"}]
    }
    answer = curl(agent, "POST", "/restconf/data/vnet-router:underlay", json.dumps(entry), JSON_T)
    assert answer.status == 400, answer
    assert "nosuch0" in answer.body and "invalid-value" in answer.body, answer.body
    assert kernel_view(agent) == before


def test_a_restarted_agent_observes_its_pieces_and_changes_nothing(agent: AgentUnderTest) -> None:
    """On start the agent reads the kernel (its "75:" trees, SIDs, rules, shapers) and
    plans against what it finds: the persisted configuration is already there."""
    before = kernel_view(agent)
    stop_agent(agent)
    assert kernel_view(agent) == before, "stopping the agent touched the kernel"
    start_agent_process(agent, "netconf,restconf")
    assert kernel_view(agent) == before
    test_re_applying_plans_nothing(agent)


def test_metrics_show_the_class_and_connection_counters(agent: AgentUnderTest) -> None:
    """/metrics (Prometheus's parser) holds every class's and every connection piece's bytes,
    packets and drops, between what RESTCONF said just before and just after."""
    first = _guarantee_counters(agent)
    scraped = curl(agent, "GET", "/metrics")
    assert scraped.status == 200, scraped
    samples = parse(scraped.body)
    last = _guarantee_counters(agent)
    assert first, "no counters in RESTCONF"
    for (metric, labels), low in first.items():
        key = (metric, frozenset(labels))
        assert key in samples, (key, sorted(k for k in samples if "class" in k[0]))
        assert low <= samples[key] <= last[(metric, labels)], (key, low, samples[key])


def _guarantee_counters(agent: AgentUnderTest) -> dict[tuple[str, tuple[Any, ...]], int]:
    """(metric, labels) -> value of every class and connection counter RESTCONF shows."""
    underlay = json.loads(curl(agent, "GET", "/restconf/data/vnet-router:underlay").body)
    srv6 = json.loads(curl(agent, "GET", "/restconf/data/vnet-router:srv6").body)
    out = {}
    for itf in underlay["vnet-router:underlay"]["interface"]:
        found = [(itf.get("reserved-statistics"), ("reserved", ""))]
        found.append((itf.get("best-effort-statistics"), ("best-effort", "")))
        found += [(c.get("statistics"), ("network", c["network"])) for c in itf["class"]]
        for stats, (kind, network) in found:
            labels = (("interface", itf["name"]), ("class", kind), ("network", network))
            for counter, text in (stats or {}).items():
                out[(f"vnet_agent_class_{counter}_total", labels)] = int(text)
    for conn in srv6["vnet-router:srv6"]["connection"]:
        for ing in conn["ingress"]:
            labels = (
                ("connection", str(conn["id"])),
                ("router", ing["router"]),
                ("network", ing["network"]),
            )
            for counter, text in ing.get("statistics", {}).items():
                out[(f"vnet_agent_connection_{counter}_total", labels)] = int(text)
    return out
