"""Per-host pieces of an admitted connection (issue 12, part 5/6)."""

from __future__ import annotations

from fractions import Fraction
from ipaddress import IPv4Address, IPv6Address, IPv6Network

import pytest

from vnet.controller.admission.admit import Policy, Request, admit
from vnet.controller.admission.cost import Encapsulation
from vnet.controller.admission.ledger import Demand, Ledger
from vnet.controller.admission.network import NetworkView
from vnet.controller.admission.pieces import Ends, Hop, host_pieces

VRS = {  # host -> (router, locator, network towards the next hop)
    "h1": ("r1", IPv6Network("fc00:1:1::/48"), "core1"),
    "h2": ("r2", IPv6Network("fc00:1:2::/48"), "core2"),
    "h3": ("r3", IPv6Network("fc00:1:3::/48"), "core3"),
}
ENDS = Ends(
    source=IPv4Address("10.1.0.10"),
    destination=IPv4Address("10.3.0.10"),
    lan_network="lan1",
    egress_network="lan3",
    protocol="udp",
    destination_port=5201,
)


def admitted_path() -> tuple[str, ...]:
    """h1 -> h3 has no direct link: the controller's path crosses h2."""
    view = NetworkView.from_data(
        {
            "hosts": ["h1", "h2", "h3"],
            "links": [
                {"name": "l12", "a": "h1", "b": "h2", "capacity": 10**9},
                {"name": "l23", "a": "h2", "b": "h3", "capacity": 10**9},
            ],
        }
    )
    policy = Policy(Fraction(5, 100), Encapsulation())
    got = admit(Ledger(view), Request("video", Demand("h1", "h3", 20_000_000)), policy)
    return got.reservation.path


def hops_of(path: tuple[str, ...]) -> list[Hop]:
    return [Hop(h, *VRS[h]) for h in path]


def test_three_hosts_get_ingress_transit_egress() -> None:
    path = admitted_path()
    assert path == ("h1", "h2", "h3")
    pieces = host_pieces("video", 7, 20_000_000, hops_of(path), ENDS)
    assert set(pieces) == {"h1", "h2", "h3"}
    [ingress] = pieces["h1"].ingress
    assert (ingress.router, ingress.lan_network, ingress.network) == ("r1", "lan1", "core1")
    # End of r2 for connection 7, then End.DX4 of r3: <locator>::<id>:<function>
    assert ingress.segments == [IPv6Address("fc00:1:2::7:0"), IPv6Address("fc00:1:3::7:4")]
    assert (ingress.protocol, ingress.destination_port, ingress.bandwidth) == (
        "udp",
        5201,
        20_000_000,
    )
    assert pieces["h1"].transit == [] and pieces["h1"].egress == []
    [transit] = pieces["h2"].transit
    assert (transit.router, transit.sid, transit.network) == (
        "r2",
        IPv6Address("fc00:1:2::7:0"),
        "core2",
    )
    assert pieces["h2"].ingress == [] and pieces["h2"].egress == []
    [egress] = pieces["h3"].egress
    assert (egress.router, egress.sid, egress.action) == (
        "r3",
        IPv6Address("fc00:1:3::7:4"),
        "End.DX4",
    )
    assert (egress.network, egress.next_hop) == ("lan3", IPv4Address("10.3.0.10"))
    assert {p.name for p in pieces.values()} == {"video"} and {p.id for p in pieces.values()} == {7}


def test_ipv6_two_hosts_uses_dx6_and_no_transit() -> None:
    ends = Ends(IPv6Address("fd00:1::10"), IPv6Address("fd00:3::10"), "lan1", "lan3")
    pieces = host_pieces("v6", 9, 1_000_000, hops_of(("h1", "h3")), ends)
    assert pieces["h1"].ingress[0].segments == [IPv6Address("fc00:1:3::9:6")]
    assert pieces["h3"].egress[0].action == "End.DX6"
    assert all(p.transit == [] for p in pieces.values())


def test_bad_paths_and_ends_are_refused() -> None:
    with pytest.raises(ValueError, match="two or more"):
        host_pieces("x", 1, 1, hops_of(("h1",)), ENDS)
    with pytest.raises(ValueError, match="visits a host twice"):
        host_pieces("x", 1, 1, hops_of(("h1", "h2", "h1")), ENDS)
    mixed = Ends(IPv4Address("10.0.0.1"), IPv6Address("fd00::1"), "lan1", "lan3")
    with pytest.raises(ValueError, match="families differ"):
        host_pieces("x", 1, 1, hops_of(("h1", "h2")), mixed)
    with pytest.raises(ValueError, match="id"):
        host_pieces("x", 5000, 1, hops_of(("h1", "h2")), ENDS)  # beyond CONNECTION_ID_MAX
