"""The rtnetlink changes a connection's commit sends by the hundred, encoded by hand.

A guaranteed connection is an HTB class with its FIFO and a u32 filter on its ingress
router's interface, an SRv6 encap route in its own table there, and a seg6local route (a
SID) on every router after that. Moving 100 connections onto another path is some 600 of
these requests on one host, and pyroute2 takes about 1.2 ms to build and send each (its
request processors and its asyncio core, for a message of 100 bytes), an HTB class 1.6 ms
(it computes the class's two rate tables each time): half a second a path switch waited
for. These functions build the same bytes pyroute2 sends for the same calls (the unit tests
hold pyroute2's, recorded with strace; a class deletion is iproute2's, which names just the
class), and Kernel sends them on its per-namespace query socket (rtquery.py does the same
for the reads).
"""

from __future__ import annotations

import functools
import socket
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from ipaddress import IPv6Address, ip_address, ip_network
from pathlib import Path

from vnet.substrate.rtquery import (
    NLM_F_ACK,
    NLM_F_CREATE,
    NLM_F_EXCL,
    NLM_F_REQUEST,
    RTA_DST,
    RTA_ENCAP_TYPE,
    RTM_NEWROUTE,
    RTM_NEWTFILTER,
    RTMSG,
    TCA_KIND,
    TCA_OPTIONS,
    TCA_U32_CLASSID,
    TCA_U32_SEL,
    TCMSG,
    _message,
    _nla,
)
from vnet.substrate.u32 import Match, selector

RTM_DELROUTE, RTM_DELTFILTER = 25, 45
RTM_NEWQDISC, RTM_NEWTCLASS, RTM_DELTCLASS = 36, 40, 41
NLM_F_REPLACE = 0x100
RTA_OIF, RTA_TABLE, RTA_ENCAP = 4, 15, 22
RTN_UNSPEC, RTN_UNICAST = 0, 1
RT_TABLE_MAIN = 254
LWTUNNEL_ENCAP_SEG6, LWTUNNEL_ENCAP_SEG6_LOCAL = 5, 7
SEG6_IPTUNNEL_SRH, SEG6_IPTUN_MODE_ENCAP = 1, 1
SEG6_LOCAL_ACTION, SEG6_LOCAL_NH4, SEG6_LOCAL_NH6 = 1, 4, 5
IPV6_SRCRT_TYPE_4 = 4  # the segment routing header's routing type
SRH = struct.Struct("=BBBBBBH")  # next header, length, type, left, first, flags, tag
# the netlink flags of each command, as `ip route add|replace|del` (and pyroute2) send them
COMMANDS = {
    "add": NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL,
    "replace": NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_REPLACE,
    "del": NLM_F_REQUEST | NLM_F_ACK,
}
# `tc class change` (pyroute2's "change-class"): replace, but only what exists
CHANGE = NLM_F_REQUEST | NLM_F_ACK | NLM_F_REPLACE
TCA_HTB_PARMS, TCA_HTB_CTAB, TCA_HTB_RTAB, TCA_HTB_RATE64, TCA_HTB_CEIL64 = 1, 3, 4, 6, 7
# struct tc_htb_opt: the rate's and the ceil's tc_ratespec (cell_log, linklayer, overhead,
# cell_align, mpu, bytes/s), buffer and cbuffer (in scheduler ticks), quantum, level, prio
HTB_OPT = struct.Struct("=BBHhHIBBHhHIIIIII")
RATE_CELLS = 256  # entries of a rate table: the time of (i + 1) << cell_log bytes
RATE_TABLE_MTU = 1600  # the largest packet a rate table covers (tc's and pyroute2's default)
U32_MAX = (1 << 32) - 1
Encap = tuple[int, bytes]  # RTA_ENCAP_TYPE and the RTA_ENCAP payload


@dataclass(frozen=True)
class HtbSpec:
    """An HTB class's numbers as `tc class add ... htb` takes them."""

    rate: int  # bytes/s
    ceil: int  # bytes/s
    burst: int  # bytes
    cburst: int  # bytes
    quantum: int  # bytes


