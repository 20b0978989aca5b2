"""What a commit changed and what the host's underlay did, told to whoever listens
(NETCONF notifications, SNMP traps)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass
from typing import Any

from vnet.agent.datastore import journal
from vnet.model.yang import host as codec
from vnet.model.yang.guarantees import SRV6, connections_of, locators_of


@dataclass
class Event:
    """A VR operation's outcome, for NETCONF notifications and SNMP traps."""

    router: str
    index: int | None
    operation: str  # create, modify, delete
    result: str  # success, failure
    message: str = ""
    time: float = 0.0


@dataclass
class UnderlayEvent:
    """An underlay interface's operational state changed: its carrier went or came back,
    or it was set down, deleted or made again."""

    interface: str
    index: int  # the kernel's ifindex (SNMP's ifIndex); 0 once deleted
    up: bool  # up with a carrier (ifOperStatus)
    admin_up: bool  # set up (ifAdminStatus)
    time: float = 0.0


Notice = Event | UnderlayEvent


class EventBus:
    """Bounded queues, one per subscriber: a slow listener loses events, never blocks a commit."""

    def __init__(self) -> None:
        self.subscribers: set[asyncio.Queue[Notice]] = set()

    def subscribe(self) -> asyncio.Queue[Notice]:
        queue: asyncio.Queue[Notice] = asyncio.Queue(maxsize=10000)
        self.subscribers.add(queue)
        return queue

    def unsubscribe(self, queue: asyncio.Queue[Notice]) -> None:
        self.subscribers.discard(queue)

    def publish(self, events: list[Event] | list[UnderlayEvent]) -> None:
        for event in events:
            event.time = time.time()
            for queue in list(self.subscribers):
                with contextlib.suppress(asyncio.QueueFull):
                    queue.put_nowait(event)


def diff_events(old: dict[str, Any], new: dict[str, Any]) -> list[Event]:
    """One event per VR created, modified or deleted between two trees."""
    # a VR's connection pieces and locators are part of what it does
    pieces_changed = routers_with_other_pieces(old, new)
    listed = journal.router_change(old, new)
    if listed is None or pieces_changed - {r["name"] for r in listed.put}:
        return _events_between(old, new, pieces_changed)
    # the VR list's change entry by entry: what the commit changed, not every VR
    events = [
        Event(
            r["name"], r.get("index"), "modify" if r["name"] in listed.was else "create", "success"
        )
        for r in listed.put
    ]
    for name in listed.delete:
        events.append(Event(name, listed.was[name].get("index"), "delete", "success"))
    return events


def _events_between(
    old: dict[str, Any], new: dict[str, Any], pieces_changed: set[str]
) -> list[Event]:
    """diff_events, every VR of both trees looked at."""
    before = {r["name"]: r for r in codec.routers_of(old)}
    after = {r["name"]: r for r in codec.routers_of(new)}
    events = []
    for name, r in after.items():
        if name not in before:
            events.append(Event(name, r.get("index"), "create", "success"))
        elif (before[name] is not r and before[name] != r) or name in pieces_changed:
            events.append(Event(name, r.get("index"), "modify", "success"))
    for name, r in before.items():
        if name not in after:
            events.append(Event(name, r.get("index"), "delete", "success"))
    return events


def routers_with_other_pieces(old: dict[str, Any], new: dict[str, Any]) -> set[str]:
    """The VRs whose locators and connection pieces (`router_pieces`) differ between two
    trees. When only some connections changed (put or deleted, the others where they were),
    only theirs are compared: building every VR's pieces was most of a commit of one
    connection among thousands."""
    diff = journal.member_change(old.get(SRV6), new.get(SRV6), journal.KEYED[SRV6])
    if "container" in diff or "order" in diff:  # the locators, or the connections' order
        return _differing(router_pieces(old), router_pieces(new))
    names = set(diff.get("delete", [])) | {c["name"] for c in diff.get("put", [])}
    was = {c["name"]: c for c in connections_of(old) if c["name"] in names}
    now = {c["name"]: c for c in diff.get("put", [])}
    changed: set[str] = set()
    for name in names:
        changed |= _differing(_pieces_of(was.get(name)), _pieces_of(now.get(name)))
    return changed


def _differing(before: dict[str, list[Any]], after: dict[str, list[Any]]) -> set[str]:
    return {name for name in before.keys() | after.keys() if before.get(name) != after.get(name)}


def router_pieces(tree: dict[str, Any]) -> dict[str, list[Any]]:
    """VR name -> the locators and connection pieces that name it, in tree order."""
    out: dict[str, list[Any]] = {}
    for loc in locators_of(tree):
        out.setdefault(loc["router"], []).append(loc)
    _add_pieces(out, connections_of(tree))
    return out


def _pieces_of(conn: dict[str, Any] | None) -> dict[str, list[Any]]:
    """VR name -> the pieces of one connection entry (None: none) that name it."""
    out: dict[str, list[Any]] = {}
    _add_pieces(out, [conn] if conn is not None else [])
    return out


def _add_pieces(out: dict[str, list[Any]], connections: list[dict[str, Any]]) -> None:
    for conn in connections:
        for kind in ("ingress", "transit", "egress"):
            for piece in conn.get(kind, []):
                out.setdefault(piece["router"], []).append((conn["name"], conn["id"], kind, piece))
