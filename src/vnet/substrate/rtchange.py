"""The rtnetlink changes a connection's commit sends by the hundred, encoded by hand.

A guaranteed connection is a u32 filter on its ingress router's interface, an SRv6 encap
route in its own table there, and a seg6local route (a SID) on every router after that.
Moving 100 connections onto another path is some 300 of these requests on one host, and
pyroute2 takes about 1.2 ms to build and send each (its request processors and its asyncio
core, for a message of 100 bytes): a third of a second a path switch waited for. These
functions build the same bytes pyroute2 sends for the same calls (the unit tests hold
pyroute2's, recorded with strace), and Kernel sends them on its per-namespace query socket
(rtquery.py does the same for the reads).
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from ipaddress import IPv6Address, ip_address, ip_network

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
Encap = tuple[int, bytes]  # RTA_ENCAP_TYPE and the RTA_ENCAP payload


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


def _flags(command: str) -> int:
    try:
        return COMMANDS[command]
    except KeyError:
        raise ValueError(f"no such command {command!r}: one of {', '.join(COMMANDS)}") from None