@dataclass(frozen=True)
class U32Spec:
    """A u32 filter that sends what `match` matches to class `classid`."""

    parent: int  # the qdisc, major:0
    prio: int
    protocol: int  # an ethertype, 0x0800
    classid: int
    match: Match


def u32_filter_request(command: str, index: int, seq: int, spec: U32Spec, handle: int = 0) -> bytes:
    """`tc filter add|del ... u32 <match> classid <classid>` on interface `index`; a deletion
    names the kernel's `handle` (and carries the class and no key, as pyroute2's does)."""
    info = (spec.prio << 16) | socket.htons(spec.protocol)
    body = TCMSG.pack(socket.AF_UNSPEC, index, handle, spec.parent, info)
    sel = selector(spec.match if command == "add" else None)
    options = _nla(TCA_U32_CLASSID, struct.pack("=I", spec.classid)) + _nla(TCA_U32_SEL, sel)
    body += _nla(TCA_KIND, b"u32\0") + _nla(TCA_OPTIONS, options)
    kind = RTM_NEWTFILTER if command == "add" else RTM_DELTFILTER
    return _message(kind, _flags(command), seq, body)


def route_request(
    command: str,
    dst: str,
    seq: int,
    *,
    proto: int,
    table: int | None = None,
    oif: int | None = None,
    encap: Encap | None = None,
) -> bytes:
    """`ip route add|replace|del <dst> [table T] [encap ...] [dev D] proto P`: the main
    table unless `table`; an encapsulation as `seg6_encap` or `seg6_local` make it."""
    net = ip_network(dst)
    family = socket.AF_INET6 if net.version == 6 else socket.AF_INET
    kind = RTN_UNSPEC if command == "del" else RTN_UNICAST
    # the header's table byte holds only tables below 255; RTA_TABLE holds any
    in_header = table if table is not None and 0 < table < 255 else RT_TABLE_MAIN
    body = RTMSG.pack(family, net.prefixlen, 0, 0, in_header, proto, 0, kind, 0)
    body += _nla(RTA_DST, net.network_address.packed)
    if table is not None:
        body += _nla(RTA_TABLE, struct.pack("=I", table))
    if encap is not None:
        encap_type, payload = encap
        body += _nla(RTA_ENCAP, payload) + _nla(RTA_ENCAP_TYPE, struct.pack("=H", encap_type))
    if oif is not None:
        body += _nla(RTA_OIF, struct.pack("=I", oif))
    msg_kind = RTM_DELROUTE if command == "del" else RTM_NEWROUTE
    return _message(msg_kind, _flags(command), seq, body)


def seg6_encap(segments: Sequence[str]) -> Encap:
    """`encap seg6 mode encap segs <segments>`, the segments in path order (the header lists
    them last first, as iproute2 writes them)."""
    last = len(segments) - 1
    srh = SRH.pack(0, 2 * len(segments), IPV6_SRCRT_TYPE_4, last, last, 0, 0)
    srh += b"".join(IPv6Address(s).packed for s in reversed(segments))
    tunnel = struct.pack("=i", SEG6_IPTUN_MODE_ENCAP) + srh
    return LWTUNNEL_ENCAP_SEG6, _nla(SEG6_IPTUNNEL_SRH, tunnel)


def seg6_local(action: int, nh: str | None = None) -> Encap:
    """`encap seg6local action <action> [nh4|nh6 <nh>]` (End, End.DX4, End.DX6)."""
    payload = _nla(SEG6_LOCAL_ACTION, struct.pack("=I", action))
    if nh is not None:
        address = ip_address(nh)
        kind = SEG6_LOCAL_NH6 if address.version == 6 else SEG6_LOCAL_NH4
        payload += _nla(kind, address.packed)
    return LWTUNNEL_ENCAP_SEG6_LOCAL, payload


