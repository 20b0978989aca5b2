"""Traffic control: HTB roots, classes with FIFO leaves, and u32 filters.

Two places get classes (realize_guarantees.py says which):

- every rated underlay link end (lab only): the link's HTB root `1:` with one
  class `1:1` at the link rate (a `Shaper`), and below it
    1:2   management and routing: everything that is not tenant VXLAN
    1:3   best effort: VXLAN of networks without a bandwidth
    1:<n> one per network with a bandwidth, classified by u32 on the outer UDP
          port 4789 and the VXLAN header's VNI;
- the egress interface of a connection's ingress router: an HTB root `76:`
  (0x76 = 'v', vnet's mark on a qdisc) whose unclassified traffic passes
  unshaped (default 0), and a class `76:<id>` per connection, classified by
  u32 on the outer IPv6 destination (the /112 of its SIDs at the first hop).

Each class has a byte FIFO as leaf queue; its size and the classes' bursts are
tc_sizes.py's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pyroute2.netlink.rtnl.tcmsg import plugins as _tc_plugins
from pyroute2.netlink.rtnl.tcmsg import sched_pfifo as _sched_pfifo

from vnet.model import format_rate
from vnet.substrate.kernel import Kernel, KernelError, Message
from vnet.substrate.marks import NsName
from vnet.substrate.rtchange import (
    HtbSpec,
    U32Spec,
    bfifo_request,
    htb_class_request,
    u32_filter_request,
)
from vnet.substrate.tc_numbers import FilterHandles, slot_of
from vnet.substrate.tc_sizes import burst_bytes, shaper_burst
from vnet.substrate.u32 import Match, match_words, selector_match

# pyroute2 knows pfifo but not bfifo; both take the same struct tc_fifo_qopt.
_tc_plugins.setdefault("bfifo", _sched_pfifo)

ETH_P_ALL = 0x0003
ETH_P_IP = 0x0800
ETH_P_IPV6 = 0x86DD
TC_H_ROOT = 0xFFFFFFFF
VNET_MAJOR = 0x76  # VR egress qdiscs: "76:"
LINK_MAJOR = 0x1  # the underlay Shaper's root "1:"
# an agent's underlay interface: "75:" (0x75 = 'u'), so a lab's link shaper on the same
# kind of device ("1:") and an agent's tree never take each other for their own
UNDERLAY_MAJOR = 0x75
LINK_ROOT_CLASS = 0x10001
MANAGEMENT_MINOR = 0x2
BEST_EFFORT_MINOR = 0x3
# A link tree's filter priorities, tried in this order (inside one, the kernel's numbering
# orders filters: no plan chooses it): tenants' routing, each network's VNI, VXLAN, the rest
PRIO_TENANT_ROUTING, PRIO_NETWORK, PRIO_ANY_VXLAN, PRIO_REST = 1, 2, 3, 4


def handle(major: int, minor: int) -> int:
    return (major << 16) | minor


def fmt_handle(h: int) -> str:
    return f"{h >> 16:x}:{h & 0xFFFF:x}" if h & 0xFFFF else f"{h >> 16:x}:"


def _tc(ns: NsName) -> str:
    return f"tc -n {ns}" if ns else "tc"


# -- objects ---------------------------------------------------------------------


@dataclass(frozen=True)
class Shaper:
    """An HTB root on a link with one class at `rate`; QoS classes attach below it."""

    ns: NsName
    dev: str
    rate: int  # bit/s
    major: int = LINK_MAJOR  # root major:, the rate's class major:1

    @property
    def key(self) -> tuple[NsName, str]:
        return (self.ns, self.dev)


@dataclass(frozen=True)
class TcRoot:
    """vnet's HTB root on a router interface; unclassified packets bypass it."""

    ns: NsName
    dev: str

    def describe(self) -> str:
        return f"qdisc add dev {self.dev} root handle {VNET_MAJOR:x}: htb default 0"


@dataclass(frozen=True)
class TcClass:
    ns: NsName
    dev: str
    classid: int
    parent: int
    rate: int  # bit/s
    ceil: int
    queue: int  # bytes of the leaf FIFO

    @property
    def key(self) -> tuple[NsName, str, int]:
        return (self.ns, self.dev, self.classid)

    def describe(self, verb: str = "add") -> str:
        b, cb = burst_bytes(self.rate), burst_bytes(self.ceil)
        return (
            f"class {verb} dev {self.dev} parent {fmt_handle(self.parent)} classid "
            f"{fmt_handle(self.classid)} htb rate {format_rate(self.rate)} ceil "
            f"{format_rate(self.ceil)} burst {b}b cburst {cb}b && {_tc(self.ns)} qdisc replace "
            f"dev {self.dev} parent {fmt_handle(self.classid)} bfifo limit {self.queue}"
        )


