"""rtnetlink requests vnet sends often, encoded and decoded by hand for the fields it uses.

pyroute2 decodes every attribute of a link reply (statistics, per-family blocks,
link info) into objects: milliseconds per message on this machine. The paths that
ask about one interface at a time (bridge shortcut targets, per-VR port state)
need a handful of top-level attributes, a VR's route count needs only each
route's header, and a reconcile reads vnet's own routes (and whether there are rules
of its own) from headers and three attributes, in each of thousands of namespaces;
setting a link's state, alias, MTU or master and adding an address are a few fixed
fields (the same bytes pyroute2 sends). Kernel sends
these requests on its own per-namespace netlink socket.
"""

from __future__ import annotations

import errno
import socket
import struct
from dataclasses import dataclass, field, replace
from ipaddress import ip_interface, ip_network

from vnet.substrate.marks import NsName
from vnet.tools.netns import entered

RTM_NEWLINK = 16
RTM_DELLINK = 17
RTM_GETLINK = 18
RTM_NEWADDR = 20
RTM_DELADDR = 21
RTM_NEWROUTE = 24
RTM_GETROUTE = 26
RTM_NEWRULE = 32
RTM_GETRULE = 34
RTM_NEWTFILTER = 44
RTM_GETTFILTER = 46
RTA_DST, RTA_GATEWAY, RTA_ENCAP_TYPE = 1, 5, 21
FRA_PROTOCOL = 21
NLMSG_ERROR = 2
NLMSG_DONE = 3
NLM_F_REQUEST = 0x1
NLM_F_MULTI = 0x2
NLM_F_ACK = 0x4
NLM_F_DUMP = 0x300
NLM_F_EXCL = 0x200
NLM_F_CREATE = 0x400
IFF_UP = 0x1
IFF_LOWER_UP = 0x10000  # the carrier: the link below is up
RTMGRP_LINK = 0x1  # the multicast group of link changes
IFA_ADDRESS, IFA_LOCAL = 1, 2
NLA_TYPE_MASK = 0x3FFF
IFLA_ADDRESS, IFLA_IFNAME, IFLA_MTU, IFLA_MASTER = 1, 3, 4, 10
IFLA_IFALIAS, IFLA_STATS64 = 20, 23
IFLA_AF_SPEC, IFLA_INET6_ADDR_GEN_MODE = 26, 8
IN6_ADDR_GEN_MODE_EUI64, IN6_ADDR_GEN_MODE_NONE = 0, 1
NLA_F_NESTED = 0x8000

NLMSGHDR = struct.Struct("=IHHII")
IFINFOMSG = struct.Struct("=BxHiII")
NLA = struct.Struct("=HH")
IFADDRMSG = struct.Struct("=BBBBI")  # family, prefixlen, flags, scope, index
RTMSG = struct.Struct("=BBBBBBBBI")  # family, dst_len, src_len, tos, table, proto, scope, type
FIB_RULE_HDR = struct.Struct("=BBBBBBBBI")  # family, dst_len, src_len, tos, table, 2 res, action
TCMSG = struct.Struct("=BxxxiIII")  # family, ifindex, handle, parent, info (prio, protocol)
TCA_KIND, TCA_OPTIONS = 1, 2
TCA_U32_CLASSID, TCA_U32_SEL = 1, 5
# struct rtnl_link_stats64, in the kernel's order: the fields (and names) pyroute2 decodes
STATS64_FIELDS = [
    "rx_packets",
    "tx_packets",
    "rx_bytes",
    "tx_bytes",
    "rx_errors",
    "tx_errors",
    "rx_dropped",
    "tx_dropped",
    "multicast",
    "collisions",
    "rx_length_errors",
    "rx_over_errors",
    "rx_crc_errors",
    "rx_frame_errors",
    "rx_fifo_errors",
    "rx_missed_errors",
    "tx_aborted_errors",
    "tx_carrier_errors",
    "tx_fifo_errors",
    "tx_heartbeat_errors",
    "tx_window_errors",
    "rx_compressed",
    "tx_compressed",
]


