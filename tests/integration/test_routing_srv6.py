"""OSPF and an SRv6 connection in the same VRs: the connection's pieces keep working while
FRRouting (zebra) runs in r1, r2 and r3 and routes the rest of the tenant's traffic.

examples/managed-connections.yaml with OSPF on the VRs' core interfaces: udp/5060 from pc1
to pc2 takes the tunnel r1 -> r2 -> r3 (its shaper on r1 counts it), pings take the
routes OSPF learned.
"""

from __future__ import annotations

import pytest
from ncclient import manager

from vnet.lab import lab as labmod
from vnet.lab.access import agent_endpoint
from vnet.lab.probes import fping
from vnet.substrate import Kernel
from vnet.tools import frr
from vnet.tools.wait import wait_until

from .agent_support import netconf_connect
from .conftest import Labs, require_tools
from .test_qos import send_udp, udp_received
from .test_routing import POLL, N, full_neighbors, routing_state

OSPF = "ospf: {hello: 1, dead: 4}"
CLASS = 0x760001  # the connection's shaper (id 1) on r1, toward core (eth1)


def with_ospf(text: str) -> str:
    for vr in ("r1", "r2", "r3"):
        text = text.replace(
            f"  - name: {vr}\n", f"  - name: {vr}\n    routing: {{protocol: ospf}}\n"
        )
    for itf in (
        'network: core, ipv4: 10.41.3.1/24, ipv6: "fd00:41:3::1/64"',
        'network: core, ipv4: 10.41.3.2/24, ipv6: "fd00:41:3::2/64"',
        'network: core2, ipv4: 10.41.4.2/24, ipv6: "fd00:41:4::2/64"',
        'network: core2, ipv4: 10.41.4.3/24, ipv6: "fd00:41:4::3/64"',
    ):
        assert itf in text, itf
        text = text.replace(itf, f"{itf}, {OSPF}")
    return text


@pytest.fixture(scope="module")
def lab(module_labs: Labs) -> str:
    require_tools("fping")
    if reason := frr.installed():
        pytest.skip(reason)
    name, path = module_labs.file("managed-connections.yaml", with_ospf)
    labmod.up(path)
    return name


def connect(lab: str, host: str) -> manager.Manager:
    ep = agent_endpoint(lab, host)
    return netconf_connect(ep.namespace, ep.address, ep.port, ep.user, ep.password)


def shaper_packets(lab: str) -> int:
    ns = f"vnet-{lab}-r1"
    with Kernel() as k:
        for c in k.classes(ns, k.index(ns, "eth1")):
            if c["handle"] == CLASS:
                return int((c.get_nested("TCA_STATS2", "TCA_STATS_BASIC") or {})["packets"])
    return 0


def test_a_connection_piece_and_ospf_coexist(lab: str) -> None:
    with connect(lab, "h1") as h1:

        def converged() -> bool:
            r1 = routing_state(h1, "r1")
            learned = {
                r.findtext("vr:destination", namespaces=N) for r in r1.iterfind("vr:route", N)
            }
            full = {rid for _, rid in full_neighbors(r1)}
            return full == {"10.41.3.2"} and "10.41.4.0/24" in learned  # core2, from r2

        wait_until(converged, 60, "r1 Full with r2 and core2 learned", interval=POLL)
    pc1, pc2 = f"vnet-{lab}-pc1", f"vnet-{lab}-pc2"
    wait_until(lambda: fping(pc1, "10.41.2.2", count=1).received == 1, 60, "pc1 reaches pc2")
    before, arrived = shaper_packets(lab), udp_received(pc2)
    send_udp(pc1, "10.41.2.2", 5060, 200)
    wait_until(lambda: udp_received(pc2) - arrived >= 200, 10, "200 datagrams at pc2")
    assert shaper_packets(lab) - before == 200, "the connection's 5-tuple took its tunnel"
