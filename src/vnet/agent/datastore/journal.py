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
from typing import Any

from vnet.model.yang.guarantees import SRV6
from vnet.model.yang.module import ROUTERS

Tree = dict[str, Any]
Diff = dict[str, Any]  # a container's: "container" (whole, None: gone) or put/delete/order
BEFORE = "before"  # a record's rollback point: the configuration before the record
# top-level members whose list is journalled entry by entry -> that list
KEYED = {ROUTERS: "router", SRV6: "connection"}
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
# that their ids stay theirs): a commit asks for the same one three times (its checks, its
# events, its record), and each walks every entry; trees are never changed in place, so
# the same two containers have the same change
_last: dict[str, tuple[Tree | None, Tree | None, Diff]] = {}


def member_change(old: Tree | None, new: Tree | None, entries: str) -> Diff:
    """A keyed container's change: its list entry by entry, or the whole container when
    anything else of it changed (rare: the container itself, its other members). A new
    dict each time (its lists are shared: never change them)."""
    last = _last.get(entries)
    if last is not None and last[0] is old and last[1] is new:
        return dict(last[2])
    diff = _member_change(old, new, entries)
    _last[entries] = (old, new, diff)
    return dict(diff)


def _member_change(old: Tree | None, new: Tree | None, entries: str) -> Diff:
    if old is None and new is None:
        return {}
    if old is None or new is None or _shape(old, entries) != _shape(new, entries):
        return {"container": new}
    return _list_change(old.get(entries, []), new.get(entries, []))


def _shape(container: Tree, entries: str) -> tuple[bool, Tree]:
    """Whether the container has the list at all, and its other members."""
    return entries in container, {k: v for k, v in container.items() if k != entries}


def _list_change(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> Diff:
    before = {r["name"]: r for r in old}
    after_names = [r["name"] for r in new]
    # (an entry the new tree shares with the old one is the same: trees are never changed
    # in place, and comparing thousands of unchanged entries was most of a small diff)
    put = [r for r in new if (was := before.get(r["name"])) is not r and was != r]
    after = set(after_names)
    delete = [name for name in before if name not in after]
    out: Diff = {}
    if put:
        out["put"] = put
    if delete:
        out["delete"] = delete
    if _order(list(before), delete, put) != after_names:
        out["order"] = after_names
    return out


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
    routers = {k: record[k] for k in ("put", "delete", "order") if k in record}
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