@dataclass(frozen=True)
class LinkBrief:
    """What vnet reads of one interface: RTM_GETLINK's header and a few attributes."""

    index: int
    flags: int
    name: str
    mtu: int = 0
    master: int = 0  # 0: none
    mac: bytes = b""
    alias: str = ""
    stats64: dict[str, int] = field(default_factory=dict)

    @property
    def running(self) -> bool:
        """Up and with a carrier: what RFC 2863 calls ifOperStatus up."""
        return bool(self.flags & IFF_UP and self.flags & IFF_LOWER_UP)


def _nla(kind: int, payload: bytes) -> bytes:
    padded = payload + b"\0" * (-len(payload) % 4)
    return NLA.pack(NLA.size + len(payload), kind) + padded


def getlink_request(name: str, seq: int) -> bytes:
    """RTM_GETLINK for interface `name` (looked up by name by the kernel)."""
    body = IFINFOMSG.pack(socket.AF_UNSPEC, 0, 0, 0, 0)
    body += _nla(IFLA_IFNAME, name.encode() + b"\0")
    return NLMSGHDR.pack(NLMSGHDR.size + len(body), RTM_GETLINK, NLM_F_REQUEST, seq, 0) + body


def _message(kind: int, flags: int, seq: int, body: bytes) -> bytes:
    return NLMSGHDR.pack(NLMSGHDR.size + len(body), kind, flags, seq, 0) + body


def setlink_request(
    index: int,
    seq: int,
    *,
    state: str | None = None,
    ifalias: str | None = None,
    mtu: int | None = None,
    master: int | None = None,
    ipv6_link_local: bool | None = None,
) -> bytes:
    """`ip link set`: state "up"/"down", alias, MTU, master (0: none), whether the kernel
    gives it an IPv6 link-local address when it comes up (`addrgenmode eui64|none`; the
    kernel applies it after the state); None leaves it."""
    change = IFF_UP if state is not None else 0
    flags = IFF_UP if state == "up" else 0
    body = IFINFOMSG.pack(socket.AF_UNSPEC, 0, index, flags, change)
    if ifalias is not None:
        body += _nla(IFLA_IFALIAS, ifalias.encode() + b"\0")
    if mtu is not None:
        body += _nla(IFLA_MTU, struct.pack("=I", mtu))
    if master is not None:
        body += _nla(IFLA_MASTER, struct.pack("=I", master))
    if ipv6_link_local is not None:
        mode = IN6_ADDR_GEN_MODE_EUI64 if ipv6_link_local else IN6_ADDR_GEN_MODE_NONE
        inet6 = _nla(IFLA_INET6_ADDR_GEN_MODE, struct.pack("=B", mode))
        body += _nla(IFLA_AF_SPEC | NLA_F_NESTED, _nla(socket.AF_INET6 | NLA_F_NESTED, inet6))
    return _message(RTM_NEWLINK, NLM_F_REQUEST | NLM_F_ACK, seq, body)


def address_request(command: str, index: int, cidr: str, seq: int) -> bytes:
    """`ip address add|del` of `cidr` on interface `index`."""
    itf = ip_interface(cidr)
    packed = itf.ip.packed
    family = socket.AF_INET if itf.version == 4 else socket.AF_INET6
    body = IFADDRMSG.pack(family, itf.network.prefixlen, 0, 0, index)
    body += _nla(IFA_ADDRESS, packed)
    if family == socket.AF_INET:
        body += _nla(IFA_LOCAL, packed)
    if command == "add":
        return _message(
            RTM_NEWADDR, NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL, seq, body
        )
    if command == "del":
        return _message(RTM_DELADDR, NLM_F_REQUEST | NLM_F_ACK, seq, body)
    raise ValueError(f"no address command {command!r}")


def ack_code(data: bytes) -> int:
    """The errno of an acknowledgement (0: done)."""
    _, kind, _, _, _ = NLMSGHDR.unpack_from(data)
    if kind != NLMSG_ERROR:
        return errno.EPROTO
    return -int(struct.unpack_from("=i", data, NLMSGHDR.size)[0])


