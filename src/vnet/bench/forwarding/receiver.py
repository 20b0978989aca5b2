"""The receiving end of a forwarding run: an eBPF drop at ingress, frozen neighbours."""

from __future__ import annotations

import os
from collections.abc import Sequence

from vnet.substrate import Kernel, neigh, tc
from vnet.substrate.bpf import (
    EXIT,
    JNE_K,
    LDX_W,
    MOV_K,
    SKB_PROTOCOL,
    TC_ACT_OK,
    TC_ACT_SHOT,
    BpfError,
    insn,
    load_sched_cls,
)
from vnet.tools.errors import ToolError

# -- the receiver: drop at ingress -------------------------------------------------

ETH_P_IP_IN_SKB = 0x0008  # htons(0x0800) as __sk_buff.protocol reads on little-endian

# Drop IPv4, pass the rest: ARP must still answer, or routers stop resolving dst.
DROP_IPV4 = b"".join(
    [
        insn(LDX_W, 0, 1, SKB_PROTOCOL),  # r0 = skb->protocol
        insn(JNE_K, 0, 0, 2, ETH_P_IP_IN_SKB),  # if r0 != IPv4 goto pass
        insn(MOV_K, 0, 0, 0, TC_ACT_SHOT),  # r0 = TC_ACT_SHOT
        insn(EXIT),
        insn(MOV_K, 0, 0, 0, TC_ACT_OK),  # pass: r0 = TC_ACT_OK
        insn(EXIT),
    ]
)


def load_drop_program() -> int:
    """Load DROP_IPV4 as a tc classifier; returns its file descriptor."""
    try:
        return load_sched_cls(DROP_IPV4, "vnet_drop")
    except BpfError as err:
        raise ToolError(str(err)) from None


def attach_ingress_drop(ns: str, ifname: str) -> None:
    """clsact + the drop program on `ifname`'s ingress; it goes with the namespace."""
    fd = load_drop_program()
    try:
        with Kernel() as k:
            tc.attach_ingress_bpf(k, ns, ifname, fd, "vnet_drop")
    finally:
        os.close(fd)  # the filter holds the program


def freeze_neighbours(namespaces: Sequence[str]) -> int:
    """Make the ARP entries the reachability pings learnt permanent; returns how many.

    The flood is one-way, so nothing confirms a neighbour: after ~30 s an
    entry is probed again, and an ARP reply lost in a full backlog stalls a
    hop for seconds. Testers use static ARP for this reason; the forwarding
    work per packet stays the same.
    """
    with Kernel() as k:
        return sum(neigh.freeze_learned(k, ns) for ns in namespaces)
