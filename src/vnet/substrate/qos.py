"""Bandwidth on Linux: HTB classes and u32 filters, as comparable specs.

Two places get classes:

- every rated underlay link end (lab only), below the link's HTB root `1:` and
  its class `1:1` (the link rate, `Shaper` in state.py):
    1:2   management and routing: everything that is not tenant VXLAN
    1:3   best effort: VXLAN of networks without a bandwidth
    1:<n> one per network with a bandwidth (n = its VNI when that fits 16 bits),
          classified by u32 on the outer UDP port 4789 and the VXLAN header's VNI;
- the egress interface of a connection's ingress router towards the first hop:
  an HTB root `76:` (0x76 = 'v', vnet's mark on a qdisc) whose unclassified
  traffic passes unshaped (default 0), and a class `76:<id>` per connection,
  classified by u32 on the outer IPv6 destination: the /112 holding the
  connection's SIDs at the first hop, so it follows the tunnel, not the payload.

Each class has a byte FIFO as leaf queue, bounded to ~50 ms of its rate (at
least 128 kB, so GSO packets fit), which keeps the delay of a flooded class
finite. Bursts hold 20 ms of the rate plus a frame, and at least 512 kB from
500 Mbit/s up (HTB reaches ~99% at 1-2 Gbit/s only then): rate/HZ (4 ms) is
enough on an idle machine, not on a busy one.
"""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass, field
from ipaddress import IPv6Network, ip_network
from typing import Any

from pyroute2.netlink.exceptions import NetlinkError
from pyroute2.netlink.rtnl.tcmsg import plugins as _tc_plugins
from pyroute2.netlink.rtnl.tcmsg import sched_pfifo as _sched_pfifo

from vnet.model import Topology, format_rate
from vnet.model.qos import best_effort_rate, link_shares, network_links
from vnet.model.srv6 import tunnels
from vnet.substrate.state import KernelState, NsName

# pyroute2 knows pfifo but not bfifo; both take the same struct tc_fifo_qopt.
_tc_plugins.setdefault("bfifo", _sched_pfifo)

ETH_P_ALL = 0x0003
ETH_P_IP = 0x0800
ETH_P_IPV6 = 0x86DD
VNET_MAJOR = 0x76  # VR egress qdiscs: "76:"
LINK_MAJOR = 0x1  # the underlay Shaper's root "1:"
LINK_ROOT_CLASS = 0x10001
MANAGEMENT_MINOR = 0x2
BEST_EFFORT_MINOR = 0x3
MIN_CLASS_RATE = 8_000  # bit/s; HTB needs a rate > 0
VXLAN_PORT = 4789
QUEUE_SECONDS = 0.05
MIN_QUEUE = 128 * 1024

Match = tuple[tuple[int, int, int], ...]  # (offset, value byte, mask byte), by offset


def handle(major: int, minor: int) -> int:
    return (major << 16) | minor


def fmt_handle(h: int) -> str:
    return f"{h >> 16:x}:{h & 0xFFFF:x}" if h & 0xFFFF else f"{h >> 16:x}:"


BURST_SECONDS = 0.02


def burst_bytes(rate: int) -> int:
    """Tokens a class may save: 20 ms of its rate plus a frame (512 kB from 500 Mbit/s up).

    rate/HZ (4 ms) is enough on an idle machine; on a busy one the qdisc is
    sometimes dequeued late, and every millisecond beyond the bucket is rate lost.
    """
    b = int(rate / 8 * BURST_SECONDS) + 1514
    return max(b, 512 * 1024) if rate >= 500_000_000 else b


def queue_bytes(rate: int) -> int:
    return max(int(rate / 8 * QUEUE_SECONDS), MIN_QUEUE)


def _bytes_rate(rate: int) -> int:
    """Rates as the kernel keeps them (bytes/s), so observe reads back the same."""
    return max(MIN_CLASS_RATE, rate) // 8 * 8


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
            f"{format_rate(self.ceil)} burst {b}b cburst {cb}b && tc{{ns}} qdisc replace dev "
            f"{self.dev} parent {fmt_handle(self.classid)} bfifo limit {self.queue}"
        )


