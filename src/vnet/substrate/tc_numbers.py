"""The numbers the kernel gives vnet's u32 filters.

A u32 filter is deleted by its number (its handle), which the kernel chooses when the
filter is added and only a read tells. Reading every filter of the interface for each
deletion made a commit deleting one connection cost a read of every connection's filter.
So a Kernel remembers numbers across plans (`FilterNumbers`), and a plan's deletions look
them up (`FilterHandles`), confirm each with a get of that one number, and read the whole
interface only when a number is not known or proves wrong.
"""

from __future__ import annotations

import socket
from itertools import chain
from typing import TYPE_CHECKING

from vnet.substrate.marks import NsName
from vnet.substrate.rtquery import U32Entry
from vnet.substrate.u32 import Match, selector_match

if TYPE_CHECKING:
    from vnet.substrate.kernel import Kernel
    from vnet.substrate.tc import TcFilter

Table = tuple[NsName, str, int]  # namespace, interface, parent
Slot = tuple[int, int, int, Match]  # prio, protocol, class, what it matches
# u32 numbers a filter's node in its prio's hash table: the lowest free of 0x800-0xfff,
# then of 0x001-0x7ff (the kernel's gen_new_kid)
_NODES = range(0x800, 0x1000), range(0x001, 0x800)
_HTID = 0xFFF00000  # the hash table's part of a number
_FIRST_HTID = 0x80000000  # 800:


def _where(f: TcFilter) -> Table:
    return (f.ns, f.dev, f.parent)


def _slot(f: TcFilter) -> Slot:
    return (f.prio, f.protocol, f.classid, f.match)


def slot_of(entry: U32Entry) -> tuple[int, int, int]:
    """(prio, protocol, classid) of a filter as the kernel gave it."""
    return entry.info >> 16, socket.ntohs(entry.info & 0xFFFF), entry.classid


class FilterNumbers:
    """What a Kernel knows of its filters' numbers, per interface: all of them as last read,
    and for each filter added since, the number the kernel takes (the lowest free node of
    its prio's hash table). A guess, never trusted alone: a deletion confirms the number
    with a get (FilterHandles), so filters changed behind vnet's back cost a read, never a
    wrong deletion. Tc operations run on the Kernel of the plan's own thread (lanes.py)."""

    def __init__(self) -> None:
        self._numbers: dict[Table, dict[Slot, int]] = {}
        self._used: dict[Table, set[int]] = {}
        self._htids: dict[Table, dict[int, int]] = {}  # prio -> its hash table's id

    def learn(self, where: Table, entries: list[U32Entry]) -> None:
        """`entries`: every filter under `where`, as just read."""
        numbers: dict[Slot, int] = {}
        htids: dict[int, int] = {}
        for entry in entries:
            prio, protocol, classid = slot_of(entry)
            numbers[(prio, protocol, classid, selector_match(entry.selector))] = entry.handle
            htids[prio] = entry.handle & _HTID
        self._numbers[where] = numbers
        self._used[where] = {entry.handle for entry in entries}
        self._htids[where] = htids

    def number(self, f: TcFilter) -> int | None:
        return self._numbers.get(_where(f), {}).get(_slot(f))

    def added(self, f: TcFilter) -> None:
        """`f` was added: the number the kernel gave it, if the table is known."""
        where = _where(f)
        htids = self._htids.get(where)
        # the first u32 filter under a parent makes the hash table 800:; the table of any
        # other new prio gets a number that is not foreseen: that interface is read again
        htid = _FIRST_HTID if htids == {} else (htids or {}).get(f.prio)
        if htids is None or htid is None:
            self.forget(f.ns, f.dev)
            return
        htids[f.prio] = htid
        used = self._used[where]
        number = next((htid | n for n in chain(*_NODES) if htid | n not in used), None)
        if number is not None:
            self._numbers[where][_slot(f)] = number
            used.add(number)

    def deleted(self, f: TcFilter, number: int) -> None:
        where = _where(f)
        self._numbers.get(where, {}).pop(_slot(f), None)
        used = self._used.get(where)
        if used is not None:
            used.discard(number)
            if not used:  # the last filter takes its hash table along
                self._htids[where] = {}

    def forget(self, ns: NsName, dev: str) -> None:
        """The interface's filters went or are unknown (its root qdisc went or came)."""
        for where in [w for w in self._numbers if w[:2] == (ns, dev)]:
            del self._numbers[where], self._used[where], self._htids[where]


class FilterHandles:
    """The numbers of the filters one plan deletes: the one its Kernel remembers, confirmed
    by a get of it; else (or when wrong) from a read of every filter under that (interface,
    parent), kept for the plan's other deletions there."""

    def __init__(self) -> None:
        self._read: dict[Table, dict[tuple[int, int, int], list[U32Entry]]] = {}

    def take(self, k: Kernel, f: TcFilter) -> int | None:
        """`f`'s number, forgotten once given (the caller deletes it); None: not there."""
        where = _where(f)
        known = k.filter_numbers.number(f)
        if where not in self._read and known is not None and _confirmed(k, f, known):
            return known
        if where not in self._read:
            entries = k.u32_filters(f.ns, k.index(f.ns, f.dev), f.parent)
            k.filter_numbers.learn(where, entries)
            by_class: dict[tuple[int, int, int], list[U32Entry]] = {}
            for entry in entries:
                by_class.setdefault(slot_of(entry), []).append(entry)
            self._read[where] = by_class
        candidates = self._read[where].get((f.prio, f.protocol, f.classid), [])
        for entry in candidates:
            if selector_match(entry.selector) == f.match:
                candidates.remove(entry)
                return entry.handle
        return None


def _confirmed(k: Kernel, f: TcFilter, number: int) -> bool:
    """The kernel's filter `number` under `f`'s parent is `f`."""
    info = f.prio << 16 | socket.htons(f.protocol)
    found = k.u32_filters(f.ns, k.index(f.ns, f.dev), f.parent, one=(info, number))
    return any(
        slot_of(e) == (f.prio, f.protocol, f.classid) and selector_match(e.selector) == f.match
        for e in found
    )
