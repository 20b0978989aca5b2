"""Random loss on a port: an eBPF tc program on its egress that drops a share of the packets.

For failure injection in labs (`vnet lab link set NAME --loss 2%`). This kernel
has no netem qdisc, so loss is a classifier instead: each packet draws
bpf_get_prandom_u32() and is dropped (TC_ACT_SHOT) when the draw falls below
share * 2^32, else passes (TC_ACT_OK). It sits in clsact's egress hook, beside
whatever root qdisc shapes the port (the management class's HTB), and under a
handle of its own so setting 0 % removes exactly it.
"""

from __future__ import annotations

import os
from fractions import Fraction

from vnet.substrate.bpf import (
    CALL,
    EXIT,
    JGT_X,
    MOV_K,
    TC_ACT_OK,
    TC_ACT_SHOT,
    insn,
    load_sched_cls,
)
from vnet.substrate.kernel import Kernel
from vnet.substrate.marks import MARK, NsName

CLSACT_EGRESS = 0xFFFFFFF3
PRIO, HANDLE = 7, 7  # apart from other egress filters
BPF_FUNC_GET_PRANDOM_U32 = 7
LD_IMM64 = 0x18  # dst = 64-bit immediate, in two instruction slots


def threshold(share: Fraction) -> int:
    """Draws below this (of 2^32) are dropped."""
    if not 0 <= share <= 1:
        raise ValueError(f"a loss share is between 0 and 1, not {share}")
    return round(share * 2**32)


def program(share: Fraction) -> bytes:
    limit = threshold(share)
    return b"".join(
        [
            insn(CALL, imm=BPF_FUNC_GET_PRANDOM_U32),  # r0 = random u32
            insn(LD_IMM64, dst=1, imm=limit & 0xFFFFFFFF),  # r1 = limit (64 bit)
            insn(0, imm=limit >> 32),
            insn(JGT_X, dst=1, src=0, off=2),  # r1 > r0: the draw is below the limit, drop
            insn(MOV_K, dst=0, imm=TC_ACT_OK),
            insn(EXIT),
            insn(MOV_K, dst=0, imm=TC_ACT_SHOT),
            insn(EXIT),
        ]
    )


def set_loss(k: Kernel, ns: NsName, port: str, share: Fraction) -> None:
    """`share` of what leaves `port` is dropped from now on; 0 removes the program."""
    if share == 0:
        k.tc(
            ns,
            "del-filter",
            "bpf",
            port,
            missing_ok=True,
            parent=CLSACT_EGRESS,
            prio=PRIO,
            handle=HANDLE,
        )
        return
    fd = load_sched_cls(program(share), "vnet_loss")
    try:
        k.tc(ns, "add", "clsact", port, missing_ok=True)  # may be there already
        k.tc(
            ns,
            "replace-filter",
            "bpf",
            port,
            parent=CLSACT_EGRESS,
            prio=PRIO,
            handle=HANDLE,
            fd=fd,
            name=f"{MARK} loss {float(share):.4%}",
            direct_action=True,
        )
    finally:
        os.close(fd)  # the filter holds the program
