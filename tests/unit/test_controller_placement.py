"""Where the controller places a VR whose request names no host (controller.placement):
the host whose links have the most free capacity, then the fewest VRs, then file order.
And the guard of controller.service.inventory: a new object moves no VR's locator."""

from __future__ import annotations

import pytest

from vnet.controller.inventory import LinkInfo
from vnet.controller.placement import choose_host, free_capacity
from vnet.controller.service.inventory import renumbered
from vnet.model import build_topology
from vnet.model.topology import Topology

G, M = 10**9, 10**6
TRIANGLE = {
    "h1-h2": LinkInfo("h1-h2", "h1", "h2", G, G),
    "h2-h3": LinkInfo("h2-h3", "h2", "h3", G, G),
    "h1-h3": LinkInfo("h1-h3", "h1", "h3", 100 * M, 100 * M),
}
HOSTS = ["h1", "h2", "h3"]


def test_free_capacity_sums_both_directions_of_the_hosts_links() -> None:
    held = {("h1-h2", True): 300 * M, ("h1-h3", False): 40 * M}
    assert free_capacity("h1", TRIANGLE, held) == (G - 300 * M) + G + 100 * M + 60 * M
    assert free_capacity("h2", TRIANGLE, held) == (G - 300 * M) + G + 2 * G


def test_the_host_with_the_most_free_capacity_wins_over_fewer_routers() -> None:
    # h2 has the most VRs but two 1 Gbit/s links
    assert choose_host(HOSTS, TRIANGLE, {}, {"h2": 5}) == "h2"


def test_reservations_move_the_choice() -> None:
    held = {("h2-h3", True): 900 * M, ("h2-h3", False): 900 * M, ("h1-h2", True): 500 * M}
    # h1: 0.5 + 1 + 0.2 = 1.7 G; h2: 0.5 + 1 + 0.2 = 1.7 G; h3: 0.2 + 0.2 = 0.4 G -> a tie
    assert free_capacity("h1", TRIANGLE, held) == free_capacity("h2", TRIANGLE, held)
    assert choose_host(HOSTS, TRIANGLE, held, {"h1": 2, "h2": 1}) == "h2"
    assert choose_host(HOSTS, TRIANGLE, held, {"h1": 1, "h2": 1}) == "h1"  # file order


def test_an_overbooked_direction_counts_as_zero_not_negative() -> None:
    held = {("h1-h3", True): 200 * M}
    assert free_capacity("h3", {"h1-h3": TRIANGLE["h1-h3"]}, held) == 100 * M


def test_only_candidates_are_chosen_and_none_is_an_error() -> None:
    # h1 and h3 both have 1.1 Gbit/s each way: h3 for its fewer VRs; h2 is no candidate
    assert choose_host(["h1", "h3"], TRIANGLE, {}, {"h1": 1}) == "h3"
    assert choose_host(["h4"], TRIANGLE, {}, {}) == "h4"  # a host without links: still placed
    with pytest.raises(ValueError):
        choose_host([], TRIANGLE, {}, {})


# -- new objects must not move an existing VR's SRv6 locator --------------------------------
def _topology(networks: list[dict], routers: list[dict]) -> Topology:  # type: ignore[type-arg]
    return build_topology(
        {"name": "t", "hosts": [{"name": "h1"}], "networks": networks, "routers": routers}
    )


NB = {"name": "nb", "tenant": "b", "vni": 2, "ipv6": "fd00:2::/64"}
RB = {"name": "rb", "host": "h1", "interfaces": [{"network": "nb", "ipv6": "fd00:2::1/64"}]}


def test_a_new_undeclared_tenant_sorting_first_would_renumber_and_is_named() -> None:
    before = _topology([NB], [RB])
    na = {"name": "na", "tenant": "a", "vni": 1, "ipv6": "fd00:1::/64"}
    assert renumbered(before, _topology([NB, na], [RB])) == ["rb"]
    nc = {"name": "nc", "tenant": "c", "vni": 3, "ipv6": "fd00:3::/64"}
    assert renumbered(before, _topology([NB, nc], [RB])) == []  # sorts after b


def test_an_appended_vr_moves_no_locator() -> None:
    before = _topology([NB], [RB])
    rb2 = {"name": "rb2", "host": "h1", "interfaces": [{"network": "nb", "ipv6": "fd00:2::2/64"}]}
    assert renumbered(before, _topology([NB], [RB, rb2])) == []
