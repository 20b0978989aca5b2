"""Operations on connections (SRv6) and bandwidth (tc): run, exact inverse, iproute2 text."""

from __future__ import annotations

import time
from dataclasses import dataclass

from vnet.substrate import qos, srv6
from vnet.substrate.kernel import Kernel
from vnet.substrate.ops import Op
from vnet.substrate.qos import TcClass, TcFilter, TcRoot
from vnet.substrate.srv6 import SidRoute, SteerRoute, SteerRule
from vnet.substrate.state import NsName


def _tc(ns: NsName) -> str:
    return f"tc -n {ns}" if ns else "tc"


def _ip(ns: NsName, family: int) -> str:
    return (f"ip -n {ns}" if ns else "ip") + (" -6" if family == 6 else " -4")


# -- SRv6 ------------------------------------------------------------------------


@dataclass(frozen=True)
class AddSid:
    sid: SidRoute

    def run(self, k: Kernel) -> None:
        srv6.set_sid(k, self.sid, "add")

    def inverse(self) -> Op:
        return DeleteSid(self.sid)

    def describe(self) -> str:
        return f"{_ip(self.sid.ns, 6)} route add {self.sid.words()}"


@dataclass(frozen=True)
class DeleteSid:
    sid: SidRoute

    def run(self, k: Kernel) -> None:
        srv6.delete_sid(k, self.sid)

    def inverse(self) -> Op:
        return AddSid(self.sid)

    def describe(self) -> str:
        return f"{_ip(self.sid.ns, 6)} route del {self.sid.sid}/128 proto 118"


@dataclass(frozen=True)
class ReplaceSid:
    old: SidRoute
    new: SidRoute

    def run(self, k: Kernel) -> None:
        srv6.set_sid(k, self.new, "replace")

    def inverse(self) -> Op:
        return ReplaceSid(self.new, self.old)

    def describe(self) -> str:
        return f"{_ip(self.new.ns, 6)} route replace {self.new.words()}"


@dataclass(frozen=True)
class AddSteer:
    route: SteerRoute

    def run(self, k: Kernel) -> None:
        srv6.set_steer(k, self.route, "add")

    def inverse(self) -> Op:
        return DeleteSteer(self.route)

    def describe(self) -> str:
        return f"{_ip(self.route.ns, self.route.family)} route add {self.route.words()}"


@dataclass(frozen=True)
class DeleteSteer:
    route: SteerRoute

    def run(self, k: Kernel) -> None:
        srv6.delete_steer(k, self.route)

    def inverse(self) -> Op:
        return AddSteer(self.route)

    def describe(self) -> str:
        r = self.route
        return f"{_ip(r.ns, r.family)} route del {r.dst} table {r.table} proto 118"


@dataclass(frozen=True)
class SwitchPath:
    """The make-before-break switch: one atomic `ip route replace` of the encap route."""

    old: SteerRoute
    new: SteerRoute

    def run(self, k: Kernel) -> None:
        srv6.set_steer(k, self.new, "replace")

    def inverse(self) -> Op:
        return SwitchPath(self.new, self.old)

    def describe(self) -> str:
        return f"{_ip(self.new.ns, self.new.family)} route replace {self.new.words()}"


@dataclass(frozen=True)
class AddRule:
    rule: SteerRule

    def run(self, k: Kernel) -> None:
        srv6.add_rule(k, self.rule)

    def inverse(self) -> Op:
        return DeleteRule(self.rule)

    def describe(self) -> str:
        return f"{_ip(self.rule.ns, self.rule.family)} rule add {self.rule.words()}"


@dataclass(frozen=True)
class DeleteRule:
    rule: SteerRule

    def run(self, k: Kernel) -> None:
        srv6.delete_rule(k, self.rule)

    def inverse(self) -> Op:
        return AddRule(self.rule)

    def describe(self) -> str:
        return f"{_ip(self.rule.ns, self.rule.family)} rule del {self.rule.words()}"


