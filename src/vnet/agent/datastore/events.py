"""What a commit changed, told to whoever listens (NETCONF notifications, SNMP traps)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass
from typing import Any

from vnet.model.yang import host as codec


@dataclass
class Event:
    """A VR operation's outcome, for NETCONF notifications and SNMP traps."""

    router: str
    index: int | None
    operation: str  # create, modify, delete
    result: str  # success, failure
    message: str = ""
    time: float = 0.0


class EventBus:
    """Bounded queues, one per subscriber: a slow listener loses events, never blocks a commit."""

    def __init__(self) -> None:
        self.subscribers: set[asyncio.Queue[Event]] = set()

    def subscribe(self) -> asyncio.Queue[Event]:
        queue: asyncio.Queue[Event] = asyncio.Queue(maxsize=10000)
        self.subscribers.add(queue)
        return queue

    def unsubscribe(self, queue: asyncio.Queue[Event]) -> None:
        self.subscribers.discard(queue)

    def publish(self, events: list[Event]) -> None:
        for event in events:
            event.time = time.time()
            for queue in list(self.subscribers):
                with contextlib.suppress(asyncio.QueueFull):
                    queue.put_nowait(event)


def diff_events(old: dict[str, Any], new: dict[str, Any]) -> list[Event]:
    """One event per VR created, modified or deleted between two trees."""
    before = {r["name"]: r for r in codec.routers_of(old)}
    after = {r["name"]: r for r in codec.routers_of(new)}
    events = []
    for name, r in after.items():
        if name not in before:
            events.append(Event(name, r.get("index"), "create", "success"))
        elif before[name] != r:
            events.append(Event(name, r.get("index"), "modify", "success"))
    for name, r in before.items():
        if name not in after:
            events.append(Event(name, r.get("index"), "delete", "success"))
    return events