@dataclass(frozen=True)
class TcFilter:
    """A u32 filter; equal by what it matches and where it sends, not by handle."""

    ns: NsName
    dev: str
    parent: int
    prio: int
    protocol: int
    match: Match
    classid: int
    handle: int = field(default=0, compare=False)
    label: str = field(default="", compare=False)
    hint: int = field(default=0, compare=False)  # preferred u32 node id

    @property
    def slot(self) -> tuple[NsName, str, int, int]:
        return (self.ns, self.dev, self.parent, self.prio)

    def describe(self, verb: str = "add") -> str:
        proto = {ETH_P_IP: "ip", ETH_P_IPV6: "ipv6", ETH_P_ALL: "all"}.get(
            self.protocol, hex(self.protocol)
        )
        h = f" handle ::{self.handle & 0xFFF:x}" if self.handle else ""
        what = self.label or _match_words(self.match)
        return (
            f"filter {verb} dev {self.dev} parent {fmt_handle(self.parent)} prio {self.prio}{h} "
            f"protocol {proto} u32 {what} flowid {fmt_handle(self.classid)}"
        )


def _match_words(match: Match) -> str:
    if not match:
        return "match u32 0 0"
    return " ".join(f"match u8 0x{v:02x} 0x{m:02x} at {off}" for off, v, m in match)


def match_bytes(value: bytes, mask: bytes, offset: int) -> Match:
    return tuple(
        (offset + i, v & m, m) for i, (v, m) in enumerate(zip(value, mask, strict=True)) if m
    )


def ip6_dst_match(prefix: IPv6Network) -> Match:
    mask = int(prefix.netmask).to_bytes(16, "big")
    return match_bytes(prefix.network_address.packed, mask, 24)


def vxlan_match(vni: int | None, underlay_v6: bool) -> Match:
    """UDP to port 4789 (and the VNI, if given) of an outer IPv4/IPv6 packet without options."""
    if underlay_v6:
        proto, l4 = match_bytes(b"\x11", b"\xff", 6), 40
    else:
        proto, l4 = match_bytes(b"\x11", b"\xff", 9), 20
    out = proto + match_bytes(struct.pack(">H", VXLAN_PORT), b"\xff\xff", l4 + 2)
    if vni is not None:
        out += match_bytes(struct.pack(">I", vni << 8), b"\xff\xff\xff\x00", l4 + 8 + 4)
    return tuple(sorted(out))


def _pyroute2_keys(match: Match) -> list[str]:
    if not match:
        return ["0x0/0x0+0"]
    return [f"0x{v:02x}/0x{m:02x}+{off}" for off, v, m in match]


# -- realize ---------------------------------------------------------------------


def network_minors(topo: Topology) -> dict[str, int]:
    """Network -> its class minor on underlay links: the VNI where it fits, else a free one."""
    out: dict[str, int] = {}
    taken = {LINK_ROOT_CLASS & 0xFFFF, MANAGEMENT_MINOR, BEST_EFFORT_MINOR}
    late = []
    for net in sorted(topo.networks, key=lambda n: n.vni):
        if net.bandwidth is None:
            continue
        if net.vni <= 0xFFFF and net.vni not in taken:
            out[net.name] = net.vni
            taken.add(net.vni)
        else:
            late.append(net)
    minor = 0x10
    for net in late:
        while minor in taken:
            minor += 1
        out[net.name] = minor
        taken.add(minor)
    return out


def realize_qos(topo: Topology, where: Any, state: KernelState) -> None:
    """Classes and filters on rated underlay link ends and on connections' entries."""
    from vnet.substrate.realize import underlay_port_name

    link_ends: dict[int, list[tuple[NsName, str]]] = {}
    for j, link in enumerate(topo.links):
        a = (where.host_ns(link.a), underlay_port_name(link.b))
        b = (where.host_ns(link.b), underlay_port_name(link.a))
        if a in state.shapers and b in state.shapers:  # a rated link inside the lab
            link_ends[j] = [a, b]
    _realize_underlay(topo, link_ends, state)
    if not topo.connections or not getattr(where, "routers", True):
        return
    hosts = {vr.name: vr.host for vr in topo.routers}
    root = handle(VNET_MAJOR, 0)
    for t in tunnels(topo):
        if not where.includes(hosts[t.ingress]):
            continue
        ns = where.node_ns(t.ingress)
        state.tc_roots.add(TcRoot(ns, t.out_ifname))
        cls = TcClass(
            ns,
            t.out_ifname,
            handle(VNET_MAJOR, t.id),
            root,
            _bytes_rate(t.bandwidth),
            _bytes_rate(t.bandwidth),
            queue_bytes(t.bandwidth),
        )
        state.tc_classes[cls.key] = cls
        prefix = ip_network(t.first_hop_sids)
        state.tc_filters.add(
            TcFilter(
                ns,
                t.out_ifname,
                root,
                1,
                ETH_P_IPV6,
                ip6_dst_match(prefix),  # type: ignore[arg-type]
                cls.classid,
                label=f"match ip6 dst {prefix}",
                hint=t.id,
            )
        )