@dataclass(frozen=True)
class WarmPath:
    """Resolve the next hops along new paths, so that the first packets are not lost."""

    hops: tuple[tuple[NsName, str], ...]  # (router namespace, next hop's IPv6 address)

    def run(self, k: Kernel) -> None:
        srv6.resolve_neighbours(k, self.hops)

    def inverse(self) -> Op:
        return self  # changes nothing vnet owns; neighbour entries age out by themselves

    def describe(self) -> str:
        return (
            " && ".join(
                f"ip netns exec {ns} ping -6 -c 1 -W 1 {addr} >/dev/null" for ns, addr in self.hops
            )
            + "  # resolve the new path's next hops"
        )


@dataclass(frozen=True)
class Drain:
    """Wait for packets still queued on an old path before its SIDs and queues go."""

    seconds: float

    def run(self, k: Kernel) -> None:
        time.sleep(self.seconds)

    def inverse(self) -> Op:
        return self  # undoing a switch deserves the same pause

    def describe(self) -> str:
        return f"sleep {self.seconds:g}  # let packets on the old path drain"


# -- tc --------------------------------------------------------------------------


@dataclass(frozen=True)
class AddTcRoot:
    root: TcRoot

    def run(self, k: Kernel) -> None:
        qos.add_root(k, self.root)

    def inverse(self) -> Op:
        return DeleteTcRoot(self.root)

    def describe(self) -> str:
        return f"{_tc(self.root.ns)} {self.root.describe()}"


@dataclass(frozen=True)
class DeleteTcRoot:
    root: TcRoot

    def run(self, k: Kernel) -> None:
        qos.delete_root(k, self.root)

    def inverse(self) -> Op:
        return AddTcRoot(self.root)

    def describe(self) -> str:
        return f"{_tc(self.root.ns)} qdisc del dev {self.root.dev} root handle 76:"


@dataclass(frozen=True)
class AddTcClass:
    cls: TcClass

    def run(self, k: Kernel) -> None:
        qos.set_class(k, self.cls, "add-class")

    def inverse(self) -> Op:
        return DeleteTcClass(self.cls)

    def describe(self) -> str:
        tc = _tc(self.cls.ns)
        return f"{tc} " + self.cls.describe("add").replace("tc{ns}", tc)


@dataclass(frozen=True)
class ChangeTcClass:
    old: TcClass
    new: TcClass

    def run(self, k: Kernel) -> None:
        qos.set_class(k, self.new, "change-class")

    def inverse(self) -> Op:
        return ChangeTcClass(self.new, self.old)

    def describe(self) -> str:
        tc = _tc(self.new.ns)
        return f"{tc} " + self.new.describe("change").replace("tc{ns}", tc)


@dataclass(frozen=True)
class DeleteTcClass:
    cls: TcClass

    def run(self, k: Kernel) -> None:
        qos.delete_class(k, self.cls)

    def inverse(self) -> Op:
        return AddTcClass(self.cls)

    def describe(self) -> str:
        c = self.cls
        return f"{_tc(c.ns)} class del dev {c.dev} classid {qos.fmt_handle(c.classid)}"


@dataclass(frozen=True)
class AddTcFilter:
    filter: TcFilter

    def run(self, k: Kernel) -> None:
        qos.add_filter(k, self.filter)

    def inverse(self) -> Op:
        return DeleteTcFilter(self.filter)

    def describe(self) -> str:
        return f"{_tc(self.filter.ns)} {self.filter.describe('add')}"


@dataclass(frozen=True)
class DeleteTcFilter:
    filter: TcFilter

    def run(self, k: Kernel) -> None:
        qos.delete_filter(k, self.filter)

    def inverse(self) -> Op:
        return AddTcFilter(self.filter)

    def describe(self) -> str:
        return f"{_tc(self.filter.ns)} {self.filter.describe('del')}"
