"""A commit as the difference between two configuration trees, and its journal record.

The journal (persist.py) holds one record per commit, not the whole tree: the
routers and the SRv6 connections put (created or changed, by name) and deleted, and
their order when the change alone would not give it; any other top-level member set or
removed whole (networks, underlay: small), and so is a container whose other members
changed (the locators beside the connections). `replay(old, change(old, new))` equals
`new`, so a configuration rebuilt from a snapshot and its records is the one that was
committed. (The routers' part sits at the record's top level, as it always did, so
journals written before connections were journalled one by one still replay.)

A record is one line: the CRC-32 of its JSON text in hex, a space, the JSON,
a newline. A line that is cut short (a crash in the middle of its write) or
fails its checksum ends the journal: nothing after it was ever acknowledged.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from vnet.model.yang.guarantees import SRV6
from vnet.model.yang.module import ROUTERS

Tree = dict[str, Any]
Diff = dict[str, Any]  # a container's: "container" (whole, None: gone) or put/delete/order
BEFORE = "before"  # a record's rollback point: the configuration before the record
# top-level members whose list is journalled entry by entry -> that list
KEYED = {ROUTERS: "router", SRV6: "connection"}
T = TypeVar("T")
ROUTERS_CONTAINER = "routers-container"  # the routers' "container", under its own name


def change(old: Tree, new: Tree) -> dict[str, Any]:
    """What turns `old` into `new`, of a size that follows the change, not the trees."""
    out: dict[str, Any] = {}
    if set_ := {k: v for k, v in new.items() if k not in KEYED and old.get(k) != v}:
        out["set"] = set_
    if unset := [key for key in old if key not in new and key not in KEYED]:
        out["unset"] = unset
    routers = member_change(old.get(ROUTERS), new.get(ROUTERS), KEYED[ROUTERS])
    if "container" in routers:
        out[ROUTERS_CONTAINER] = routers.pop("container")
    out.update(routers)
    if connections := member_change(old.get(SRV6), new.get(SRV6), KEYED[SRV6]):
        out[SRV6] = connections
    return out


# per list, the last container change worked out, with the containers it was of (held, so
# that their ids stay theirs): a commit asks for the same one several times (its checks,
# its events, its record); trees are never changed in place, so the same two containers
# have the same change
_last: dict[str, tuple[Tree | None, Tree | None, Diff, ListChange | None]] = {}


@dataclass(frozen=True)
class Steps:
    """How replay makes a new list of the old one, position by position: each entry kept
    where it was, or replaced there by the new entry of its name; entries deleted dropped;
    entries of new names appended in the new list's order."""

    replace: dict[int, int]  # old position -> new position of the entry taking its place
    drop: list[int]  # old positions of the entries deleted, ascending
    append: list[int]  # new positions of the entries of new names, ascending

    def apply(self, old: list[T], at_new: Callable[[int], T]) -> list[T]:
        """`old` (or a list parallel to it) as replay changes it; `at_new(q)`: what is at
        the new list's position q."""
        out = list(old)
        for p, q in self.replace.items():
            out[p] = at_new(q)
        if len(self.drop) <= _FEW:  # each del moves the rest of the list, in C
            for p in reversed(self.drop):
                del out[p]
        else:
            dropped = set(self.drop)
            out = [r for p, r in enumerate(out) if p not in dropped]
        return out + [at_new(q) for q in self.append]


_FEW = 64  # deletions done one by one below this many


