"""The contract of a kernel operation: data that runs, prints and knows its inverse."""

from __future__ import annotations

from typing import Protocol

from vnet.substrate.kernel import Kernel


class Op(Protocol):
    def run(self, k: Kernel) -> None: ...
    def inverse(self) -> Op: ...
    def describe(self) -> str: ...
