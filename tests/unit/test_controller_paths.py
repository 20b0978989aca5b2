"""The path search's shortcut: the view's remembered shortest paths over every arc answer
for the search of the arcs with room whenever one of them has room (issue 25: a reroute
of 100 asked the same pair 100 times, each a walk of the whole graph)."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from vnet.controller.admission import paths
from vnet.controller.admission.ledger import Demand, Ledger, Reservation
from vnet.controller.admission.network import MAX_CANDIDATES, Arc, Link, NetworkView

MBIT = 1_000_000


def grid(width: int, height: int) -> NetworkView:
    """Hosts h{x}{y}, a 10 Mbit/s link to the right and one down from each."""
    hosts = [f"h{x}{y}" for x in range(width) for y in range(height)]
    links = [Link(f"{a}-{b}", a, b, 10 * MBIT) for a, b in _pairs(width, height)]
    return NetworkView(hosts, links)


def _pairs(width: int, height: int) -> list[tuple[str, str]]:
    right = [(f"h{x}{y}", f"h{x + 1}{y}") for x in range(width - 1) for y in range(height)]
    down = [(f"h{x}{y}", f"h{x}{y + 1}") for x in range(width) for y in range(height - 1)]
    return right + down


def holding(view: NetworkView, used: dict[Arc, int]) -> Ledger:
    return Ledger.of_books(
        view,
        [
            Reservation(f"r{k}", 0, Demand("", "", bps), (), (arc,), bps)
            for k, (arc, bps) in enumerate(used.items())
        ],
    )


def searched(ledger: Ledger, source: str, destination: str, cost: int) -> paths.Route | None:
    """The answer of the search of the arcs with room alone (what find_route did before)."""
    search = paths._Search(ledger)
    hops = ledger.view.hops(source, destination)
    while hops is not None:
        shortest = paths._shortest_paths(search.graph(cost), source, destination)
        if not shortest:
            return None
        if len(shortest[0]) - 1 <= hops:
            return paths._widest(shortest, search, cost)
        hops = len(shortest[0]) - 1
    return None


@settings(max_examples=150, deadline=None)
@given(
    size=st.sampled_from([(3, 3), (4, 3), (4, 4), (5, 5)]),  # 5x5: 70 shortest, over the memo
    fills=st.lists(st.integers(0, 10), min_size=40, max_size=40),
    cost=st.sampled_from([MBIT, 3 * MBIT, 6 * MBIT]),
    ends=st.integers(0, 100),
)
def test_the_route_is_the_searchs_whatever_the_room(size, fills, cost, ends) -> None:  # type: ignore[no-untyped-def]
    view = grid(*size)
    arcs = sorted(view.arcs())
    used = {arc: fill * MBIT for arc, fill in zip(arcs, fills, strict=False) if fill}
    ledger = holding(view, used)
    source, destination = _ends(view, ends)
    found = paths.find_route(ledger, source, destination, lambda _: cost)
    expected = searched(ledger, source, destination, cost)
    if expected is None:
        assert isinstance(found, paths.Rejection) and found.reason == "no-capacity"
    else:
        assert isinstance(found, paths.Route)
        assert (found.path, found.arcs) == (expected.path, expected.arcs)


def _ends(view: NetworkView, k: int) -> tuple[str, str]:
    pairs = list(itertools.permutations(view.hosts, 2))
    return pairs[k % len(pairs)]


def test_a_pair_asked_again_is_answered_without_a_walk_of_the_graph(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    view = grid(4, 4)
    ledger = Ledger(view)
    first = paths.find_route(ledger, "h00", "h33", lambda _: MBIT)
    assert len(view.shortest("h00", "h33")) == 20  # (6 choose 3), all remembered
    walks = []
    monkeypatch.setattr(paths, "_shortest_paths", lambda *a: walks.append(a) or [])
    again = paths.find_route(ledger, "h00", "h33", lambda _: MBIT)
    assert again == first and walks == []


def test_a_pair_with_more_shortest_paths_than_remembered_is_searched() -> None:
    view = grid(5, 5)  # h00 -> h44: (8 choose 4) = 70 shortest paths
    assert len(view.shortest("h00", "h44")) == MAX_CANDIDATES
    route = paths.find_route(Ledger(view), "h00", "h44", lambda _: MBIT)
    assert isinstance(route, paths.Route) and route.hops == 8