@dataclass(frozen=True)
class TcFilter:
    """A u32 filter; equal by what it matches and where it sends, not by handle.

    The kernel numbers a filter when it is added (`handle` is only ever read back): a plan
    never names a node, so the old and the new filter of a make-before-break coexist in one
    slot whatever the planner knows of the kernel's numbers (an agent plans from what its
    last commit left, which holds none)."""

    ns: NsName
    dev: str
    parent: int
    prio: int
    protocol: int
    match: Match
    classid: int
    handle: int = field(default=0, compare=False)  # the kernel's, as read (0: not read)
    label: str = field(default="", compare=False)

    @property
    def slot(self) -> tuple[NsName, str, int, int]:
        return (self.ns, self.dev, self.parent, self.prio)

    @property
    def spec(self) -> U32Spec:
        return U32Spec(self.parent, self.prio, self.protocol, self.classid, self.match)

    def describe(self, verb: str = "add") -> str:
        proto = {ETH_P_IP: "ip", ETH_P_IPV6: "ipv6", ETH_P_ALL: "all"}.get(
            self.protocol, hex(self.protocol)
        )
        what = self.label or match_words(self.match)
        return (
            f"filter {verb} dev {self.dev} parent {fmt_handle(self.parent)} prio {self.prio} "
            f"protocol {proto} u32 {what} flowid {fmt_handle(self.classid)}"
        )


# -- operations ------------------------------------------------------------------


@dataclass(frozen=True)
class SetShaper:
    """Install, change (old and new) or remove (new None) a link's HTB root."""

    ns: NsName
    dev: str
    old: Shaper | None
    new: Shaper | None

    def run(self, k: Kernel) -> None:
        k.filter_numbers.forget(self.ns, self.dev)
        if self.new is None:
            assert self.old is not None
            k.tc(self.ns, "del", None, self.dev, handle=f"{self.old.major:x}:", root=True)
            return
        root = f"{self.new.major:x}:"
        k.tc(self.ns, "del", None, self.dev, missing_ok=True, handle=root, root=True)
        k.tc(self.ns, "add", "htb", self.dev, handle=root, default=0x1, root=True)
        rate, burst = self.new.rate // 8, shaper_burst(self.new.rate)
        k.tc(
            self.ns,
            "add-class",
            "htb",
            self.dev,
            handle=f"{root}1",
            parent=root,
            rate=rate,
            ceil=rate,
            burst=burst,
            cburst=burst,
        )

    def inverse(self) -> SetShaper:
        return SetShaper(self.ns, self.dev, self.new, self.old)

    def describe(self) -> str:
        tc = _tc(self.ns)
        if self.new is None:
            return f"{tc} qdisc del dev {self.dev} root"
        rate, root = format_rate(self.new.rate), f"{self.new.major:x}:"
        return (
            f"{tc} qdisc replace dev {self.dev} root handle {root} htb default 1 && "
            f"{tc} class add dev {self.dev} parent {root} classid {root}1 htb rate {rate} "
            f"ceil {rate}"
        )


@dataclass(frozen=True)
class AddTcRoot:
    root: TcRoot

    def run(self, k: Kernel) -> None:
        r = self.root
        k.filter_numbers.forget(r.ns, r.dev)
        k.tc(r.ns, "add", "htb", r.dev, handle=handle(VNET_MAJOR, 0), parent=TC_H_ROOT, default=0)
        k.filter_numbers.learn((r.ns, r.dev, handle(VNET_MAJOR, 0)), [])  # none under it yet

    def inverse(self) -> DeleteTcRoot:
        return DeleteTcRoot(self.root)

    def describe(self) -> str:
        return f"{_tc(self.root.ns)} {self.root.describe()}"


@dataclass(frozen=True)
class DeleteTcRoot:
    root: TcRoot

    def run(self, k: Kernel) -> None:
        r = self.root
        k.filter_numbers.forget(r.ns, r.dev)
        k.tc(r.ns, "del", None, r.dev, handle=handle(VNET_MAJOR, 0), parent=TC_H_ROOT)

    def inverse(self) -> AddTcRoot:
        return AddTcRoot(self.root)

    def describe(self) -> str:
        return f"{_tc(self.root.ns)} qdisc del dev {self.root.dev} root handle 76:"


