"""Neighbour (ARP/NDP) entries. vnet creates none; benchmarks pin what pings learnt."""

from __future__ import annotations

import socket

from vnet.substrate.kernel import Kernel
from vnet.substrate.marks import NsName

NUD_PERMANENT = 0x80
NUD_LEARNED = 0x02 | 0x04 | 0x08 | 0x10  # REACHABLE, STALE, DELAY, PROBE


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
