"""The host's underlay interfaces, watched: each change of their operational state is
an event on the datastore's bus (NETCONF `underlay-event`, SNMP linkDown/linkUp), the
way a manager learns that a link of the substrate failed or came back.

The kernel tells of every link change on a netlink multicast group, so a carrier lost
is heard within milliseconds without polling. The watcher keeps the last state it heard
of every interface of the host's namespace and reports only the interfaces the running
configuration names under `underlay` (those carry the tenants' traffic); an interface it
hears of for the first time is a state, not a change. If the kernel drops notifications
(the socket's buffer overflowed), the watcher asks for every link again and reports the
difference.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import socket

from vnet.agent.datastore import Datastore
from vnet.agent.datastore.events import UnderlayEvent
from vnet.model.yang.guarantees import underlay_of
from vnet.substrate import rtquery
from vnet.substrate.marks import NsName
from vnet.substrate.rtquery import IFF_UP, LinkBrief, link_monitor

log = logging.getLogger("vnet.agent.underlay")


class UnderlayWatcher:
    def __init__(self, ds: Datastore, ns: NsName):
        self.ds = ds
        self.ns = ns
        self.running: dict[str, bool] = {}  # interface -> up with a carrier, as last heard
        self._sock: socket.socket | None = None
        self._dumps = 1  # the sequence number of the last dump asked for

    def start(self) -> None:
        self._sock = link_monitor(self.ns)
        asyncio.get_running_loop().add_reader(self._sock.fileno(), self._readable)

    def close(self) -> None:
        if self._sock is not None:
            asyncio.get_running_loop().remove_reader(self._sock.fileno())
            self._sock.close()
            self._sock = None

    def heard(self, links: list[LinkBrief]) -> list[UnderlayEvent]:
        """Record what the kernel said; the changes of watched interfaces, as events."""
        watched = {itf["name"] for itf in underlay_of(self.ds.running_snapshot())}
        events = []
        for link in links:
            before = self.running.get(link.name)
            self.running[link.name] = link.running
            if before is not None and before != link.running and link.name in watched:
                events.append(
                    UnderlayEvent(link.name, link.index, link.running, bool(link.flags & IFF_UP))
                )
        return events

    def _readable(self) -> None:
        assert self._sock is not None
        try:
            data = self._sock.recv(1 << 16)
        except BlockingIOError:
            return
        except OSError as err:
            if err.errno != errno.ENOBUFS:
                raise
            log.warning("link notifications lost (buffer full): reading every link again")
            self._dumps += 1
            self._sock.send(rtquery.getlink_dump_request(self._dumps))
            return
        events = self.heard(rtquery.link_changes(data))
        for event in events:
            log.info("underlay interface %s is %s", event.interface, "up" if event.up else "down")
        if events:
            self.ds.events.publish(events)


def watch(ds: Datastore) -> UnderlayWatcher:
    """Start watching the underlay of the agent's host (in the running event loop)."""
    watcher = UnderlayWatcher(ds, ds.placement.host_ns(ds.config.host))
    watcher.start()
    return watcher
