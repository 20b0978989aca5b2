"""Path selection: shortest path over residual capacity, and explicit paths checked.

Choice: fewest hops first (each hop adds a segment, so a longer path also costs
more on every link and delays more), and among the shortest paths the widest
one (largest smallest residual after the reservation), ties broken by the path's
names so the answer is deterministic. Widest-shortest keeps headroom where the
network is tight, which leaves more room for later requests than a random
shortest path, without the longer paths (and higher cost per link) that a
widest-path-first rule would pick.

The cost on each link depends on the path's length (segments), so the search
runs on the graph of arcs that can carry the cost at k hops, starting with k the
unconstrained distance, and raises k to the distance found until they agree:
the first k where the graph's distance is <= k is the fewest hops any feasible
path has (a feasible path of L hops lies in the graph filtered at cost(L), and
that graph shrinks as k grows).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from vnet.controller.admission.ledger import Ledger
from vnet.controller.admission.network import MAX_CANDIDATES, Arc

if TYPE_CHECKING:
    import networkx as nx


@dataclass(frozen=True)
class Shortfall:
    """One arc that cannot carry a connection: how much is missing, in bit/s."""

    link: str
    forward: bool
    label: str  # "a-b (a -> b)"
    needed: int
    available: int

    @property
    def missing(self) -> int:
        return self.needed - self.available


@dataclass(frozen=True)
class Rejection:
    """Why a request cannot be admitted, as data (the API turns it into an answer)."""

    reason: str  # "no-capacity", "not-adjacent", "unknown-host", "no-route", "bad-request"
    message: str
    shortfalls: tuple[Shortfall, ...] = ()
    field: str | None = None  # the request's field at fault, when one is


@dataclass(frozen=True)
class Route:
    path: tuple[str, ...]  # hosts
    arcs: tuple[Arc, ...]
    cost: int  # per arc

    @property
    def hops(self) -> int:
        return len(self.arcs)


@dataclass
class _Search:
    ledger: Ledger
    excluded: frozenset[Arc] = field(default_factory=frozenset)
    _best: dict[tuple[str, str], tuple[Arc, int] | None] = field(default_factory=dict)

    def best(self, u: str, v: str) -> tuple[Arc, int] | None:
        """The arc from u to v with the most room (the first of equals) and its room; None
        when every one is excluded."""
        key = (u, v)
        if key not in self._best:
            found: tuple[Arc, int] | None = None
            arcs = self.ledger.view.between[key]
            if self.excluded:
                arcs = [(arc, capacity) for arc, capacity in arcs if arc not in self.excluded]
            for arc, capacity in arcs:
                room = capacity - self.ledger.used(arc)
                if found is None or found[1] < room:
                    found = (arc, room)
            self._best[key] = found
        return self._best[key]

    def arc(self, u: str, v: str) -> Arc:
        return self._present(u, v)[0]

    def room(self, u: str, v: str) -> int:
        return self._present(u, v)[1]

    def _present(self, u: str, v: str) -> tuple[Arc, int]:
        best = self.best(u, v)
        assert best is not None, f"no arc from {u} to {v} in the search's graph"
        return best

    def fits(self, u: str, v: str, cost: int | None) -> bool:
        """Whether some arc from u to v has room for `cost` (None: is there at all)."""
        best = self.best(u, v)
        return best is not None and (cost is None or best[1] >= cost)

    def graph(self, cost: int | None) -> nx.DiGraph:
        """Hosts joined where some arc has room for `cost` (None: every arc): the network's
        graph seen through a filter, so only the arcs a search reaches are weighed (building
        a graph of every arc twice per search was most of a plan at 1000 hosts)."""
        import networkx as nx  # 0.25 s to import: only when planning

        def fits(u: str, v: str) -> bool:
            return self.fits(u, v, cost)

        graph: nx.DiGraph = nx.subgraph_view(self.ledger.view.digraph, filter_edge=fits)
        return graph


def find_route(
    ledger: Ledger,
    source: str,
    destination: str,
    cost_at: Callable[[int], int],
    excluded: Iterable[Arc] = (),
    explain: bool = True,
) -> Route | Rejection:
    """The fewest-hops, then widest, path from source to destination that fits."""
    search = _Search(ledger, frozenset(excluded))
    if source == destination:
        return Route((source,), (), 0)
    hops = _unconstrained_hops(search, source, destination)
    if hops is None:
        return Rejection("no-route", f"no underlay path from {source!r} to {destination!r}")
    while True:
        cost = cost_at(hops)
        shortest = _known_fits(search, source, destination, cost) or _shortest_paths(
            search.graph(cost), source, destination
        )
        if not shortest:
            if not explain:  # a trial (rearrangement) needs the answer, not the reason
                return Rejection("no-capacity", "no path fits")
            return _no_capacity(ledger, search, source, destination, cost)
        found = len(shortest[0]) - 1
        if found <= hops:
            return _widest(shortest, search, cost)
        hops = found


def _unconstrained_hops(search: _Search, source: str, destination: str) -> int | None:
    """The fewest hops from source to destination over every arc not excluded (None: no
    path); without exclusions the view's, remembered per pair of hosts."""
    if not search.excluded:
        return search.ledger.view.hops(source, destination)
    shortest = _shortest_paths(search.graph(None), source, destination)
    return len(shortest[0]) - 1 if shortest else None