def reply_seq(data: bytes) -> int:
    return int(NLMSGHDR.unpack_from(data)[3])


def getroute_dump_request(family: int, seq: int) -> bytes:
    """RTM_GETROUTE dump of one address family (every table)."""
    body = RTMSG.pack(family, 0, 0, 0, 0, 0, 0, 0, 0)
    flags = NLM_F_REQUEST | NLM_F_DUMP
    return NLMSGHDR.pack(NLMSGHDR.size + len(body), RTM_GETROUTE, flags, seq, 0) + body


def getrule_dump_request(family: int, seq: int) -> bytes:
    """RTM_GETRULE dump of one address family."""
    body = FIB_RULE_HDR.pack(family, 0, 0, 0, 0, 0, 0, 0, 0)
    return _message(RTM_GETRULE, NLM_F_REQUEST | NLM_F_DUMP, seq, body)


def getlink_dump_request(seq: int) -> bytes:
    """RTM_GETLINK dump: every interface of the namespace."""
    body = IFINFOMSG.pack(socket.AF_UNSPEC, 0, 0, 0, 0)
    return _message(RTM_GETLINK, NLM_F_REQUEST | NLM_F_DUMP, seq, body)


def getfilter_request(
    index: int, parent: int, seq: int, one: tuple[int, int] | None = None
) -> bytes:
    """RTM_GETTFILTER dump of the filters under `parent` on interface `index`; `one`: only
    the filter of that (prio << 16 | protocol, number), answered and acknowledged."""
    if one is None:
        body = TCMSG.pack(socket.AF_UNSPEC, index, 0, parent, 0)
        return _message(RTM_GETTFILTER, NLM_F_REQUEST | NLM_F_DUMP, seq, body)
    info, number = one
    body = TCMSG.pack(socket.AF_UNSPEC, index, number, parent, info)
    return _message(RTM_GETTFILTER, NLM_F_REQUEST | NLM_F_ACK, seq, body)


class Dump:
    """The answer to one dump request, fed datagram by datagram until `done`:
    each message of type `reply_kind` goes to `take`."""

    reply_kind = 0
    absent = 0  # the errno of a request for one thing that is not there (0: an error)

    def __init__(self) -> None:
        self.done = False

    def feed(self, data: bytes, seq: int) -> None:
        """The messages in one datagram that answer request `seq` (older ones are left over
        from an interrupted request)."""
        offset = 0
        while offset + NLMSGHDR.size <= len(data):
            length, kind, _, msg_seq, _ = NLMSGHDR.unpack_from(data, offset)
            if length < NLMSGHDR.size:
                break
            if msg_seq == seq:
                self._one(data, offset, kind)
            offset += (length + 3) & ~3

    def _one(self, data: bytes, offset: int, kind: int) -> None:
        if kind == NLMSG_DONE:
            self.done = True
        elif kind == NLMSG_ERROR:
            code = -struct.unpack_from("=i", data, offset + NLMSGHDR.size)[0]
            if code in (0, self.absent):  # the acknowledgement of a request for one
                self.done = True
                return
            raise OSError(code, f"netlink dump: {errno.errorcode.get(code, code)}")
        elif kind == self.reply_kind:
            self.take(data, offset)

    def take(self, data: bytes, offset: int) -> None:
        raise NotImplementedError


class RouteTally(Dump):
    """Routes of one dump counted by (table, type) from their headers."""

    reply_kind = RTM_NEWROUTE

    def __init__(self, table: int, kind: int) -> None:
        super().__init__()
        self.table, self.kind, self.count = table, kind, 0

    def take(self, data: bytes, offset: int) -> None:
        fields = RTMSG.unpack_from(data, offset + NLMSGHDR.size)
        self.count += fields[4] == self.table and fields[7] == self.kind


