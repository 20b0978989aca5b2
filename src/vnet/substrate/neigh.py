"""Neighbour (ARP/NDP) entries. vnet creates none: it makes routers find their next hops
before a path switch, and benchmarks pin what pings learnt."""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Iterable

from vnet.substrate import nsfs
from vnet.substrate.kernel import Kernel
from vnet.substrate.marks import NsName
from vnet.tools.wait import WaitTimeout, wait_until

NUD_PERMANENT = 0x80
NUD_LEARNED = 0x02 | 0x04 | 0x08 | 0x10  # REACHABLE, STALE, DELAY, PROBE
NUD_USABLE = NUD_LEARNED | NUD_PERMANENT


def resolve_neighbours(k: Kernel, hops: Iterable[tuple[NsName, str]], timeout: float = 2.0) -> None:
    """Make every router on a path know its next hop's link-layer address.

    A datagram to the discard port starts neighbour discovery (the answer is a
    harmless "port unreachable"); without this the first packets of a switched
    flow would wait in, and overflow, a 3-packet queue per unresolved neighbour.
    """

    def resolved(ns: NsName, addr: str) -> bool:
        found = k.neighbours(ns, socket.AF_INET6, dst=addr)
        return any(n["state"] & NUD_USABLE for n in found)

    # a next hop known already (a path used before, or sharing a link with one in use) is
    # not probed: probing waits at least a round (5 ms) even when every answer is there
    pending = [(ns, addr) for ns, addr in hops if not resolved(ns, addr)]

    def all_resolved() -> bool:
        nonlocal pending
        for ns, addr in pending:
            _probe(ns, addr)
        time.sleep(0.005)  # most answers arrive within this, saving a round
        pending = [(ns, addr) for ns, addr in pending if not resolved(ns, addr)]
        return not pending

    if not pending:
        return
    try:
        wait_until(all_resolved, timeout, "next hops to answer neighbour discovery", 0.05)
    except WaitTimeout:
        ns, addr = pending[0]
        raise OSError(f"next hop {addr} does not answer neighbour discovery in {ns}") from None


def _probe(ns: NsName, addr: str) -> None:
    with nsfs.entered(ns):
        probe = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    with probe, contextlib.suppress(OSError):  # no route yet: retried, then reported
        probe.sendto(b"", (addr, 9))


def freeze_learned(k: Kernel, ns: NsName) -> int:
    """Make the IPv4 neighbour entries `ns` has learnt permanent; returns how many."""
    frozen = 0
    for entry in k.neighbours(ns, socket.AF_INET):
        mac, dst = entry.get_attr("NDA_LLADDR"), entry.get_attr("NDA_DST")
        if mac and dst and entry["state"] & NUD_LEARNED:
            k.neighbour(
                ns, "replace", dst=dst, lladdr=mac, ifindex=entry["ifindex"], state=NUD_PERMANENT
            )
            frozen += 1
    return frozen