def _known_fits(search: _Search, source: str, destination: str, cost: int) -> list[list[str]]:
    """The view's remembered shortest paths over every arc that have room for `cost`: when
    one has, they are exactly what the search of the arcs with room would find (a path of
    the fewest hops over every arc is one of the fewest over any part of them), without
    walking the graph again. []: none has room, or the pair may have more shortest paths
    than the view keeps (the search finds what fits then)."""
    known = search.ledger.view.shortest(source, destination)
    if len(known) >= MAX_CANDIDATES:
        return []
    return [
        list(path)
        for path in known
        if all(search.fits(u, v, cost) for u, v in itertools.pairwise(path))
    ]


def _shortest_paths(g: nx.DiGraph, source: str, destination: str) -> list[list[str]]:
    """Up to MAX_CANDIDATES shortest paths (one search gives their length and the paths to
    weigh), none when there is no path."""
    import networkx as nx

    try:
        return list(itertools.islice(nx.all_shortest_paths(g, source, destination), MAX_CANDIDATES))
    except nx.NetworkXNoPath:
        return []


def _widest(candidates: list[list[str]], search: _Search, cost: int) -> Route:
    def rank(path: list[str]) -> tuple[int, list[str]]:
        narrowest = min(search.room(u, v) for u, v in itertools.pairwise(path))
        return (-narrowest, path)  # widest first, then by names

    best = min(candidates, key=rank)
    arcs = tuple(search.arc(u, v) for u, v in itertools.pairwise(best))
    return Route(tuple(best), arcs, cost)


def _no_capacity(
    ledger: Ledger, search: _Search, source: str, destination: str, cost: int
) -> Rejection:
    """Name the arcs of the shortest unconstrained path that lack room, and by how much."""
    import networkx as nx

    path = nx.shortest_path(search.graph(None), source, destination)
    short = tuple(
        _shortfall(ledger, search.arc(u, v), cost)
        for u, v in itertools.pairwise(path)
        if ledger.residual(search.arc(u, v)) < cost
    )
    named = "; ".join(f"{s.label} lacks {s.missing} bit/s" for s in short)
    return Rejection(
        "no-capacity",
        f"no path from {source!r} to {destination!r} has {cost} bit/s on every link"
        f" (shortest path {' -> '.join(path)}: {named})",
        short,
        "bandwidth",
    )


def _shortfall(ledger: Ledger, arc: Arc, cost: int) -> Shortfall:
    view = ledger.view
    return Shortfall(arc.link, arc.forward, view.label(arc), cost, max(ledger.residual(arc), 0))


def check_explicit(
    ledger: Ledger, path: list[str], cost_at: Callable[[int], int]
) -> Route | Rejection:
    """An explicit path of hosts: adjacent, and every arc has room (best parallel arc)."""
    view = ledger.view
    for i, host in enumerate(path):
        if host not in view.hosts:
            return Rejection("unknown-host", f"path[{i}]: unknown host {host!r}", field="path")
    if len(set(path)) != len(path):
        return Rejection("bad-request", f"path {path} visits a host twice", field="path")
    cost = cost_at(len(path) - 1)
    arcs, short = [], []
    for i, (u, v) in enumerate(itertools.pairwise(path)):
        between = view.arcs_between(u, v)
        if not between:
            return Rejection(
                "not-adjacent",
                f"path[{i}] {u!r} and path[{i + 1}] {v!r} share no link",
                field="path",
            )
        arc = max(between, key=lambda a: (ledger.residual(a), a))
        arcs.append(arc)
        if ledger.residual(arc) < cost:
            short.append(_shortfall(ledger, arc, cost))
    if short:
        named = "; ".join(f"{s.label} lacks {s.missing} bit/s" for s in short)
        return Rejection("no-capacity", f"path {' -> '.join(path)}: {named}", tuple(short), "path")
    return Route(tuple(path), tuple(arcs), cost)
