"""The reservation ledger (issue 12, part 5): never over-admit, never leak, release once."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vnet.controller.admission.admit import Admitted, Policy, Request, admit, modify
from vnet.controller.admission.cost import Encapsulation
from vnet.controller.admission.ledger import Demand, Ledger, LedgerError, OverAdmission, Reservation
from vnet.controller.admission.network import Arc, NetworkView
from vnet.controller.admission.paths import Rejection
from vnet.controller.admission.rearrange import Limits, apply, rearrange

HOSTS = ["a", "b", "c", "d"]
LINKS = [("ab", "a", "b", 100), ("bc", "b", "c", 80), ("cd", "c", "d", 100), ("ad", "a", "d", 60)]
POLICY = Policy(margin=Fraction(5, 100), encapsulation=Encapsulation(vxlan="ipv6"))


def network() -> NetworkView:
    keys = ("name", "a", "b", "capacity")
    return NetworkView.from_data(
        {"hosts": HOSTS, "links": [dict(zip(keys, x, strict=True)) for x in LINKS]}
    )


def check_books(ledger: Ledger) -> None:
    """What each arc says it uses is the sum of what is held on it, and fits."""
    for arc in ledger.view.arcs():
        held = sum(r.cost for r in ledger.reservations() if arc in r.arcs)
        assert ledger.used(arc) == held
        assert 0 <= held <= ledger.view.capacity(arc)


names = st.sampled_from(["c1", "c2", "c3", "c4", "c5"])
hosts = st.sampled_from(HOSTS)
operations = st.lists(
    st.one_of(
        st.tuples(st.just("request"), names, hosts, hosts, st.integers(1, 70)),
        st.tuples(st.just("modify"), names, hosts, hosts, st.integers(1, 70)),
        st.tuples(st.just("rearrange"), names, hosts, hosts, st.integers(1, 70)),
        st.tuples(st.just("finish"), names),
        st.tuples(st.just("abort"), names),
        st.tuples(st.just("release"), names),
    ),
    max_size=40,
)


def step(ledger: Ledger, op: tuple) -> None:  # type: ignore[type-arg]
    kind, name = op[0], op[1]
    if kind in ("request", "modify", "rearrange"):
        request = Request(name, Demand(op[2], op[3], op[4], 200))
        held = ledger.current(name) is not None
        if kind == "request" and not held:
            admit(ledger, request, POLICY)
        elif kind == "rearrange" and not held:
            plan = rearrange(ledger, request, POLICY, Limits(budget=5.0))
            if isinstance(plan, Admitted):
                apply(ledger, plan)
        elif kind == "modify" and held and len(ledger.of(name)) == 1:
            modify(ledger, request, POLICY)
    elif kind == "finish" and len(ledger.of(name)) == 2:
        ledger.finish_move(name)
    elif kind == "abort" and len(ledger.of(name)) == 2:
        newest = ledger.current(name)
        ledger.release(name, newest.generation)  # type: ignore[union-attr]
    elif kind == "release":
        ledger.release_all(name)


@settings(max_examples=150, deadline=None)
@given(operations)
def test_random_sequences_never_over_admit_and_never_leak(ops) -> None:  # type: ignore[no-untyped-def]
    ledger = Ledger(network())
    for op in ops:
        step(ledger, op)
        check_books(ledger)
        assert all(len(ledger.of(n)) <= 2 for n in ("c1", "c2", "c3", "c4", "c5"))
    for r in ledger.reservations():
        ledger.release(r.connection, r.generation)
    assert all(ledger.used(a) == 0 for a in ledger.view.arcs())  # nothing leaked
    assert ledger.reservations() == []


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(names, st.integers(1, 120)), max_size=12))
def test_admitted_is_exactly_what_fits(asks) -> None:  # type: ignore[no-untyped-def]
    """Whatever order requests come in, the ledger holds only what fits, and says so."""
    ledger = Ledger(network())
    for i, (name, bw) in enumerate(asks):
        got = admit(ledger, Request(f"{name}-{i}", Demand("a", "c", bw, 200)), POLICY)
        assert isinstance(got, (Admitted, Rejection))
        if isinstance(got, Rejection):
            assert got.reason == "no-capacity" and got.shortfalls
            assert all(s.needed > s.available for s in got.shortfalls)
        check_books(ledger)


def test_release_is_exactly_once() -> None:
    ledger = Ledger(network())
    got = admit(ledger, Request("x", Demand("a", "b", 10, 200)), POLICY)
    ledger.release("x", 1)
    with pytest.raises(LedgerError, match="released already"):
        ledger.release("x", 1)
    assert ledger.used(got.reservation.arcs[0]) == 0


def test_make_before_break_counts_both_then_releases_old_once() -> None:
    ledger = Ledger(network())
    first = admit(ledger, Request("x", Demand("a", "b", 30, 200), ("a", "b")), POLICY).reservation
    second = modify(ledger, Request("x", Demand("a", "b", 30, 200), ("a", "d", "c", "b")), POLICY)
    assert isinstance(second, Admitted)
    ab = Arc("ab", True)
    assert ledger.used(ab) == first.cost and ledger.used(Arc("ad", True)) == second.reservation.cost
    assert ledger.finish_move("x") == second.reservation
    assert ledger.used(ab) == 0
    with pytest.raises(LedgerError, match="not moving"):
        ledger.finish_move("x")  # a retried finish frees nothing twice
    check_books(ledger)


def test_refused_reservation_changes_nothing() -> None:
    ledger = Ledger(network())
    arcs = (Arc("ab", True), Arc("bc", True))
    ledger.reserve(Reservation("x", 1, Demand("a", "c", 1), ("a", "b", "c"), arcs, 50))
    with pytest.raises(OverAdmission, match=r"bc \(b -> c\) lacks 20 bit/s") as e:
        ledger.reserve(Reservation("y", 1, Demand("a", "c", 1), ("a", "b", "c"), arcs, 50))
    assert e.value.shortfall == 20
    with pytest.raises(LedgerError, match="already reserved"):
        ledger.reserve(Reservation("x", 1, Demand("a", "c", 1), ("a", "b"), arcs[:1], 1))
    with pytest.raises(LedgerError, match="not newer"):
        ledger.reserve(Reservation("x", 0, Demand("a", "c", 1), ("a", "b"), arcs[:1], 1))
    assert [r.connection for r in ledger.reservations()] == ["x"]
    assert ledger.used(Arc("ab", True)) == 50
