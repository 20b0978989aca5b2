"""A connection's pieces on each host, as the model derives them, remembered per topology.

The planner derives what each host of a connection's path holds (vnet.model.host_pieces)
from a Topology holding just that connection, after the model's rules checked it
(vnet.model.srv6_check): a few milliseconds each, SIDs and locators numbered from the whole
topology and every piece a validated model. It derives the same pieces again and again: when
it admits a connection, then whenever it needs what that connection's hosts hold (a release,
a modify, a move, a reroute of a hundred at once, a reconcile). Both depend only on the
topology and the connection, so they are remembered: an Inventory and every `avoiding` view
of it share one memo of their topology, which keeps the last `size` connections asked about.
Connections that differ only in name, id and port numbers (a reroute's hundred between the
same end hosts) have pieces that differ only in those: the first of such a shape is
derived, the others renumbered from its pieces (`host_pieces.as_another`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from functools import cached_property
from typing import Any, TypeVar

from vnet.model.connection import Connection
from vnet.model.errors import Problem
from vnet.model.host_guarantees import Locator, Srv6OnHost
from vnet.model.host_pieces import as_another, connection_pieces, host_locators
from vnet.model.srv6 import srv6_tenants
from vnet.model.srv6_check import Fixed, connection_problems
from vnet.model.topology import Topology

# connections remembered per topology: about 11 kB each on a path of three hosts, and a
# drain asks about every connection of a link at once
MEMORY = 1024
T = TypeVar("T")


@dataclass
class _Known:
    pieces: dict[str, Srv6OnHost] | None = None
    checked: bool = False  # the model's rules hold (refusals are not remembered)


class PiecesMemo:
    """`connection_pieces` and `connection_problems` of `topology` holding one connection,
    remembered by the connection's value. Planning runs in the database's worker threads,
    so the bookkeeping is under a lock (the derivations are not: two threads that derive the
    same pieces at once both get them right)."""

    def __init__(self, topology: Topology, size: int = MEMORY):
        self.topology = topology
        self.size = size
        self._known: OrderedDict[str, _Known] = OrderedDict()
        # (host, the tenants SRv6 serves) -> the locators a host's pieces carry: the same
        # for every connection of a controller's topology (each tenant with IPv6), so they
        # are derived once, and every entry holds that one list, not a copy of its own
        self._locators: dict[tuple[str, frozenset[str]], list[Locator]] = {}
        self._derived: OrderedDict[Hashable, Any] = OrderedDict()
        # the shapes (see _shape) of connections the rules found nothing wrong with
        self._sound: OrderedDict[str, None] = OrderedDict()
        # shape -> a connection of it and its pieces, which others of the shape renumber
        self._first_of_shape: OrderedDict[str, tuple[Connection, dict[str, Srv6OnHost]]] = (
            OrderedDict()
        )
        self._lock = threading.Lock()

    def problems(self, conn: Connection) -> list[Problem]:
        """What the model's rules find wrong with `conn` in this topology (none: it can be)."""
        known = self._entry(conn)
        if known.checked:
            return []
        shape = _shape(conn)
        with self._lock:
            sound = shape in self._sound
        if sound:
            known.checked = True
            return []
        problems = connection_problems(self._holding(conn), self._fixed)
        known.checked = not problems
        if not problems:
            with self._lock:
                self._sound[shape] = None
                if len(self._sound) > self.size:
                    self._sound.popitem(last=False)
        return problems

    def pieces(self, conn: Connection) -> dict[str, Srv6OnHost]:
        """Host -> the locators and pieces it holds for `conn` (checked or admitted)."""
        known = self._entry(conn)
        if known.pieces is None:
            known.pieces = self._pieces_of(conn)
        return known.pieces

    def _pieces_of(self, conn: Connection) -> dict[str, Srv6OnHost]:
        """Derived by the model for the first connection of a shape (see `_shape`), then
        renumbered from that one's for the others (a third of the time)."""
        shape = _shape(conn)
        with self._lock:
            first = self._first_of_shape.get(shape)
        if first is not None:
            was, its_pieces = first
            renumbered = as_another(its_pieces, was, conn)
            if renumbered is not None:
                return renumbered
        fixed = self._fixed
        derived = connection_pieces(
            self._holding(conn), self._host_locators, fixed.numbers, fixed.tenants
        )
        with self._lock:
            self._first_of_shape[shape] = (conn, derived)
            if len(self._first_of_shape) > self.size:
                self._first_of_shape.popitem(last=False)
        return derived

    @cached_property
    def _fixed(self) -> Fixed:
        """What the topology says whatever its connections (router numbers, networks'
        tenants, links' shares): the same for every connection asked about, and each a pass
        over the whole topology (together a third of a plan at 1000 hosts)."""
        return Fixed.of(self.topology)

    def _host_locators(self, topology: Topology, host: str) -> list[Locator]:
        fixed = self._fixed
        key = (host, frozenset(srv6_tenants(topology, fixed.tenants)))
        with self._lock:
            kept = self._locators.get(key)
        if kept is None:
            kept = host_locators(topology, host, fixed.numbers, fixed.tenants)
            with self._lock:
                kept = self._locators.setdefault(key, kept)
        return kept

    def derived(self, key: Hashable, derive: Callable[[], T]) -> T:
        """`derive()`, remembered under `key`: something else that depends only on this
        topology and what `key` says (a stored connection's plan on its stored path)."""
        with self._lock:
            if key in self._derived:
                self._derived.move_to_end(key)
                found: T = self._derived[key]
                return found
        value = derive()
        with self._lock:
            self._derived[key] = value
            if len(self._derived) > self.size:
                self._derived.popitem(last=False)
        return value

    def _entry(self, conn: Connection) -> _Known:
        key = conn.model_dump_json()
        with self._lock:
            known = self._known.get(key)
            if known is None:
                known = self._known[key] = _Known()
                if len(self._known) > self.size:
                    self._known.popitem(last=False)
            else:
                self._known.move_to_end(key)
            return known

    def _holding(self, conn: Connection) -> Topology:
        return self.topology.model_copy(update={"connections": [conn]})


def _shape(conn: Connection) -> str:
    """What the model's rules look at in a topology holding `conn` alone: all of it but its
    name, id and port numbers, which they check only against other connections' (unique
    names, ids and steered traffic) and for being there at all (ports need a protocol that
    has them). Connections of one shape pass or fail together: the hundred moves of one
    failure between the same end hosts are checked once."""
    ports = {"src_port": conn.src_port and 1, "dst_port": conn.dst_port and 1}
    return conn.model_copy(update={"name": "", "id": None, **ports}).model_dump_json()
