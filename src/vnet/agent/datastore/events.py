"""What a commit changed and what the host's underlay did, told to whoever listens
(NETCONF notifications, SNMP traps)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass
from typing import Any

from vnet.model.yang import host as codec
from vnet.model.yang.guarantees import connections_of, locators_of


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
    before = {r["name"]: r for r in codec.routers_of(old)}
    after = {r["name"]: r for r in codec.routers_of(new)}
    # a VR's connection pieces and locators are part of what it does
    pieces_before, pieces_after = router_pieces(old), router_pieces(new)
    events = []
    for name, r in after.items():
        if name not in before:
            events.append(Event(name, r.get("index"), "create", "success"))
        elif before[name] != r or pieces_before.get(name) != pieces_after.get(name):
            events.append(Event(name, r.get("index"), "modify", "success"))
    for name, r in before.items():
        if name not in after:
            events.append(Event(name, r.get("index"), "delete", "success"))
    return events


def router_pieces(tree: dict[str, Any]) -> dict[str, list[Any]]:
    """VR name -> the locators and connection pieces that name it, in tree order."""
    out: dict[str, list[Any]] = {}
    for loc in locators_of(tree):
        out.setdefault(loc["router"], []).append(loc)
    for conn in connections_of(tree):
        for kind in ("ingress", "transit", "egress"):
            for piece in conn.get(kind, []):
                out.setdefault(piece["router"], []).append((conn["name"], conn["id"], kind, piece))
    return out
