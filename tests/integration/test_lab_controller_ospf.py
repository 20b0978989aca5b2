"""A guaranteed connection in a tenant whose VRs route with OSPF (issue 25): when the link
under it is cut, the controller moves it onto the surviving path, OSPF moves the tenant's
other traffic, and iperf3 (whose control connection is that other traffic) runs through the
connection at its rate again, in the connection's shaper class on the new path.

The lab is examples/ospf-triangle.yaml with a `controller:` section (`vnet lab up`, real
agents, the real controller, FRRouting in the VRs): a12, a23 and a13 are each a VXLAN between
two hosts, so cutting h1-h3 takes a13 away and r1 reaches lan3 through r2. The controller's
SIDs need no OSPF: every segment of a path is one hop away, and the lab gives each VR a
static route to its direct neighbours' locators (`vnet.model.srv6.locator_routes`).
In examples/controller.yaml (one core network over every host, static routes) iperf3 cannot
run after such a cut: test_lab_controller_failures.py sends the connection's datagrams only.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from ncclient import manager

from vnet.lab.shaping import ClassRef, run_flow
from vnet.tools import frr
from vnet.tools.wait import wait_until

from .conftest import Labs, require_tools, vnet
from .controller_service_support import class_packets, shaper_class
from .test_lab_controller_failures import SEEN, get, shows
from .test_routing import (
    CONVERGE,
    PC3,
    POLL,
    connect,
    reaches,
    route_via,
    routing_state,
)

RATE = 20e6  # the connection's bandwidth, bit/s
PORT = 5201
# r1's interfaces in file order: a12 eth0, a13 eth1, lan1 eth2; a connection's shaper sits on
# the one towards its path's second VR
R1_TO_R2 = "eth0"


def with_controller(text: str) -> str:
    """The triangle with a controller; the LANs' MTU leaves room for a connection's SRv6
    header (40 bytes + 16 per segment) inside the VXLAN MTU (1450), as in controller.yaml."""
    text = text.replace(
        "management:\n  user: admin\n",
        "management:\n  user: admin\ncontroller:\n  port: 8480\n  margin: 5%\n",
    )
    for k in ("1", "3"):
        lan = f'ipv6: "fd00:51:{k}::/64"}}'
        assert lan in text, lan
        text = text.replace(lan, f'ipv6: "fd00:51:{k}::/64", mtu: 1300}}')
    assert "controller:" in text
    return text


@pytest.fixture(scope="module")
def lab(module_labs: Labs) -> str:
    require_tools("iperf3", "fping", "curl")
    if reason := frr.installed():
        pytest.skip(reason)
    name, path = module_labs.file("ospf-triangle.yaml", with_controller)
    vnet("lab", "up", str(path), timeout=180)
    return name


def ospf_routes_lan3_via(h1: manager.Manager, lab: str, next_hop: str) -> bool:
    """r1 has lan3's route from OSPF through `next_hop` (r3 on a13, r2 on a12), and pc1
    reaches pc3 (the way back works too)."""
    state = routing_state(h1, "r1")
    return route_via(state, "10.51.3.0/24") == [next_hop] and reaches(lab)


def ospf_settled(h1: manager.Manager, h2: manager.Manager, lab: str) -> bool:
    """The direct route, and r2 routes to both LANs over its own links, so the LSAs of the
    way through r2 exist (cut 1.5 s after r2 and r3 became Full, r1 routed through r2 only
    7.5 to 8.7 s after the cut, not within BFD's tenths)."""
    r2 = routing_state(h2, "r2")
    through_r2 = route_via(r2, "10.51.3.0/24") == ["10.51.23.3"]
    through_r2 = through_r2 and route_via(r2, "10.51.1.0/24") == ["10.51.12.1"]
    return through_r2 and ospf_routes_lan3_via(h1, lab, "10.51.13.3")


def piece_on_h1(lab: str) -> dict[str, Any]:
    """The connection's IPv4 ingress piece as h1's agent holds it (its own NETCONF read)."""
    tree = json.loads(vnet("conn", "list", "--lab", lab, "--host", "h1", "--json").stdout)
    [piece] = tree["vnet-router:srv6"]["connection"]
    ingress = next(i for i in piece["ingress"] if i["destination"] == PC3)
    return {"id": piece["id"], **ingress}


def test_a_connection_on_a_cut_link_carries_iperf3_at_its_rate_on_the_surviving_path(
    lab: str,
) -> None:
    """voice (20 Mbit/s of udp/5201, pc1 -> pc3 over h1 -> h3) when h1-h3 is cut: the
    controller moves it onto h1 -> h2 -> h3, OSPF routes pc1 <-> pc3 through r2, and iperf3
    offering 30 Mbit/s gets the connection's rate at layer 2 in its shaper on r1 towards r2,
    whose packets the controller counts too."""
    with connect(lab, "h1") as h1, connect(lab, "h2") as h2:
        wait_until(lambda: ospf_settled(h1, h2, lab), CONVERGE, "OSPF settled, direct", POLL)
        voice = ("voice", "pc1", "pc3", "--bandwidth", "20mbit", "--protocol", "udp")
        made = vnet("conn", "request", *voice, "--dport", str(PORT), "--json", "--lab", lab)
        assert json.loads(made.stdout)["connection"]["path"] == ["h1", "h3"]
        url = "/tenants/acme/connections/voice"
        try:
            vnet("lab", "link", "down", "h1-h3", "--lab", lab)
            cut = time.monotonic()
            try:
                wait_until(lambda: get(lab, url)["path"] == ["h1", "h2", "h3"], SEEN, "moved")
                moved = time.monotonic() - cut
                wait_until(
                    lambda: ospf_routes_lan3_via(h1, lab, "10.51.12.2"),
                    CONVERGE,
                    "OSPF through r2",
                    POLL,
                )
                rerouted = time.monotonic() - cut
                print(f"voice moved {moved:.1f} s, OSPF through r2 {rerouted:.1f} s after the cut")
                _carries_its_rate_through_r2(lab, url)
            finally:
                vnet("lab", "link", "up", "h1-h3", "--lab", lab)
            wait_until(lambda: shows(lab, "link", "h1-h3", "up"), SEEN, "h1-h3 up again")
        finally:
            vnet("conn", "release", "voice", "--lab", lab)


def _carries_its_rate_through_r2(lab: str, url: str) -> None:
    piece = piece_on_h1(lab)
    assert piece["network"] == "a12", piece  # the ingress piece now leads to r2
    shaper = ClassRef(f"vnet-{lab}-r1", R1_TO_R2, shaper_class(piece["id"]))
    flow = run_flow(
        f"vnet-{lab}-pc1",
        f"vnet-{lab}-pc3",
        PC3,
        seconds=3,
        protocol="udp",
        rate_bps=1.5 * RATE,
        length=1200,
        port=PORT,
        shaper=shaper,
        warmup=1.0,
    )
    achieved = (flow.l2_bps or 0) / RATE
    print(f"voice on h1 -> h2 -> h3: {achieved:.2%} of its rate at layer 2 ({flow})")
    assert abs(achieved - 1) <= 0.05, f"{achieved:.2%} of 20 Mbit/s at layer 2 ({flow})"
    # every datagram pc3 got left r1 through that class (it was made with the move, and
    # nothing else sends udp/5201)
    received = (flow.packets or 0) - (flow.lost_packets or 0)
    assert 0 < received <= class_packets(shaper), (received, class_packets(shaper), flow)
    # the controller reads the same class back from h1's agent (once its queue has drained)
    wait_until(lambda: _counted_on_r1(lab, url) == class_packets(shaper), SEEN, "counters")


def _counted_on_r1(lab: str, url: str) -> int:
    [counted] = get(lab, url + "/counters")["shapers"]  # one shaper for both IP families
    assert (counted["host"], counted["router"]) == ("h1", "r1"), counted
    return int(counted["packets"])
