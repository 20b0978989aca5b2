"""A commit as the difference between two configuration trees, and its journal record.

The journal (persist.py) holds one record per commit, not the whole tree: the
routers put (created or changed, by name) and deleted, any other top-level
member set or removed whole (networks, guarantees: small), and the routers'
order when the change alone would not give it. `replay(old, change(old, new))`
equals `new`, so a configuration rebuilt from a snapshot and its records is the
one that was committed.

A record is one line: the CRC-32 of its JSON text in hex, a space, the JSON,
a newline. A line that is cut short (a crash in the middle of its write) or
fails its checksum ends the journal: nothing after it was ever acknowledged.
"""

from __future__ import annotations

import json
import zlib
from typing import Any

from vnet.model.yang.module import ROUTERS

Tree = dict[str, Any]
BEFORE = "before"  # a record's rollback point: the configuration before the record


def change(old: Tree, new: Tree) -> dict[str, Any]:
    """What turns `old` into `new`, of a size that follows the change, not the trees."""
    out: dict[str, Any] = {}
    set_: dict[str, Any] = {}
    for key, value in new.items():
        if key != ROUTERS and old.get(key) != value:
            set_[key] = value
    if set_:
        out["set"] = set_
    if unset := [key for key in old if key not in new and key != ROUTERS]:
        out["unset"] = unset
    old_c, new_c = old.get(ROUTERS), new.get(ROUTERS)
    if _other_members(old_c) != _other_members(new_c) or (new_c is None) != (old_c is None):
        out["routers-container"] = new_c  # rare: the container itself changed
        return out
    if new_c is not None:
        out.update(_router_change(old_c.get("router", []), new_c.get("router", [])))  # type: ignore[union-attr]
    return out


def _other_members(container: dict[str, Any] | None) -> dict[str, Any]:
    return {k: v for k, v in (container or {}).items() if k != "router"}


def _router_change(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> dict[str, Any]:
    before = {r["name"]: r for r in old}
    after_names = [r["name"] for r in new]
    put = [r for r in new if before.get(r["name"]) != r]
    after = set(after_names)
    delete = [name for name in before if name not in after]
    out: dict[str, Any] = {}
    if put:
        out["put"] = put
    if delete:
        out["delete"] = delete
    if _order(list(before), delete, put) != after_names:
        out["order"] = after_names
    return out


def _order(old_names: list[str], delete: list[str], put: list[dict[str, Any]]) -> list[str]:
    """The routers' order `replay` gives without an explicit order: kept ones where they
    were, new ones appended in the order put."""
    gone = set(delete)
    names = [n for n in old_names if n not in gone]
    known = set(names)
    return names + [r["name"] for r in put if r["name"] not in known]


def replay(old: Tree, record: dict[str, Any]) -> Tree:
    """`old` with a record's change applied (a new tree; `old` is not changed)."""
    tree = {k: v for k, v in old.items() if k not in record.get("unset", ())}
    tree.update(record.get("set", {}))
    if "routers-container" in record:
        container = record["routers-container"]
        if container is None:
            tree.pop(ROUTERS, None)
        else:
            tree[ROUTERS] = container
        return tree
    if not any(k in record for k in ("put", "delete", "order")):
        return tree
    routers = {r["name"]: r for r in tree.get(ROUTERS, {}).get("router", [])}
    order = _order(list(routers), record.get("delete", []), record.get("put", []))
    for name in record.get("delete", []):
        routers.pop(name, None)
    for r in record.get("put", []):
        routers[r["name"]] = r
    order = record.get("order", order)
    tree[ROUTERS] = {**tree.get(ROUTERS, {}), "router": [routers[n] for n in order]}
    return tree


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