@dataclass(frozen=True)
class ProtoRoute:
    """One route of a given protocol, from its header and top-level attributes."""

    dst: str  # a network, "10.1.0.0/24"
    gateway: str | None  # None: no single gateway (a device route, multipath, encap)
    encap_type: int  # RTA_ENCAP_TYPE (0: none)


class RouteDump(Dump):
    """The routes of one dump whose protocol is `protocol` (others are not decoded)."""

    reply_kind = RTM_NEWROUTE

    def __init__(self, protocol: int) -> None:
        super().__init__()
        self.protocol = protocol
        self.routes: list[ProtoRoute] = []

    def take(self, data: bytes, offset: int) -> None:
        family, dst_len, *_, protocol, _, _, _ = RTMSG.unpack_from(data, offset + NLMSGHDR.size)
        if protocol != self.protocol:
            return
        end = offset + NLMSGHDR.unpack_from(data, offset)[0]
        attrs = _attributes(data, offset + NLMSGHDR.size + RTMSG.size, end)
        dst = attrs.get(RTA_DST)
        unspecified = "::" if family == socket.AF_INET6 else "0.0.0.0"
        address = socket.inet_ntop(family, dst) if dst else unspecified
        gateway = attrs.get(RTA_GATEWAY)
        encap = attrs.get(RTA_ENCAP_TYPE)
        self.routes.append(
            ProtoRoute(
                str(ip_network(f"{address}/{dst_len}")),
                socket.inet_ntop(family, gateway) if gateway else None,
                int(struct.unpack("=H", encap[:2])[0]) if encap else 0,
            )
        )


class RuleTally(Dump):
    """Rules of one dump counted by their FRA_PROTOCOL."""

    reply_kind = RTM_NEWRULE

    def __init__(self, protocol: int) -> None:
        super().__init__()
        self.protocol, self.count = protocol, 0

    def take(self, data: bytes, offset: int) -> None:
        end = offset + NLMSGHDR.unpack_from(data, offset)[0]
        attrs = _attributes(data, offset + NLMSGHDR.size + FIB_RULE_HDR.size, end)
        found = attrs.get(FRA_PROTOCOL, b"")
        self.count += found[:1] == bytes([self.protocol])


@dataclass(frozen=True)
class U32Entry:
    """A u32 filter that sends to a class, as the kernel numbered it."""

    handle: int
    info: int  # prio << 16 | protocol (network byte order)
    classid: int
    selector: bytes  # struct tc_u32_sel and its keys (u32.selector_match reads it)


class U32Dump(Dump):
    """The u32 filters of one dump that send to a class (others are skipped). Decoded
    from the headers: pyroute2 decoding every attribute of every filter was most of a
    filter deletion's time with a few thousand connections on an interface."""

    reply_kind = RTM_NEWTFILTER
    absent = errno.ENOENT

    def __init__(self) -> None:
        super().__init__()
        self.filters: list[U32Entry] = []

    def take(self, data: bytes, offset: int) -> None:
        _, _, handle, _, info = TCMSG.unpack_from(data, offset + NLMSGHDR.size)
        end = offset + NLMSGHDR.unpack_from(data, offset)[0]
        attrs = _attributes(data, offset + NLMSGHDR.size + TCMSG.size, end)
        options = attrs.get(TCA_OPTIONS)
        if _text(attrs.get(TCA_KIND, b"")) != "u32" or options is None:
            return
        u32 = _attributes(options, 0, len(options))
        if TCA_U32_CLASSID in u32 and TCA_U32_SEL in u32:
            classid = _u32(u32[TCA_U32_CLASSID])
            self.filters.append(U32Entry(handle, info, classid, u32[TCA_U32_SEL]))


class LinkDump(Dump):
    """Every interface of one dump, decoded as `LinkBrief`s."""

    reply_kind = RTM_NEWLINK

    def __init__(self) -> None:
        super().__init__()
        self.links: list[LinkBrief] = []

    def take(self, data: bytes, offset: int) -> None:
        self.links.append(_link_at(data, offset))