@dataclass(frozen=True)
class ListChange:
    """A keyed list's change from an old version to a new one: what its journal record
    holds (`put`, `delete`, `order`) and what a commit's other steps ask of it."""

    put: list[dict[str, Any]]  # the entries new or different, in the new list's order
    put_at: list[int]  # where each is in the new list
    delete: list[str]  # the names no longer there, in the old list's order
    order: list[str] | None  # the new list's names, when replay would not give its order
    was: dict[str, dict[str, Any]]  # the old entries replaced or deleted, by name
    # the names of the new list's entries the old one does not share (put, or equal to
    # the entry they replace): a name twice in the new list is twice here or also kept
    fresh: list[str]
    steps: Steps

    def record(self) -> Diff:
        out: Diff = {}
        if self.put:
            out["put"] = self.put
        if self.delete:
            out["delete"] = self.delete
        if self.order is not None:
            out["order"] = self.order
        return out

    def replaced(self) -> set[str]:
        """The names of the entries put in place of an old one of the same name."""
        return {r["name"] for r in self.put if r["name"] in self.was}

    def superseded(self) -> list[dict[str, Any]]:
        """The old entries deleted or replaced by one put (not those `was` holds because
        the new list has an equal entry in their place)."""
        return [self.was[name] for name in (*self.delete, *self.replaced())]

    def aligned(self, old: list[T], made: Callable[[int], T]) -> list[T] | None:
        """A list parallel to the new one from `old`, parallel to the old one: `made(q)`
        for each entry put (q: its new position), the old list's item for the others;
        None when the new list is in an order of its own (`order`)."""
        if self.order is not None:
            return None
        put = set(self.put_at)
        unput = {q: old[p] for p, q in self.steps.replace.items() if q not in put}
        return self.steps.apply(old, lambda q: made(q) if q in put else unput[q])


def member_change(old: Tree | None, new: Tree | None, entries: str) -> Diff:
    """A keyed container's change: its list entry by entry, or the whole container when
    anything else of it changed (rare: the container itself, its other members). A new
    dict each time (its lists are shared: never change them)."""
    return dict(_changes(old, new, entries)[0])


def router_change(old: Tree, new: Tree) -> ListChange | None:
    """`list_change` of the two trees' VR lists."""
    return list_change(old.get(ROUTERS), new.get(ROUTERS), KEYED[ROUTERS])


def list_change(old: Tree | None, new: Tree | None, entries: str) -> ListChange | None:
    """A keyed container's list change entry by entry; None when more of the container
    changed than its list (its other members, or it came or went)."""
    return _changes(old, new, entries)[1]


def _changes(old: Tree | None, new: Tree | None, entries: str) -> tuple[Diff, ListChange | None]:
    last = _last.get(entries)
    if last is not None and last[0] is old and last[1] is new:
        return last[2], last[3]
    found = _member_change(old, new, entries)
    diff = found.record() if isinstance(found, ListChange) else found
    listed = found if isinstance(found, ListChange) else None
    _last[entries] = (old, new, diff, listed)
    return diff, listed


def _member_change(old: Tree | None, new: Tree | None, entries: str) -> Diff | ListChange:
    if old is None and new is None:
        return {}
    if old is None or new is None or _shape(old, entries) != _shape(new, entries):
        return {"container": new}
    return _list_change(old.get(entries, []), new.get(entries, []))


def _shape(container: Tree, entries: str) -> tuple[bool, Tree]:
    """Whether the container has the list at all, and its other members."""
    return entries in container, {k: v for k, v in container.items() if k != entries}