def _set_class(k: Kernel, c: TcClass, command: str) -> None:
    spec = HtbSpec(
        rate=c.rate // 8,
        ceil=c.ceil // 8,
        burst=burst_bytes(c.rate),
        cburst=burst_bytes(c.ceil),
        quantum=max(1514, min(200_000, c.rate // 8 // 10)),
    )
    k.tc_change(
        c.ns, c.dev, lambda i, seq: htb_class_request(command, i, seq, c.classid, c.parent, spec)
    )
    k.tc_change(c.ns, c.dev, lambda i, seq: bfifo_request(i, seq, c.classid, c.queue))


@dataclass(frozen=True)
class AddTcClass:
    cls: TcClass

    def run(self, k: Kernel) -> None:
        _set_class(k, self.cls, "add")

    def inverse(self) -> DeleteTcClass:
        return DeleteTcClass(self.cls)

    def describe(self) -> str:
        return f"{_tc(self.cls.ns)} {self.cls.describe('add')}"


@dataclass(frozen=True)
class ChangeTcClass:
    old: TcClass
    new: TcClass

    def run(self, k: Kernel) -> None:
        _set_class(k, self.new, "change")

    def inverse(self) -> ChangeTcClass:
        return ChangeTcClass(self.new, self.old)

    def describe(self) -> str:
        return f"{_tc(self.new.ns)} {self.new.describe('change')}"


@dataclass(frozen=True)
class DeleteTcClass:
    cls: TcClass

    def run(self, k: Kernel) -> None:
        c = self.cls
        k.tc_change(
            c.ns, c.dev, lambda i, seq: htb_class_request("del", i, seq, c.classid, c.parent)
        )

    def inverse(self) -> AddTcClass:
        return AddTcClass(self.cls)

    def describe(self) -> str:
        c = self.cls
        return f"{_tc(c.ns)} class del dev {c.dev} classid {fmt_handle(c.classid)}"


@dataclass(frozen=True)
class AddTcFilter:
    filter: TcFilter

    def run(self, k: Kernel) -> None:
        f = self.filter
        k.tc_change(f.ns, f.dev, lambda i, seq: u32_filter_request("add", i, seq, f.spec))
        k.filter_numbers.added(f)

    def inverse(self) -> DeleteTcFilter:
        return DeleteTcFilter(self.filter)

    def describe(self) -> str:
        return f"{_tc(self.filter.ns)} {self.filter.describe('add')}"


@dataclass(frozen=True)
class DeleteTcFilter:
    """Delete the filter that matches what `filter` matches (its full handle is the kernel's,
    found in `handles`: share one among a plan's deletions)."""

    filter: TcFilter
    handles: FilterHandles = field(default_factory=FilterHandles, compare=False, repr=False)

    def run(self, k: Kernel) -> None:
        f = self.filter
        found = TcFilter(f.ns, f.dev, f.parent, f.prio, f.protocol, f.match, f.classid)
        handle = self.handles.take(k, found)
        if handle is None:
            raise KernelError(f"no u32 filter {f.describe('')} on {f.dev}")
        k.tc_change(f.ns, f.dev, lambda i, seq: u32_filter_request("del", i, seq, f.spec, handle))
        k.filter_numbers.deleted(f, handle)

    def inverse(self) -> AddTcFilter:
        return AddTcFilter(self.filter)

    def describe(self) -> str:
        return f"{_tc(self.filter.ns)} {self.filter.describe('del')}"


# -- read ------------------------------------------------------------------------


@dataclass
class TcScan:
    roots: set[TcRoot] = field(default_factory=set)
    classes: dict[tuple[NsName, str, int], TcClass] = field(default_factory=dict)
    filters: set[TcFilter] = field(default_factory=set)
    shapers: dict[tuple[NsName, str], Shaper] = field(default_factory=dict)


def _htb_rate(msg: Message, name: str) -> int:
    parms = msg.get_nested("TCA_OPTIONS", "TCA_HTB_PARMS")
    return int(msg.get_nested("TCA_OPTIONS", f"TCA_HTB_{name.upper()}64") or parms[name]) * 8


def read_shapers(
    k: Kernel, ns: NsName, devs: dict[int, str], qdiscs: list[Message], major: int = LINK_MAJOR
) -> dict[tuple[NsName, str], Shaper]:
    """Shapers rooted at `major:` on `devs` (index -> name); `qdiscs`: the namespace's dump."""
    rooted = {
        q["index"]
        for q in qdiscs
        if q["parent"] == TC_H_ROOT and q.get("kind") == "htb" and q["handle"] == handle(major, 0)
    }
    out = {}
    for index in sorted(rooted & devs.keys()):
        for msg in k.classes(ns, index):
            if msg.get("kind") == "htb" and msg["handle"] == handle(major, 1):
                out[(ns, devs[index])] = Shaper(ns, devs[index], _htb_rate(msg, "rate"), major)
    return out


def read(
    k: Kernel, ns: NsName, devs: dict[int, str], major: int, qdiscs: list[Message], scan: TcScan
) -> None:
    """vnet's classes and filters below root `major:` on `devs` (index -> name)."""
    roots: set[int] = set()
    leaves: dict[tuple[int, int], int] = {}
    for q in qdiscs:
        index = q["index"]
        if index not in devs:
            continue
        if q["parent"] == TC_H_ROOT and q.get("kind") == "htb" and q["handle"] == handle(major, 0):
            roots.add(index)
        elif q.get("kind") == "bfifo" and q["parent"] >> 16 == major:
            opts = q.get_attr("TCA_OPTIONS")
            leaves[(index, q["parent"])] = opts["limit"] if opts is not None else 0
    # a shaper's own class major:1 is the Shaper's (a connection's 76:1 is a class)
    shaper_class = handle(major, 1) if major != VNET_MAJOR else None
    for index in sorted(roots):
        dev = devs[index]
        if major == VNET_MAJOR:
            scan.roots.add(TcRoot(ns, dev))
        for c in k.classes(ns, index):
            cid = c["handle"]
            if c.get("kind") != "htb" or cid >> 16 != major or cid == shaper_class:
                continue
            parent = handle(major, 0) if c["parent"] == TC_H_ROOT else c["parent"]
            rate, ceil = _htb_rate(c, "rate"), _htb_rate(c, "ceil")
            cls = TcClass(ns, dev, cid, parent, rate, ceil, leaves.get((index, cid), 0))
            scan.classes[cls.key] = cls
        scan.filters |= read_filters(k, ns, dev, index, handle(major, 0))


def read_filters(k: Kernel, ns: NsName, dev: str, index: int, parent: int) -> set[TcFilter]:
    out = set()
    entries = k.u32_filters(ns, index, parent)
    k.filter_numbers.learn((ns, dev, parent), entries)
    for f in entries:
        prio, protocol, classid = slot_of(f)
        match = selector_match(f.selector)
        out.add(TcFilter(ns, dev, parent, prio, protocol, match, classid, handle=f.handle))
    return out


def class_counters(k: Kernel, ns: NsName, dev: str) -> dict[int, tuple[int, int, int]]:
    """classid -> (bytes, packets, drops) of every class on one interface (for benchmarks)."""
    out = {}
    for c in k.classes(ns, k.index(ns, dev)):
        basic: dict[str, Any] = c.get_nested("TCA_STATS2", "TCA_STATS_BASIC") or {}
        out[c["handle"]] = (basic.get("bytes", 0), basic.get("packets", 0), _queue(c)["drops"])
    return out


def class_backlogs(k: Kernel, ns: NsName, dev: str) -> dict[int, int]:
    """classid -> bytes its leaf queue holds now, of every class on one interface."""
    return {c["handle"]: _queue(c)["backlog"] for c in k.classes(ns, k.index(ns, dev))}


def _queue(c: Any) -> dict[str, int]:
    queue: dict[str, Any] = c.get_nested("TCA_STATS2", "TCA_STATS_QUEUE") or {}
    return {"drops": queue.get("drops", 0), "backlog": queue.get("backlog", 0)}


def attach_ingress_bpf(k: Kernel, ns: NsName, dev: str, prog_fd: int, name: str) -> None:
    """A clsact qdisc on `dev` and the loaded eBPF program `prog_fd` as a direct-action
    filter on its ingress (for benchmarks: not marked, it goes with the namespace)."""
    k.tc(ns, "add", "clsact", dev)
    k.tc(
        ns,
        "add-filter",
        "bpf",
        dev,
        handle=":1",
        fd=prog_fd,
        name=name,
        parent="ffff:fff2",  # clsact ingress
        classid=1,
        direct_action=True,
    )
