"""vnet bench netconf without a kernel: the data it sends and how it reads the results."""

from __future__ import annotations

from lxml import etree

from vnet.bench.client import NS
from vnet.bench.netconf.config import Batch, Plan, network_count, networks_config
from vnet.bench.netconf.goals import goal_notes
from vnet.bench.results import BenchResult


def test_every_vr_gets_unique_addresses_and_no_bridge_overflows() -> None:
    nets = network_count(1000)
    assert nets == 4
    doc = etree.fromstring(Batch("vr", 1000, 1, nets).create())
    routers = doc.findall(f".//{{{NS}}}router")
    assert len(routers) == 1000
    seen: set[str] = set()
    per_network: dict[str, int] = {}
    for r in routers:
        assert r.get("{urn:ietf:params:xml:ns:netconf:base:1.0}operation") == "create"
        for itf in r.findall(f"{{{NS}}}interface"):
            addr = itf.findtext(f"{{{NS}}}ipv4")
            net = itf.findtext(f"{{{NS}}}network")
            assert addr not in seen
            seen.add(addr)
            per_network[net] = per_network.get(net, 0) + 1
            octets = [int(o) for o in addr.split("/")[0].split(".")]
            assert octets[1] == int(net[1:]) and 1 <= octets[3] <= 254
    assert max(per_network.values()) <= 500  # a bridge takes at most 1024 ports
    assert len(etree.fromstring(networks_config(nets)).findall(f".//{{{NS}}}network")) == nets


def test_delete_names_only_the_keys() -> None:
    doc = etree.fromstring(Batch("bk", 3, 50001, 2).delete(1, 3))
    routers = doc.findall(f".//{{{NS}}}router")
    assert [r.findtext(f"{{{NS}}}name") for r in routers] == ["bk2", "bk3"]
    assert all(len(r) == 1 for r in routers)


def test_goal_notes_say_met_or_not() -> None:
    plan = Plan(ops=3, bulk=100, vrs=1000, chunk=100, repeat=2, netconfd=False)
    result = BenchResult(name="netconf")
    result.add("vr_op_latency", "vnet", [10, 12, 30], x="create")
    result.add("vr_op_latency", "vnet", [4, 5, 6], x="retrieve")
    result.add("get_config", "vnet", [150, 170], x=1000)
    result.add("memory", "vnet", [90.5], x="VmHWM (peak of the run)")
    notes = goal_notes(result, plan)
    assert "goal create one VR <= 20 ms: 12 ms (p50), met" in notes
    assert "goal retrieve one VR <= 3 ms: 5 ms (p50), NOT met" in notes
    assert any(n.startswith("goal remove one VR") and "no samples" in n for n in notes)
    assert any("get-config of 1000 VRs" in n and n.endswith("met") for n in notes)
    assert any("VmHWM" in n and "NOT met" in n for n in notes)