def _list_change(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> ListChange:
    # Only the stretch between the lists' longest common head and tail is looked at, and
    # there the entries the new list shares with the old one are the same (trees are never
    # changed in place): a loop in Python over 10,000 entries was most of a commit of one.
    head = _common_head(old, new)
    tail = _common_tail(old, new, head)
    olds, news = range(head, len(old) - tail), range(head, len(new) - tail)
    old_ids = {id(old[p]) for p in olds}
    new_ids: set[int] = set()
    fresh = []  # (an entry there twice is fresh the second time: the name is twice)
    for q in news:
        if id(new[q]) not in old_ids or id(new[q]) in new_ids:
            fresh.append(q)
        new_ids.add(id(new[q]))
    stale = [p for p in olds if id(old[p]) not in new_ids]
    was = {old[p]["name"]: old[p] for p in stale}
    put_at = [q for q in fresh if (prev := was.get(new[q]["name"])) is None or prev != new[q]]
    fresh_named = {new[q]["name"]: q for q in fresh}
    steps = Steps(
        replace={p: fresh_named[old[p]["name"]] for p in stale if old[p]["name"] in fresh_named},
        drop=[p for p in stale if old[p]["name"] not in fresh_named],
        append=[q for q in fresh if new[q]["name"] not in was],
    )
    in_order = steps.apply(old, new.__getitem__) == new
    return ListChange(
        put=[new[q] for q in put_at],
        put_at=put_at,
        delete=[name for name in was if name not in fresh_named],
        order=None if in_order else [r["name"] for r in new],
        was=was,
        fresh=[new[q]["name"] for q in fresh],
        steps=steps,
    )


def _common_head(old: list[Any], new: list[Any]) -> int:
    """How many entries the lists start with alike."""
    return _longest(min(len(old), len(new)), lambda lo, hi: old[lo:hi] == new[lo:hi])


def _common_tail(old: list[Any], new: list[Any], head: int) -> int:
    """How many entries the lists end with alike, short of their common head."""
    a, b = len(old), len(new)
    return _longest(min(a, b) - head, lambda lo, hi: old[a - hi : a - lo] == new[b - hi : b - lo])


def _longest(most: int, alike: Callable[[int, int], bool]) -> int:
    """The largest n <= most whose first n entries are alike, by halving: `alike(lo, hi)`
    compares entries lo..hi-1 (slices compare in C, an entry first by identity)."""
    lo, hi = 0, most  # the first lo are alike; not beyond hi
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if alike(lo, mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def _order(old_names: list[str], delete: list[str], put: list[dict[str, Any]]) -> list[str]:
    """The entries' order `replay` gives without an explicit order: kept ones where they
    were, new ones appended in the order put."""
    gone = set(delete)
    names = [n for n in old_names if n not in gone]
    known = set(names)
    return names + [r["name"] for r in put if r["name"] not in known]


def replay(old: Tree, record: dict[str, Any]) -> Tree:
    """`old` with a record's change applied (a new tree; `old` is not changed)."""
    tree = {k: v for k, v in old.items() if k not in record.get("unset", ())}
    tree.update(record.get("set", {}))
    routers: Diff = {k: record[k] for k in ("put", "delete", "order") if k in record}
    if ROUTERS_CONTAINER in record:
        routers = {"container": record[ROUTERS_CONTAINER]}
    _replay_member(tree, ROUTERS, routers)
    _replay_member(tree, SRV6, record.get(SRV6, {}))
    return tree


def _replay_member(tree: Tree, member: str, diff: Diff) -> None:
    if "container" in diff:
        if diff["container"] is None:
            tree.pop(member, None)
        else:
            tree[member] = diff["container"]
        return
    if not diff:
        return
    name = KEYED[member]
    entries = {r["name"]: r for r in tree.get(member, {}).get(name, [])}
    order = _order(list(entries), diff.get("delete", []), diff.get("put", []))
    for gone in diff.get("delete", []):
        entries.pop(gone, None)
    for r in diff.get("put", []):
        entries[r["name"]] = r
    order = diff.get("order", order)
    tree[member] = {**tree.get(member, {}), name: [entries[n] for n in order]}


def encode(record: dict[str, Any]) -> bytes:
    text = json.dumps(record, separators=(",", ":")).encode()
    return b"%08x %s\n" % (zlib.crc32(text), text)


def decode(lines: bytes) -> tuple[list[dict[str, Any]], int]:
    """The whole records at the start of `lines`, and how many bytes they take (the rest is
    a torn or damaged tail)."""
    records: list[dict[str, Any]] = []
    good = 0
    while (end := lines.find(b"\n", good)) >= 0:
        line = lines[good : end + 1]
        if len(line) < 10 or line[8:9] != b" ":
            break
        text = line[9:-1]
        try:
            if int(line[:8], 16) != zlib.crc32(text):
                break
            records.append(json.loads(text))
        except ValueError:
            break
        good += len(line)
    return records, good