def _realize_underlay(
    topo: Topology, link_ends: dict[int, list[tuple[NsName, str]]], state: KernelState
) -> None:
    if not link_ends:
        return
    links_of = network_links(topo)
    shares = link_shares(topo, links_of)
    minors = network_minors(topo)
    nets = {n.name: n for n in topo.networks}
    v6 = topo.underlay.family == "ipv6"
    l3 = ETH_P_IPV6 if v6 else ETH_P_IP
    for j, ends in link_ends.items():
        link = topo.links[j]
        if j not in shares or link.rate is None:
            continue
        rate = link.rate
        for ns, dev in ends:

            def add_class(minor: int, r: int, ceil: int, ns: NsName = ns, dev: str = dev) -> int:
                cls = TcClass(
                    ns,
                    dev,
                    handle(LINK_MAJOR, minor),
                    LINK_ROOT_CLASS,
                    _bytes_rate(r),
                    _bytes_rate(ceil),
                    queue_bytes(ceil),
                )
                state.tc_classes[cls.key] = cls
                return cls.classid

            mgmt = shares[j][0]
            mgmt_id = add_class(MANAGEMENT_MINOR, mgmt.rate, rate)
            be_id = add_class(BEST_EFFORT_MINOR, best_effort_rate(link, shares[j]), rate)
            root = handle(LINK_MAJOR, 0)
            for node, share in enumerate(shares[j][1:], start=1):
                assert share.network is not None
                net = nets[share.network]
                cid = add_class(minors[share.network], share.rate, share.ceil)
                state.tc_filters.add(
                    TcFilter(
                        ns,
                        dev,
                        root,
                        1,
                        l3,
                        vxlan_match(net.vni, v6),
                        cid,
                        label=f"match vxlan vni {net.vni}",
                        hint=node,
                    )
                )
            state.tc_filters.add(
                TcFilter(
                    ns,
                    dev,
                    root,
                    2,
                    l3,
                    vxlan_match(None, v6),
                    be_id,
                    label="match udp dport 4789",
                    hint=1,
                )
            )
            state.tc_filters.add(
                TcFilter(ns, dev, root, 3, ETH_P_ALL, (), mgmt_id, label="match u32 0 0", hint=1)
            )


# -- kernel ----------------------------------------------------------------------


def add_root(k: Any, r: TcRoot) -> None:
    k.ipr(r.ns).tc(
        "add",
        "htb",
        index=k.index(r.ns, r.dev),
        handle=handle(VNET_MAJOR, 0),
        parent=0xFFFFFFFF,
        default=0,
    )


def delete_root(k: Any, r: TcRoot) -> None:
    k.ipr(r.ns).tc(
        "del", index=k.index(r.ns, r.dev), handle=handle(VNET_MAJOR, 0), parent=0xFFFFFFFF
    )


