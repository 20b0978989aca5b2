"""The controller's view of the underlay: physical hosts and links with capacity.

Capacity is per direction (an underlay link is full duplex): a connection from
a to b takes from the arc (link, forward=True), its reverse direction from the
other arc. What a connection may take is the link's rate minus the share kept
for management and routing (`vnet.model.qos.management_rate`), the same
reservation the agents' HTB trees make.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from vnet.model.qos import management_rate
from vnet.model.topology import Topology

if TYPE_CHECKING:
    import networkx as nx

MAX_CANDIDATES = 64  # shortest paths compared for width; bounds the work on grids
HostPath = tuple[str, ...]  # the hosts a path visits, in order


class NetworkError(ValueError):
    """Plain data that does not describe a network (what, where, why)."""


@dataclass(frozen=True)
class Link:
    """An underlay link; `capacity` is what connections may take, in bit/s per direction."""

    name: str
    a: str
    b: str
    capacity: int

    def label(self, forward: bool) -> str:
        return (
            f"{self.name} ({self.a} -> {self.b})"
            if forward
            else f"{self.name} ({self.b} -> {self.a})"
        )


@dataclass(frozen=True, order=True)
class Arc:
    """One direction of one link: the unit of capacity."""

    link: str
    forward: bool  # a -> b


class NetworkView:
    """Hosts and links, looked up by name; immutable once built."""

    def __init__(self, hosts: Iterable[str], links: Iterable[Link]):
        self.hosts: tuple[str, ...] = tuple(hosts)
        if len(set(self.hosts)) != len(self.hosts):
            raise NetworkError(f"hosts: a name appears twice in {list(self.hosts)}")
        self.links: dict[str, Link] = {}
        for link in links:
            self._check(link)
            self.links[link.name] = link
        # host pair -> every arc from the one to the other with its capacity, in a fixed
        # order (parallel links give several); the path search weighs them
        self.between: dict[tuple[str, str], list[tuple[Arc, int]]] = {}
        for arc in sorted(self.arcs()):
            self.between.setdefault(self.ends(arc), []).append((arc, self.capacity(arc)))
        self._shortest: dict[tuple[str, str], tuple[HostPath, ...]] = {}

    def _check(self, link: Link) -> None:
        where = f"link {link.name!r}"
        if link.name in self.links:
            raise NetworkError(f"{where}: the name appears twice")
        for end in (link.a, link.b):
            if end not in self.hosts:
                raise NetworkError(f"{where}: unknown host {end!r}")
        if link.a == link.b:
            raise NetworkError(f"{where}: joins host {link.a!r} to itself")
        if link.capacity <= 0:
            raise NetworkError(f"{where}: capacity {link.capacity} bit/s is not positive")

    @cached_property
    def digraph(self) -> nx.DiGraph:
        """The hosts, an edge wherever some arc goes (in `between`'s order): built once, the
        path search looks at it through a filter of the arcs with room."""
        import networkx as nx  # 0.25 s to import: only when planning

        graph = nx.DiGraph()
        graph.add_nodes_from(self.hosts)
        graph.add_edges_from(self.between)
        return graph

    def hops(self, source: str, destination: str) -> int | None:
        """The fewest hops from source to destination over every arc (None: no path)."""
        paths = self.shortest(source, destination)
        return len(paths[0]) - 1 if paths else None

    def shortest(self, source: str, destination: str) -> tuple[HostPath, ...]:
        """Up to MAX_CANDIDATES shortest paths from source to destination over every arc
        (none: no path), searched once per pair and remembered: every plan between two
        hosts asks, and whether one of them has room is most often the whole search (per
        pair, not per source, so 1000 hosts do not keep a table of every distance)."""
        import networkx as nx  # 0.25 s to import: only when planning

        key = (source, destination)
        if key not in self._shortest:
            try:
                found = nx.all_shortest_paths(self.digraph, source, destination)
                self._shortest[key] = tuple(map(tuple, itertools.islice(found, MAX_CANDIDATES)))
            except nx.NetworkXNoPath:
                self._shortest[key] = ()
        return self._shortest[key]

    def arcs(self) -> list[Arc]:
        return [Arc(name, fwd) for name in self.links for fwd in (True, False)]

    def capacity(self, arc: Arc) -> int:
        return self.links[arc.link].capacity

    def ends(self, arc: Arc) -> tuple[str, str]:
        """(from host, to host) of an arc."""
        link = self.links[arc.link]
        return (link.a, link.b) if arc.forward else (link.b, link.a)

    def label(self, arc: Arc) -> str:
        return self.links[arc.link].label(arc.forward)

    def arcs_between(self, u: str, v: str) -> list[Arc]:
        """Every arc from u to v (parallel links give several)."""
        return [arc for arc, _ in self.between.get((u, v), ())]

    @classmethod
    def from_data(cls, data: dict) -> NetworkView:
        """From plain data: {"hosts": [...], "links": [{"name", "a", "b", "capacity"}]}."""
        try:
            links = [
                Link(str(x["name"]), str(x["a"]), str(x["b"]), int(x["capacity"]))
                for x in data.get("links", [])
            ]
            return cls([str(h) for h in data["hosts"]], links)
        except (KeyError, TypeError, ValueError) as e:
            raise NetworkError(f"network data: missing or malformed field {e}") from e

    @classmethod
    def from_topology(cls, topo: Topology) -> NetworkView:
        """A lab's hosts and the links with a rate (links without one have no guarantee)."""
        links = [
            Link(f"{x.a}-{x.b}", x.a, x.b, x.rate - (management_rate(x) or 0))
            for x in topo.links
            if x.rate is not None
        ]
        return cls([h.name for h in topo.hosts], links)  # one link per pair: checked by the model
