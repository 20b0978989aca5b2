"""The receiving end of a forwarding run: an eBPF drop at ingress, frozen neighbours."""

from __future__ import annotations

import ctypes
import os
import struct
from collections.abc import Sequence

from vnet.substrate import Kernel, neigh, tc
from vnet.tools.errors import ToolError

# -- the receiver: drop at ingress -------------------------------------------------

SYS_BPF = 321  # x86_64
BPF_PROG_LOAD = 5
BPF_PROG_TYPE_SCHED_CLS = 3
TC_ACT_OK, TC_ACT_SHOT = 0, 2
ETH_P_IP_IN_SKB = 0x0008  # htons(0x0800) as __sk_buff.protocol reads on little-endian


def _insn(code: int, dst: int = 0, src: int = 0, off: int = 0, imm: int = 0) -> bytes:
    return struct.pack("<BBhi", code, (src << 4) | dst, off, imm)


# Drop IPv4, pass the rest: ARP must still answer, or routers stop resolving dst.
DROP_IPV4 = b"".join(
    [
        _insn(0x61, 0, 1, 16),  # r0 = skb->protocol
        _insn(0x55, 0, 0, 2, ETH_P_IP_IN_SKB),  # if r0 != IPv4 goto pass
        _insn(0xB7, 0, 0, 0, TC_ACT_SHOT),  # r0 = TC_ACT_SHOT
        _insn(0x95),  # exit
        _insn(0xB7, 0, 0, 0, TC_ACT_OK),  # pass: r0 = TC_ACT_OK
        _insn(0x95),  # exit
    ]
)


def load_drop_program() -> int:
    """Load DROP_IPV4 as a tc classifier; returns its file descriptor."""
    libc = ctypes.CDLL(None, use_errno=True)
    insns = ctypes.create_string_buffer(DROP_IPV4, len(DROP_IPV4))
    license_ = ctypes.create_string_buffer(b"GPL")
    log = ctypes.create_string_buffer(4096)
    attr = struct.pack(
        "<IIQQIIQII16s",
        BPF_PROG_TYPE_SCHED_CLS,
        len(DROP_IPV4) // 8,
        ctypes.addressof(insns),
        ctypes.addressof(license_),
        1,  # log level: say why if the verifier refuses
        len(log),
        ctypes.addressof(log),
        0,
        0,
        b"vnet_drop",
    )
    buf = ctypes.create_string_buffer(attr, 128)
    fd = libc.syscall(SYS_BPF, BPF_PROG_LOAD, buf, len(buf))
    if fd < 0:
        err = ctypes.get_errno()
        raise ToolError(
            f"loading the eBPF drop program failed: {os.strerror(err)}: {log.value.decode()}"
        )
    return int(fd)


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
