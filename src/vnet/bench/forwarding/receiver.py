"""The receiving end of a forwarding run: an eBPF drop at ingress, frozen neighbours."""

from __future__ import annotations

import os
from collections.abc import Sequence

from vnet.substrate import Kernel, neigh, tc
from vnet.substrate.bpf import (
    ADD_K,
    EXIT,
    JGT_X,
    JNE_K,
    LDX_B,
    LDX_H,
    LDX_W,
    MOV_K,
    MOV_X,
    SKB_DATA,
    SKB_DATA_END,
    TC_ACT_OK,
    TC_ACT_SHOT,
    BpfError,
    insn,
    load_sched_cls,
)
from vnet.tools.errors import ToolError

# -- the receiver: drop at ingress -------------------------------------------------

# Header fields as read little-endian from the frame (so the constants are byte-swapped).
ETHERTYPE_IPV4_LE = 0x0008  # 0x0800 at frame offset 12
IPV4_NO_OPTIONS = 0x45  # version 4, header length 5 words, at offset 14
IPPROTO_UDP = 17  # at offset 23
DISCARD_PORT_LE = 0x0900  # UDP port 9 (trafgen's destination), at offset 36


def _unless(offset: int, size: int, value: int, to_pass: int) -> list[bytes]:
    """r4 = the field at `offset`; if r4 != value goto pass (`to_pass` instructions on)."""
    return [insn(size, 4, 2, offset), insn(JNE_K, 4, 0, to_pass, value)]


# Drop the generator's datagrams (IPv4 UDP to the discard port), pass the rest: ARP
# must still answer, or routers stop resolving dst, and fping and iperf3 still work.
DROP_DISCARD = b"".join(
    [
        insn(LDX_W, 2, 1, SKB_DATA),
        insn(LDX_W, 3, 1, SKB_DATA_END),
        insn(MOV_X, 4, 2),
        insn(ADD_K, 4, 0, 0, 38),
        insn(JGT_X, 4, 3, 10),  # a frame shorter than Ethernet + IPv4 + UDP ports: pass
        *_unless(12, LDX_H, ETHERTYPE_IPV4_LE, 8),
        *_unless(14, LDX_B, IPV4_NO_OPTIONS, 6),
        *_unless(23, LDX_B, IPPROTO_UDP, 4),
        *_unless(36, LDX_H, DISCARD_PORT_LE, 2),
        insn(MOV_K, 0, 0, 0, TC_ACT_SHOT),
        insn(EXIT),
        insn(MOV_K, 0, 0, 0, TC_ACT_OK),  # pass
        insn(EXIT),
    ]
)


def load_drop_program() -> int:
    """Load DROP_DISCARD as a tc classifier; returns its file descriptor."""
    try:
        return load_sched_cls(DROP_DISCARD, "vnet_drop")
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
