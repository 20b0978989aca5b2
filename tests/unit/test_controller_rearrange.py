"""Rearrangement (issue 12, part 5): make room by moving connections make-before-break."""

from __future__ import annotations

from fractions import Fraction

import pytest

from vnet.controller.admission.admit import Admitted, Policy, Request, admit
from vnet.controller.admission.cost import Encapsulation
from vnet.controller.admission.ledger import Demand, Ledger, OverAdmission
from vnet.controller.admission.network import Arc, NetworkView
from vnet.controller.admission.paths import Rejection
from vnet.controller.admission.rearrange import Limits, apply, rearrange

POLICY = Policy(margin=Fraction(0), encapsulation=Encapsulation(srv6=False, vxlan=None))
KEYS = ("name", "a", "b", "capacity")


def ledger_of(*links: tuple[str, str, str, int]) -> Ledger:
    hosts = sorted({h for _, a, b, _ in links for h in (a, b)})
    data = {"hosts": hosts, "links": [dict(zip(KEYS, x, strict=True)) for x in links]}
    return Ledger(NetworkView.from_data(data))


def hold(ledger: Ledger, name: str, src: str, dst: str, bw: int, path=None) -> None:  # type: ignore[no-untyped-def]
    assert isinstance(admit(ledger, Request(name, Demand(src, dst, bw), path), POLICY), Admitted)


# a square a - b - d - c - a: the new connection a -> d has two 2-hop paths
SQUARE = (("ab", "a", "b", 10), ("bd", "b", "d", 10), ("ac", "a", "c", 10), ("cd", "c", "d", 10))


def test_fits_only_after_a_move() -> None:
    ledger = ledger_of(*SQUARE)
    hold(ledger, "x", "a", "b", 5)  # on a - b
    hold(ledger, "y", "c", "d", 5)  # on c - d
    request = Request("new", Demand("a", "d", 8))
    assert isinstance(admit(ledger.copy(), request, POLICY), Rejection)  # no path fits as is
    before = ledger.reservations()
    plan = rearrange(ledger, request, POLICY)
    assert isinstance(plan, Admitted)
    assert ledger.reservations() == before  # deciding changes nothing
    [move] = plan.moves
    assert move.connection == "x" and move.old.path == ("a", "b")
    assert move.new.path == ("a", "c", "d", "b") and move.new.generation == 2
    assert plan.reservation.path == ("a", "b", "d")
    apply(ledger, plan)
    assert {(r.connection, r.generation) for r in ledger.reservations()} == {
        ("x", 2),
        ("y", 1),
        ("new", 1),
    }
    assert ledger.used(Arc("ab", True)) == 8 and ledger.used(Arc("cd", True)) == 10


def test_no_move_helps() -> None:
    ledger = ledger_of(("ab", "a", "b", 10), ("bd", "b", "d", 10))  # a line: nowhere to go
    hold(ledger, "x", "a", "b", 5)
    got = rearrange(ledger, Request("new", Demand("a", "d", 8)), POLICY)
    assert isinstance(got, Rejection) and got.reason == "no-capacity"
    assert [(s.link, s.missing) for s in got.shortfalls] == [("ab", 3)]
    assert "no move of up to 2 connections helps (1 combinations tried)" in got.message
    assert [r.connection for r in ledger.reservations()] == ["x"]


def test_two_moves_when_one_is_not_enough_and_the_bound_holds() -> None:
    # c - d carries 7: too little for the new 8, enough for the two moved 3s
    ledger = ledger_of(*SQUARE[:3], ("cd", "c", "d", 7))
    hold(ledger, "x1", "a", "b", 3)
    hold(ledger, "x2", "a", "b", 3)
    request = Request("new", Demand("a", "d", 8))
    plan = rearrange(ledger, request, POLICY)
    assert isinstance(plan, Admitted)
    assert sorted(m.connection for m in plan.moves) == ["x1", "x2"]
    single = rearrange(ledger, request, POLICY, Limits(max_moves=1))
    assert isinstance(single, Rejection) and "up to 1 connections" in single.message
    bounded = rearrange(ledger, request, POLICY, Limits(max_tries=1))
    assert isinstance(bounded, Rejection) and "search bound reached" in bounded.message


def test_direct_admission_needs_no_move_and_other_rejections_pass_through() -> None:
    ledger = ledger_of(*SQUARE)
    plan = rearrange(ledger, Request("n", Demand("a", "d", 8)), POLICY)
    assert isinstance(plan, Admitted) and plan.moves == ()
    assert ledger.reservations() == []
    huge = rearrange(ledger, Request("n", Demand("a", "d", 11)), POLICY)  # above any link
    assert isinstance(huge, Rejection) and "even with nothing reserved" in huge.message
    bad = rearrange(ledger, Request("n", Demand("a", "q", 8)), POLICY)
    assert isinstance(bad, Rejection) and bad.reason == "unknown-host"


def test_apply_of_a_stale_plan_undoes_its_steps() -> None:
    ledger = ledger_of(*SQUARE)
    hold(ledger, "x", "a", "b", 5)
    hold(ledger, "y", "c", "d", 5)
    plan = rearrange(ledger, Request("new", Demand("a", "d", 8)), POLICY)
    assert isinstance(plan, Admitted)
    hold(ledger, "late", "b", "d", 5)  # takes b -> d after the plan was made
    before = {(r.connection, r.generation) for r in ledger.reservations()}
    with pytest.raises(OverAdmission, match=r"bd \(b -> d\) lacks 3 bit/s"):
        apply(ledger, plan)
    assert {(r.connection, r.generation) for r in ledger.reservations()} == before
    assert ledger.used(Arc("ab", True)) == 5 and ledger.used(Arc("ac", True)) == 0
