"""Tiny eBPF programs, assembled here and loaded with the bpf(2) system call.

vnet's programs are a handful of instructions each, so they are written as
bytecode in Python rather than compiled C: no clang, libbpf or object files
at run time, and the program a plan prints is the program that loads. (The
machine has clang and bpftool, but the Python side has no eBPF tooling:
pyroute2 attaches an already loaded program by its file descriptor, which is
all vnet needs from it.) The kernel's verifier checks every program on load.
"""

from __future__ import annotations

import ctypes
import errno
import os
import struct

SYS_BPF = 321  # x86_64
BPF_PROG_LOAD = 5
BPF_PROG_TYPE_SCHED_CLS = 3  # a tc classifier (cls_bpf, direct action)

# Opcodes used by vnet's programs (class | size/op | source).
LDX_W, LDX_H, LDX_B = 0x61, 0x69, 0x71  # dst = *(u32 *)(src + off), *(u16 *), *(u8 *)
MOV_K, MOV_X, ADD_K = 0xB7, 0xBF, 0x07  # dst = imm, dst = src, dst += imm
JGT_X = 0x2D  # if dst > src goto +off (64 bit, unsigned)
JNE32_K = 0x56  # if (u32) dst != imm goto +off
JNE_K = 0x55  # if dst != imm goto +off (64 bit)
CALL, EXIT = 0x85, 0x95

# struct __sk_buff offsets (include/uapi/linux/bpf.h)
SKB_DATA, SKB_DATA_END = 76, 80

# helper numbers (enum bpf_func_id)
BPF_FUNC_REDIRECT_PEER = 155

TC_ACT_OK, TC_ACT_SHOT = 0, 2
# The verifier gives up with EAGAIN when a signal arrives while it works (a profiler's
# stop, a child's exit); libbpf tries such a load again, up to five times in all.
LOAD_ATTEMPTS = 5


class BpfError(Exception):
    """The kernel refused a program; the message carries the verifier's log."""


def insn(code: int, dst: int = 0, src: int = 0, off: int = 0, imm: int = 0) -> bytes:
    """One 8-byte instruction; `imm` is taken as the low 32 bits, signed."""
    imm32 = (imm + 2**31) % 2**32 - 2**31
    return struct.pack("<BBhi", code, (src << 4) | dst, off, imm32)


def load_sched_cls(program: bytes, name: str) -> int:
    """Load `program` as a tc classifier; returns its file descriptor (caller closes)."""
    libc = ctypes.CDLL(None, use_errno=True)
    insns = ctypes.create_string_buffer(program, len(program))
    license_ = ctypes.create_string_buffer(b"GPL")  # bpf_redirect_peer is GPL-only
    log = ctypes.create_string_buffer(65536)
    attr = struct.pack(
        "<IIQQIIQII16s",
        BPF_PROG_TYPE_SCHED_CLS,
        len(program) // 8,
        ctypes.addressof(insns),
        ctypes.addressof(license_),
        1,  # log level: say why if the verifier refuses
        len(log),
        ctypes.addressof(log),
        0,
        0,
        name.encode()[:15],
    )
    buf = ctypes.create_string_buffer(attr, 128)
    for _ in range(LOAD_ATTEMPTS):
        fd = libc.syscall(SYS_BPF, BPF_PROG_LOAD, buf, len(buf))
        err = ctypes.get_errno() if fd < 0 else 0
        if err != errno.EAGAIN:
            break
    if fd < 0:
        raise BpfError(
            f"loading eBPF program {name!r} failed: {os.strerror(err)}: "
            f"{log.value.decode(errors='replace')[-2000:]}"
        )
    return int(fd)