def link_changes(data: bytes) -> list[LinkBrief]:
    """The interfaces a datagram of link notifications (or of a link dump) tells about;
    a deleted interface comes with no flags (neither up nor running)."""
    out = []
    offset = 0
    while offset + NLMSGHDR.size <= len(data):
        length, kind, _, _, _ = NLMSGHDR.unpack_from(data, offset)
        if length < NLMSGHDR.size:
            break
        if kind in (RTM_NEWLINK, RTM_DELLINK):
            link = _link_at(data, offset)
            out.append(replace(link, flags=0) if kind == RTM_DELLINK else link)
        offset += (length + 3) & ~3
    return out


def parse_getlink_reply(data: bytes) -> LinkBrief | None:
    """The interface in a reply to `getlink_request`; None when it does not exist."""
    _, kind, _, _, _ = NLMSGHDR.unpack_from(data)
    if kind == NLMSG_ERROR:
        code = -struct.unpack_from("=i", data, NLMSGHDR.size)[0]
        if code == errno.ENODEV:
            return None
        raise OSError(code, f"RTM_GETLINK: {errno.errorcode.get(code, code)}")
    if kind != RTM_NEWLINK:
        raise OSError(errno.EPROTO, f"RTM_GETLINK answered with message type {kind}")
    return _link_at(data, 0)


def _link_at(data: bytes, offset: int) -> LinkBrief:
    """The RTM_NEWLINK message at `offset`."""
    _, _, index, flags, _ = IFINFOMSG.unpack_from(data, offset + NLMSGHDR.size)
    end = offset + NLMSGHDR.unpack_from(data, offset)[0]
    attrs = _attributes(data, offset + NLMSGHDR.size + IFINFOMSG.size, end)
    stats = attrs.get(IFLA_STATS64, b"")
    count = min(len(stats) // 8, len(STATS64_FIELDS))
    return LinkBrief(
        index=index,
        flags=flags,
        name=_text(attrs.get(IFLA_IFNAME, b"")),
        mtu=_u32(attrs.get(IFLA_MTU)),
        master=_u32(attrs.get(IFLA_MASTER)),
        mac=attrs.get(IFLA_ADDRESS, b""),
        alias=_text(attrs.get(IFLA_IFALIAS, b"")),
        stats64=dict(
            zip(STATS64_FIELDS[:count], struct.unpack_from(f"={count}Q", stats), strict=True)
        ),
    )


def _attributes(data: bytes, offset: int, end: int) -> dict[int, bytes]:
    """The top-level attributes of a message (nested ones stay undecoded)."""
    out = {}
    while offset + NLA.size <= end:
        length, kind = NLA.unpack_from(data, offset)
        if length < NLA.size:
            break
        out[kind & NLA_TYPE_MASK] = bytes(data[offset + NLA.size : offset + length])
        offset += (length + 3) & ~3
    return out


def _u32(raw: bytes | None) -> int:
    return int(struct.unpack("=I", raw)[0]) if raw else 0


def _text(raw: bytes) -> str:
    return raw.split(b"\0", 1)[0].decode(errors="replace")


def acknowledged_here(request: bytes) -> int:
    """Send one request (its seq 1, an ack asked) on a socket of the namespace the calling
    thread is in; the ack's error code (0: done). For a namespace that has no name yet."""
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE) as sock:
        sock.bind((0, 0))
        sock.send(request)
        return answer_to(sock, 1)


def answer_to(sock: socket.socket, seq: int) -> int:
    """The error code (0: done) of the ack to request `seq` sent on `sock`."""
    while True:
        reply = sock.recv(1 << 16)
        if reply_seq(reply) == seq:
            return ack_code(reply)


def link_monitor(ns: NsName) -> socket.socket:
    """A non-blocking netlink socket in `ns` that hears every link change there
    (`link_changes` decodes it), having asked for a dump of every link so the
    first datagrams tell the state before any change."""
    with entered(ns):
        sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE)
    try:
        sock.bind((0, RTMGRP_LINK))
        sock.send(getlink_dump_request(1))
        sock.setblocking(False)
    except OSError:
        sock.close()
        raise
    return sock
