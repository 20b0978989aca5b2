"""VXLAN flooding entries: where unknown and broadcast frames of a network go."""

from __future__ import annotations

from dataclasses import dataclass

from vnet.substrate.kernel import Kernel
from vnet.substrate.marks import NsName

ZERO_MAC = "00:00:00:00:00:00"


@dataclass(frozen=True)
class Fdb:
    """A flooding entry: send unknown/broadcast frames of `dev` to VTEP `dst`."""

    ns: NsName
    dev: str
    dst: str


def _bridge(ns: NsName) -> str:
    return f"bridge -n {ns} " if ns else "bridge "


@dataclass(frozen=True)
class AddFdb:
    fdb: Fdb

    def run(self, k: Kernel) -> None:
        k.fdb(self.fdb.ns, "append", self.fdb.dev, lladdr=ZERO_MAC, dst=self.fdb.dst)

    def inverse(self) -> DeleteFdb:
        return DeleteFdb(self.fdb)

    def describe(self) -> str:
        f = self.fdb
        return f"{_bridge(f.ns)}fdb append {ZERO_MAC} dev {f.dev} dst {f.dst}"


@dataclass(frozen=True)
class DeleteFdb:
    fdb: Fdb

    def run(self, k: Kernel) -> None:
        k.fdb(self.fdb.ns, "del", self.fdb.dev, lladdr=ZERO_MAC, dst=self.fdb.dst)

    def inverse(self) -> AddFdb:
        return AddFdb(self.fdb)

    def describe(self) -> str:
        f = self.fdb
        return f"{_bridge(f.ns)}fdb del {ZERO_MAC} dev {f.dev} dst {f.dst}"


def read(k: Kernel, ns: NsName, vxlans: dict[int, str]) -> set[Fdb]:
    """One dump per namespace: the kernel answers with every bridge's entries anyway."""
    out = set()
    for msg in k.fdb_entries(ns):
        index = msg["ifindex"]
        if index in vxlans and msg.get("lladdr") == ZERO_MAC and msg.get("dst"):
            out.add(Fdb(ns, vxlans[index], msg.get("dst")))
    return out
