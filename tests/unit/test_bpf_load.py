"""An eBPF load the verifier abandoned for a signal (EAGAIN) is tried again, a bounded
number of times (libc stands in for the kernel: a signal cannot be timed into a load)."""

from __future__ import annotations

import ctypes
import errno
from typing import Any

import pytest

from vnet.substrate import bpf


class Verifier:
    """bpf(2) that answers EAGAIN `interrupted` times, then a descriptor."""

    def __init__(self, interrupted: int) -> None:
        self.interrupted, self.calls = interrupted, 0

    def syscall(self, *args: Any) -> int:
        self.calls += 1
        if self.calls <= self.interrupted:
            ctypes.set_errno(errno.EAGAIN)
            return -1
        return 42


def loading(monkeypatch: pytest.MonkeyPatch, interrupted: int) -> Verifier:
    verifier = Verifier(interrupted)
    monkeypatch.setattr(bpf.ctypes, "CDLL", lambda *a, **k: verifier)
    return verifier


def test_a_load_interrupted_by_signals_is_tried_again(monkeypatch: pytest.MonkeyPatch) -> None:
    verifier = loading(monkeypatch, bpf.LOAD_ATTEMPTS - 1)
    assert bpf.load_sched_cls(bpf.insn(bpf.EXIT), "t") == 42
    assert verifier.calls == bpf.LOAD_ATTEMPTS


def test_a_load_interrupted_every_time_fails_with_the_reason(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    verifier = loading(monkeypatch, bpf.LOAD_ATTEMPTS)
    with pytest.raises(bpf.BpfError, match="Resource temporarily unavailable"):
        bpf.load_sched_cls(bpf.insn(bpf.EXIT), "t")
    assert verifier.calls == bpf.LOAD_ATTEMPTS
