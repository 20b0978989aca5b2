"""The content of the NETCONF notifications (RFC 5277) the datastore's events become."""

from __future__ import annotations

from typing import Any

from vnet.agent.datastore.events import Notice, UnderlayEvent
from vnet.agent.nacm import Nacm
from vnet.model.yang import encode, schema


def notification_xml(
    notice: Notice, nacm: Nacm, user: str | None, running: dict[str, Any]
) -> str | None:
    """The notification's content as XML, or None if `user` may not read what it is
    about (RFC 8341 3.4.6)."""
    if isinstance(notice, UnderlayEvent):
        if not nacm.may_read_underlay(user, running, notice.interface):
            return None
        name = "underlay-event"
        event: dict[str, Any] = {
            "interface": notice.interface,
            "oper-status": "up" if notice.up else "down",
        }
    else:
        if not nacm.may_read_router(user, running, notice.router):
            return None
        name = "router-event"
        event = {"router": notice.router, "index": notice.index}
        event.update(operation=notice.operation, result=notice.result)
        event.update(message=notice.message or None)
    content = {k: v for k, v in event.items() if v is not None}
    return encode.to_xml(name, content, schema.root().children[name])
