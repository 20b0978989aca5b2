"""Controller admission (issue 12, part 5): link cost, network view, path selection."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from vnet.controller.admission.admit import Policy, Request, admit, modify
from vnet.controller.admission.cost import Encapsulation, link_cost
from vnet.controller.admission.ledger import Demand, Ledger
from vnet.controller.admission.network import Arc, NetworkError, NetworkView
from vnet.controller.admission.paths import Rejection
from vnet.model import build_topology

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "em-testbed.yaml"
MBIT = 1_000_000
FIELDS = ("name", "a", "b", "capacity")


def view(*links: tuple[str, str, str, int], hosts: str = "abcd") -> NetworkView:
    return NetworkView.from_data(
        {"hosts": list(hosts), "links": [dict(zip(FIELDS, x, strict=True)) for x in links]}
    )


# -- cost ------------------------------------------------------------------------


def test_cost_srv6_over_vxlan4_worked_numbers() -> None:
    # 10 Mbit/s of 1000-byte packets, 2 segments: SRv6 40 + 8 + 2 * 16 = 80, VXLAN/IPv4 50
    # -> 10e6 * 1130 / 1000 = 11.3 Mbit/s, * 1.05 = 11.865 Mbit/s
    assert link_cost(10 * MBIT, 1000, Encapsulation(), 2) == 11_865_000


def test_cost_srv6_only_vxlan6_and_margins() -> None:
    # 1 segment, no VXLAN: 40 + 8 + 16 = 64 bytes on 1500 -> 1564/1500, no margin
    assert link_cost(1_500_000, 1500, Encapsulation(vxlan=None), 1, Fraction(0)) == 1_564_000
    # VXLAN over IPv6 only (70 bytes) on 100-byte packets: 1.7 x, then 10 %
    assert (
        link_cost(MBIT, 100, Encapsulation(srv6=False, vxlan="ipv6"), 3, Fraction(1, 10))
        == 1_870_000
    )


def test_cost_rounds_up_and_rejects_bad_input() -> None:
    # 1 bit/s of 1-byte packets with 1 segment, VXLAN/IPv4: 1 * 115 * 1.05 = 120.75 -> 121
    assert link_cost(1, 1, Encapsulation(), 1) == 121
    for bad in ({"bandwidth": 0}, {"packet_size": 0}, {"margin": Fraction(-1, 100)}):
        args = {"bandwidth": MBIT, "packet_size": 1500, "margin": Fraction(5, 100)} | bad
        with pytest.raises(ValueError):
            link_cost(args["bandwidth"], args["packet_size"], Encapsulation(), 1, args["margin"])


# -- network view ----------------------------------------------------------------


def test_view_from_topology_keeps_management_share() -> None:
    topo = build_topology(YAML(typ="safe").load(EXAMPLE.read_text()))
    v = NetworkView.from_topology(topo)
    assert v.hosts == ("esxi", "mininet")
    # 1 Gbit/s, 1 % kept for management and routing (vnet.model.qos.management_rate)
    assert v.links["esxi-mininet"].capacity == 990_000_000


@pytest.mark.parametrize(
    ("links", "message"),
    [
        ([("x", "a", "z", 1)], "unknown host 'z'"),
        ([("x", "a", "a", 1)], "to itself"),
        ([("x", "a", "b", 0)], "not positive"),
        ([("x", "a", "b", 1), ("x", "b", "c", 1)], "appears twice"),
    ],
)
def test_view_rejects_bad_data(links, message) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(NetworkError, match=message):
        view(*links)


# -- path selection --------------------------------------------------------------

# a - b - d and a - c - d (two 2-hop paths), a - d directly (small)
DIAMOND = (
    ("ab", "a", "b", 100 * MBIT),
    ("bd", "b", "d", 100 * MBIT),
    ("ac", "a", "c", 50 * MBIT),
    ("cd", "c", "d", 50 * MBIT),
    ("ad", "a", "d", 10 * MBIT),
)
POLICY = Policy(margin=Fraction(0), encapsulation=Encapsulation(srv6=False, vxlan=None))


def ask(ledger: Ledger, name: str, bandwidth: int, src: str = "a", dst: str = "d", path=None):  # type: ignore[no-untyped-def]
    return admit(ledger, Request(name, Demand(src, dst, bandwidth), path), POLICY)


def test_fewest_hops_first_then_widest() -> None:
    ledger = Ledger(view(*DIAMOND))
    assert ask(ledger, "small", 5 * MBIT).reservation.path == ("a", "d")
    # the direct link has 5 left: 2 hops, and of those the wider (via b)
    assert ask(ledger, "big", 30 * MBIT).reservation.path == ("a", "b", "d")
    assert ask(ledger, "big2", 60 * MBIT).reservation.path == ("a", "b", "d")  # 70 left via b
    assert ask(ledger, "big3", 40 * MBIT).reservation.path == ("a", "c", "d")  # 10 via b, 50 via c
    assert ledger.residual(Arc("ab", True)) == 10 * MBIT
    assert ledger.residual(Arc("ab", False)) == 100 * MBIT  # the other direction is untouched


def test_the_views_hop_counts_are_the_graphs_whatever_the_room() -> None:
    net = view(("ab", "a", "b", MBIT), ("bc", "b", "c", MBIT), hosts="abcd")
    assert [net.hops("a", x) for x in "abcd"] == [0, 1, 2, None]  # d has no link
    assert net.hops("c", "a") == 2  # each link carries both directions
    assert ask(Ledger(net), "fills", MBIT, "a", "c").reservation.path == ("a", "b", "c")
    assert net.hops("a", "c") == 2


def test_cost_grows_with_hops_in_the_search() -> None:
    # with SRv6 the 2-hop path costs more per link than the direct one
    policy = Policy(margin=Fraction(0), encapsulation=Encapsulation(vxlan=None))
    ledger = Ledger(view(("ab", "a", "b", 10 * MBIT), ("bd", "b", "d", 10 * MBIT), hosts="abd"))
    demand = Demand("a", "d", 9 * MBIT, 1000)  # 2 segments: 9 * 1.08 = 9.72 Mbit/s per link
    got = admit(ledger, Request("c", demand), policy)
    assert got.reservation.cost == 9_720_000
    refused = admit(ledger, Request("c2", Demand("a", "d", MBIT, 1000)), policy)
    assert isinstance(refused, Rejection) and refused.reason == "no-capacity"


def test_rejection_names_link_and_shortfall() -> None:
    ledger = Ledger(view(("ab", "a", "b", 10 * MBIT), ("bd", "b", "d", 4 * MBIT), hosts="abd"))
    got = ask(ledger, "c", 6 * MBIT)
    assert isinstance(got, Rejection) and got.reason == "no-capacity"
    assert [(s.link, s.forward, s.missing) for s in got.shortfalls] == [("bd", True, 2 * MBIT)]
    assert "bd (b -> d) lacks 2000000 bit/s" in got.message
    assert ledger.reservations() == []


def test_explicit_path_checked() -> None:
    ledger = Ledger(view(*DIAMOND))
    assert ask(ledger, "x", 45 * MBIT, path=("a", "c", "d")).reservation.path == ("a", "c", "d")
    short = ask(ledger, "y", 10 * MBIT, path=("a", "c", "d"))
    assert isinstance(short, Rejection) and short.field == "path"
    assert {(s.link, s.missing) for s in short.shortfalls} == {("ac", 5 * MBIT), ("cd", 5 * MBIT)}
    gap = ask(ledger, "y", MBIT, path=("a", "b", "c", "d"))
    assert isinstance(gap, Rejection) and gap.reason == "not-adjacent" and "'b'" in gap.message
    wrong_end = ask(ledger, "y", MBIT, path=("a", "b"))
    assert isinstance(wrong_end, Rejection) and wrong_end.reason == "bad-request"
    unknown = ask(ledger, "y", MBIT, path=("a", "q", "d"))
    assert isinstance(unknown, Rejection) and unknown.reason == "unknown-host"
    assert [r.connection for r in ledger.reservations()] == ["x"]


def test_bad_requests_change_nothing() -> None:
    ledger = Ledger(view(*DIAMOND))
    assert ask(ledger, "x", 0).field == "bandwidth"
    assert ask(ledger, "x", MBIT, src="q").field == "source"
    assert ask(ledger, "x", 101 * MBIT).reason == "no-capacity"  # above any link
    assert ask(ledger, "x", MBIT, src="a", dst="a").reservation.path == ("a",)  # one host
    nowhere = admit(Ledger(view(hosts="ab")), Request("n", Demand("a", "b", 1)), POLICY)
    assert isinstance(nowhere, Rejection) and nowhere.reason == "no-route"


def test_modify_counts_old_and_new_until_the_move_ends() -> None:
    ledger = Ledger(view(*DIAMOND))
    ask(ledger, "x", 40 * MBIT, path=("a", "c", "d"))
    moved = modify(ledger, Request("x", Demand("a", "d", 40 * MBIT), ("a", "b", "d")), POLICY)
    assert moved.reservation.generation == 2
    assert ledger.used(Arc("ac", True)) == 40 * MBIT and ledger.used(Arc("ab", True)) == 40 * MBIT
    ledger.finish_move("x")
    assert ledger.used(Arc("ac", True)) == 0 and ledger.used(Arc("ab", True)) == 40 * MBIT
    # a move onto the same links counts twice while both exist (make-before-break)
    grow = modify(ledger, Request("x", Demand("a", "d", 70 * MBIT), ("a", "b", "d")), POLICY)
    assert isinstance(grow, Rejection)
    gone = modify(ledger, Request("nope", Demand("a", "d", MBIT)), POLICY)
    assert isinstance(gone, Rejection) and gone.reason == "unknown-connection"


def test_parallel_links_and_malformed_data() -> None:
    ledger = Ledger(view(("ab1", "a", "b", 10 * MBIT), ("ab2", "a", "b", 20 * MBIT), hosts="ab"))
    assert ask(ledger, "x", 15 * MBIT, "a", "b").reservation.arcs == (Arc("ab2", True),)
    assert ask(ledger, "y", 8 * MBIT, "a", "b", path=("a", "b")).reservation.arcs == (
        Arc("ab1", True),  # 10 left on ab1, 5 on ab2: the explicit hop takes the roomier
    )
    with pytest.raises(NetworkError, match="malformed"):
        NetworkView.from_data({"hosts": ["a"], "links": [{"name": "x", "a": "a", "b": "a"}]})
    with pytest.raises(NetworkError, match="malformed"):
        NetworkView.from_data(
            {"hosts": ["a", "b"], "links": [dict(zip(FIELDS, "xab?", strict=True))]}
        )