def htb_class_request(
    command: str, index: int, seq: int, classid: int, parent: int, spec: HtbSpec | None = None
) -> bytes:
    """`tc class add|change ... htb` of `spec` on interface `index`, or `tc class del` (which
    names the class alone, as iproute2's does)."""
    if command == "del":
        body = TCMSG.pack(socket.AF_UNSPEC, index, classid, 0, 0)
        return _message(RTM_DELTCLASS, _flags("del"), seq, body)
    if spec is None:
        raise ValueError(f"tc class {command} needs the class's rates")
    flags = CHANGE if command == "change" else _flags(command)
    body = TCMSG.pack(socket.AF_UNSPEC, index, classid, parent, 0)
    body += _nla(TCA_KIND, b"htb\0") + _nla(TCA_OPTIONS, htb_options(spec, scheduler_tick()))
    return _message(RTM_NEWTCLASS, flags, seq, body)


def bfifo_request(index: int, seq: int, parent: int, limit: int) -> bytes:
    """`tc qdisc replace dev <index> parent <parent> bfifo limit <limit>`."""
    body = TCMSG.pack(socket.AF_UNSPEC, index, 0, parent, 0)
    body += _nla(TCA_KIND, b"bfifo\0") + _nla(TCA_OPTIONS, struct.pack("=I", limit))
    return _message(RTM_NEWQDISC, _flags("replace"), seq, body)


@functools.lru_cache(maxsize=1024)
def htb_options(spec: HtbSpec, tick: float) -> bytes:
    """TCA_OPTIONS of an HTB class, as pyroute2 builds it (its sched_htb and rate tables);
    `tick`: scheduler ticks per microsecond. The same few rates recur across a host's
    connections, and the two tables are 512 computed numbers: remembered per spec."""
    if spec.rate <= 0:
        raise ValueError("an HTB class needs a rate above 0")
    full_ceil = spec.ceil or spec.rate
    # the buffers at the full rates; the tables and tc_ratespec at most 32 bits of them, the
    # rest in TCA_HTB_RATE64 and TCA_HTB_CEIL64
    buffers = _xmittime(spec.rate, spec.burst, tick), _xmittime(full_ceil, spec.cburst, tick)
    rate, ceil = min(spec.rate, U32_MAX), min(full_ceil, U32_MAX)
    cell_log = 0
    while (RATE_TABLE_MTU >> cell_log) > 255:
        cell_log += 1
    parms = HTB_OPT.pack(
        cell_log, 0, 0, -1, 0, rate, cell_log, 0, 0, -1, 0, ceil, *buffers, spec.quantum, 0, 0
    )
    out = _nla(TCA_HTB_PARMS, parms)
    out += _nla(TCA_HTB_RTAB, _rate_table(rate, cell_log, tick))
    out += _nla(TCA_HTB_CTAB, _rate_table(ceil, cell_log, tick))
    if spec.rate > U32_MAX:
        out += _nla(TCA_HTB_RATE64, struct.pack("=Q", spec.rate))
    if full_ceil > U32_MAX:
        out += _nla(TCA_HTB_CEIL64, struct.pack("=Q", full_ceil))
    return out


def _rate_table(rate: int, cell_log: int, tick: float) -> bytes:
    times = (_xmittime(rate, (i + 1) << cell_log, tick) for i in range(RATE_CELLS))
    return struct.pack(f"={RATE_CELLS}I", *times)


def _xmittime(rate: int, size: int, tick: float) -> int:
    """Scheduler ticks to send `size` bytes at `rate` bytes/s (tc's tc_calc_xmittime, in
    pyroute2's arithmetic, so that the bytes are the same)."""
    return int(int(1_000_000 * (float(size) / rate)) * tick)


@functools.cache
def scheduler_tick(psched: Path = Path("/proc/net/psched")) -> float:
    """Scheduler ticks per microsecond, from the kernel's /proc/net/psched (as tc reads it)."""
    t2us, us2t, clock_res, _ = (int(x, 16) for x in psched.read_text().split())
    return t2us / us2t * (clock_res / 1_000_000)


def _flags(command: str) -> int:
    try:
        return COMMANDS[command]
    except KeyError:
        raise ValueError(f"no such command {command!r}: one of {', '.join(COMMANDS)}") from None