def set_class(k: Any, c: TcClass, command: str = "add-class") -> None:
    ipr, index = k.ipr(c.ns), k.index(c.ns, c.dev)
    ipr.tc(
        command,
        "htb",
        index=index,
        handle=c.classid,
        parent=c.parent,
        rate=c.rate // 8,
        ceil=c.ceil // 8,
        burst=burst_bytes(c.rate),
        cburst=burst_bytes(c.ceil),
        quantum=max(1514, min(200_000, c.rate // 8 // 10)),
    )
    ipr.tc("replace", "bfifo", index=index, parent=c.classid, limit=c.queue)


def delete_class(k: Any, c: TcClass) -> None:
    # pyroute2 encodes the class options even for a deletion (the kernel ignores them)
    k.ipr(c.ns).tc(
        "del-class",
        "htb",
        index=k.index(c.ns, c.dev),
        handle=c.classid,
        parent=c.parent,
        rate=c.rate // 8,
        ceil=c.ceil // 8,
    )


def add_filter(k: Any, f: TcFilter) -> None:
    k.ipr(f.ns).tc(
        "add-filter",
        "u32",
        index=k.index(f.ns, f.dev),
        parent=f.parent,
        prio=f.prio,
        protocol=f.protocol,
        # only the node id: the kernel puts it into the hash table of this prio's u32
        handle=f.handle & 0xFFF,
        target=f.classid,
        keys=_pyroute2_keys(f.match),
    )


def delete_filter(k: Any, f: TcFilter) -> None:
    """Delete the filter that matches what `f` matches (its full handle is the kernel's)."""
    ipr, index = k.ipr(f.ns), k.index(f.ns, f.dev)
    found = TcFilter(f.ns, f.dev, f.parent, f.prio, f.protocol, f.match, f.classid)
    state = KernelState()
    _read_filters(ipr, f.ns, f.dev, index, f.parent, state)
    for have in state.tc_filters:
        if have == found:
            ipr.tc(
                "del-filter",
                "u32",
                index=index,
                parent=f.parent,
                prio=f.prio,
                protocol=f.protocol,
                handle=have.handle,
                target=f.classid,  # pyroute2 encodes options even for a deletion
            )
            return
    raise NetlinkError(2, f"no u32 filter {f.describe('')} on {f.dev}")


# -- observe ---------------------------------------------------------------------


def _u32_match(msg: Any) -> Match | None:
    """The selector of a u32 filter as (offset, value, mask) bytes.

    pyroute2 0.9 decodes the keys 4 bytes off, so the raw attribute is read here.
    """
    opts = msg.get_attr("TCA_OPTIONS")
    sel = opts.get_attr("TCA_U32_SEL") if opts is not None else None
    if sel is None:
        return None
    raw = bytes(sel.data[sel.offset : sel.offset + sel.length])
    nkeys = raw[6]
    out: list[tuple[int, int, int]] = []
    for n in range(nkeys):
        mask, value = struct.unpack_from(">II", raw, 20 + 16 * n)
        (off,) = struct.unpack_from("=i", raw, 20 + 16 * n + 8)
        out += match_bytes(struct.pack(">I", value), struct.pack(">I", mask), off)
    return tuple(sorted(out))


def observe_tc(ipr: Any, ns: NsName, devs: dict[int, str], major: int, state: KernelState) -> None:
    """vnet's classes and filters below root `major:` on the given interfaces."""
    try:
        qdiscs = ipr.get_qdiscs()
    except NetlinkError:
        return
    roots: set[int] = set()
    leaves: dict[tuple[int, int], int] = {}
    for q in qdiscs:
        index = q["index"]
        if index not in devs:
            continue
        if q["parent"] == 0xFFFFFFFF and q.get("kind") == "htb" and q["handle"] == handle(major, 0):
            roots.add(index)
        elif q.get("kind") == "bfifo" and q["parent"] >> 16 == major:
            opts = q.get_attr("TCA_OPTIONS")
            leaves[(index, q["parent"])] = opts["limit"] if opts is not None else 0
    for index in sorted(roots):
        dev = devs[index]
        if major == VNET_MAJOR:
            state.tc_roots.add(TcRoot(ns, dev))
        for c in ipr.get_classes(index=index):
            cid = c["handle"]
            if c.get("kind") != "htb" or cid >> 16 != major or cid == LINK_ROOT_CLASS:
                continue
            parms = c.get_nested("TCA_OPTIONS", "TCA_HTB_PARMS")
            rate = c.get_nested("TCA_OPTIONS", "TCA_HTB_RATE64") or parms["rate"]
            ceil = c.get_nested("TCA_OPTIONS", "TCA_HTB_CEIL64") or parms["ceil"]
            parent = handle(major, 0) if c["parent"] == 0xFFFFFFFF else c["parent"]
            cls = TcClass(ns, dev, cid, parent, rate * 8, ceil * 8, leaves.get((index, cid), 0))
            state.tc_classes[cls.key] = cls
        _read_filters(ipr, ns, dev, index, handle(major, 0), state)


def _read_filters(
    ipr: Any, ns: NsName, dev: str, index: int, parent: int, state: KernelState
) -> None:
    for f in ipr.get_filters(index=index, parent=parent):
        if f.get("kind") != "u32":
            continue
        match = _u32_match(f)
        opts = f.get_attr("TCA_OPTIONS")
        classid = opts.get_attr("TCA_U32_CLASSID") if opts is not None else None
        if match is None or classid is None:
            continue
        info = f["info"]
        state.tc_filters.add(
            TcFilter(
                ns,
                dev,
                parent,
                info >> 16,
                socket.ntohs(info & 0xFFFF),
                match,
                classid,
                handle=f["handle"],
            )
        )


def class_counters(ipr: Any, index: int) -> dict[int, tuple[int, int, int]]:
    """classid -> (bytes, packets, drops) of every class on one interface (for benchmarks)."""
    out = {}
    for c in ipr.get_classes(index=index):
        basic = c.get_nested("TCA_STATS2", "TCA_STATS_BASIC") or {}
        queue = c.get_nested("TCA_STATS2", "TCA_STATS_QUEUE") or {}
        out[c["handle"]] = (basic.get("bytes", 0), basic.get("packets", 0), queue.get("drops", 0))
    return out
