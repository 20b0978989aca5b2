"""Measured link use: the agents' HTB class byte counters, polled, turned into bit/s.

Every `interval` seconds each agent is asked for its class counters (`Agents.class_bytes`:
(underlay interface, class) -> bytes sent); the bytes of all classes of one underlay
interface are what the host sent into that link direction. The rate is the difference
between two polls (bytes * 8 / seconds). Only the last rate per direction is kept, in
memory: it is a gauge for the console and the topology view, not history.

The interface of a host towards a peer is named `ul-<peer>` (the lab's and the agents'
underlay port name); an interface the controller cannot place on a link is left out.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping

from vnet.controller.agents.realise import Agents
from vnet.tools.periodic import Periodic

log = logging.getLogger(__name__)

Arc = tuple[str, bool]
PORT_PREFIX = "ul-"


def arcs_of(host: str, links: Mapping[str, tuple[str, str]]) -> dict[str, Arc]:
    """Underlay interface name on `host` -> the link direction it sends into."""
    out = {}
    for name, (a, b) in links.items():
        if host == a:
            out[PORT_PREFIX + b] = (name, True)
        elif host == b:
            out[PORT_PREFIX + a] = (name, False)
    return out


def bytes_per_arc(
    counters: Mapping[tuple[str, str], int], placed: Mapping[str, Arc]
) -> dict[Arc, int]:
    """Bytes sent per link direction from one host's (interface, class) counters; `placed`:
    its arcs_of."""
    out: dict[Arc, int] = {}
    for (interface, _class), sent in counters.items():
        arc = placed.get(interface)
        if arc is not None:
            out[arc] = out.get(arc, 0) + sent
    return out


class UtilisationPoller:
    """The last measured rate per link direction, kept up to date in the background."""

    def __init__(self, agents: Agents, links: Mapping[str, tuple[str, str]], interval: float):
        self.agents = agents
        self.follow(links)
        self.rates: dict[Arc, int] = {}
        self._last: dict[Arc, tuple[float, int]] = {}
        self.periodic = Periodic(self.poll, interval, "utilisation-poller", at_start=True)

    def follow(self, links: Mapping[str, tuple[str, str]]) -> None:
        """The links to measure from now on (also when links are added or removed)."""
        self.links = dict(links)
        # each host's interfaces, worked out once: per poll over every link for every host
        # it was hosts x links each second (2 million steps at 1000 hosts)
        self.arcs = {
            host: arcs_of(host, self.links) for ends in self.links.values() for host in ends
        }

    def start(self) -> None:
        self.periodic.start()

    async def stop(self) -> None:
        await self.periodic.stop()

    async def poll(self) -> None:
        hosts = sorted(self.arcs)
        answers = await asyncio.gather(
            *(self.agents.class_bytes(h) for h in hosts), return_exceptions=True
        )
        now = time.monotonic()
        for host, counters in zip(hosts, answers, strict=True):
            if isinstance(counters, BaseException):
                log.debug("utilisation: host %s did not answer: %s", host, counters)
                continue
            for arc, sent in bytes_per_arc(counters, self.arcs[host]).items():
                self._update(arc, now, sent)

    def _update(self, arc: Arc, now: float, sent: int) -> None:
        before = self._last.get(arc)
        self._last[arc] = (now, sent)
        if before is None or now <= before[0] or sent < before[1]:
            return  # first sample, or counters reset (the agent restarted): wait for the next
        self.rates[arc] = int((sent - before[1]) * 8 / (now - before[0]))
