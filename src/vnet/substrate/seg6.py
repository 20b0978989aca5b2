"""SRv6 on Linux: SIDs (seg6local routes), encap routes in per-connection tables,
and the policy rules that steer a connection's flow into its table.

For each tunnel (one direction of a connection, see `vnet.model.srv6`):

- ingress router: `ip rule add pref 1000+id from A to B [ipproto P] [sport S]
  [dport D] iif <lan> lookup 65536+id protocol 118` (one per family), and in that
  table `ip route add B encap seg6 mode encap segs <SIDs> dev <out> proto 118`;
- every router in between: `ip -6 route add <End SID>/128 encap seg6local action End`;
- egress router: `... action End.DX4 nh4 B` (End.DX6 nh6 B for IPv6).

Everything carries vnet's mark (route and rule protocol 118), inside router
namespaces that are vnet's as a whole; `read` gives exactly these back, so
realize/observe/plan round-trip. A path change is one `ip route replace` of
the encap route (see `vnet.substrate.mbb`).
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from ipaddress import ip_network
from typing import Any

from vnet.substrate import rtchange
from vnet.substrate.kernel import Kernel, Message
from vnet.substrate.marks import RTPROT_VNET, NsName, ip_cmd
from vnet.substrate.rtchange import LWTUNNEL_ENCAP_SEG6, LWTUNNEL_ENCAP_SEG6_LOCAL

SEG6_LOCAL_ACTIONS = {"End": 1, "End.DX6": 5, "End.DX4": 6}
SEG6_LOCAL_NAMES = {v: k for k, v in SEG6_LOCAL_ACTIONS.items()}


def _family(version: int) -> int:
    return socket.AF_INET6 if version == 6 else socket.AF_INET


@dataclass(frozen=True)
class SidRoute:
    """A seg6local route: a SID this router acts on (End, End.DX4, End.DX6)."""

    ns: NsName
    sid: str
    action: str
    nh: str | None
    dev: str

    @property
    def key(self) -> tuple[NsName, str]:
        return (self.ns, self.sid)

    def words(self) -> str:
        nh = ""
        if self.nh is not None:
            nh = f" nh4 {self.nh}" if self.action == "End.DX4" else f" nh6 {self.nh}"
        return f"{self.sid}/128 encap seg6local action {self.action}{nh} dev {self.dev} proto 118"

    def encap(self) -> rtchange.Encap:
        return rtchange.seg6_local(SEG6_LOCAL_ACTIONS[self.action], self.nh)


@dataclass(frozen=True)
class SteerRoute:
    """The route in a connection's table that encapsulates its flow with the path's SIDs."""

    ns: NsName
    table: int
    dst: str  # the far end host, /32 or /128
    segs: tuple[str, ...]  # in path order
    dev: str

    @property
    def key(self) -> tuple[NsName, int, str]:
        return (self.ns, self.table, self.dst)

    @property
    def family(self) -> int:
        return 6 if ":" in self.dst else 4

    def words(self) -> str:
        return (
            f"{self.dst} table {self.table} encap seg6 mode encap segs {','.join(self.segs)} "
            f"dev {self.dev} proto 118"
        )


@dataclass(frozen=True)
class SteerRule:
    """The policy rule that sends exactly a connection's flow to its table."""

    ns: NsName
    family: int
    priority: int
    table: int
    src: str
    dst: str
    iif: str
    ip_proto: int | None = None
    sport: int | None = None
    dport: int | None = None

    def words(self) -> str:
        parts = [f"pref {self.priority} from {self.src} to {self.dst}"]
        if self.ip_proto is not None:
            parts.append(f"ipproto {self.ip_proto}")
        if self.sport is not None:
            parts.append(f"sport {self.sport}")
        if self.dport is not None:
            parts.append(f"dport {self.dport}")
        parts.append(f"iif {self.iif} lookup {self.table} protocol 118")
        return " ".join(parts)

    def attrs(self) -> dict[str, Any]:
        src, dst = ip_network(self.src), ip_network(self.dst)
        args: dict[str, Any] = {
            "family": _family(self.family),
            "priority": self.priority,
            "table": self.table,
            "src": str(src.network_address),
            "src_len": src.prefixlen,
            "dst": str(dst.network_address),
            "dst_len": dst.prefixlen,
            "iifname": self.iif,
            "protocol": RTPROT_VNET,
        }
        if self.ip_proto is not None:
            args["ip_proto"] = self.ip_proto
        if self.sport is not None:
            args["sport_range"] = f"{self.sport}:{self.sport}"
        if self.dport is not None:
            args["dport_range"] = f"{self.dport}:{self.dport}"
        return args


# -- operations ------------------------------------------------------------------


def _set_sid(k: Kernel, s: SidRoute, command: str) -> None:
    k.srv6_route(s.ns, command, f"{s.sid}/128", s.dev, proto=RTPROT_VNET, encap=s.encap())


@dataclass(frozen=True)
class AddSid:
    sid: SidRoute

    def run(self, k: Kernel) -> None:
        _set_sid(k, self.sid, "add")

    def inverse(self) -> DeleteSid:
        return DeleteSid(self.sid)

    def describe(self) -> str:
        return f"{ip_cmd(self.sid.ns, 6)} route add {self.sid.words()}"


@dataclass(frozen=True)
class DeleteSid:
    sid: SidRoute

    def run(self, k: Kernel) -> None:
        s = self.sid
        k.srv6_route(s.ns, "del", f"{s.sid}/128", proto=RTPROT_VNET)

    def inverse(self) -> AddSid:
        return AddSid(self.sid)

    def describe(self) -> str:
        return f"{ip_cmd(self.sid.ns, 6)} route del {self.sid.sid}/128 proto 118"


@dataclass(frozen=True)
class ReplaceSid:
    old: SidRoute
    new: SidRoute

    def run(self, k: Kernel) -> None:
        _set_sid(k, self.new, "replace")

    def inverse(self) -> ReplaceSid:
        return ReplaceSid(self.new, self.old)

    def describe(self) -> str:
        return f"{ip_cmd(self.new.ns, 6)} route replace {self.new.words()}"


def _set_steer(k: Kernel, r: SteerRoute, command: str) -> None:
    encap = rtchange.seg6_encap(r.segs)
    k.srv6_route(r.ns, command, r.dst, r.dev, proto=RTPROT_VNET, table=r.table, encap=encap)


@dataclass(frozen=True)
class AddSteer:
    route: SteerRoute

    def run(self, k: Kernel) -> None:
        _set_steer(k, self.route, "add")

    def inverse(self) -> DeleteSteer:
        return DeleteSteer(self.route)

    def describe(self) -> str:
        return f"{ip_cmd(self.route.ns, self.route.family)} route add {self.route.words()}"


@dataclass(frozen=True)
class DeleteSteer:
    route: SteerRoute

    def run(self, k: Kernel) -> None:
        r = self.route
        k.srv6_route(r.ns, "del", r.dst, proto=RTPROT_VNET, table=r.table)

    def inverse(self) -> AddSteer:
        return AddSteer(self.route)

    def describe(self) -> str:
        r = self.route
        return f"{ip_cmd(r.ns, r.family)} route del {r.dst} table {r.table} proto 118"


@dataclass(frozen=True)
class SwitchPath:
    """The make-before-break switch: one atomic `ip route replace` of the encap route."""

    old: SteerRoute
    new: SteerRoute

    def run(self, k: Kernel) -> None:
        _set_steer(k, self.new, "replace")

    def inverse(self) -> SwitchPath:
        return SwitchPath(self.new, self.old)

    def describe(self) -> str:
        return f"{ip_cmd(self.new.ns, self.new.family)} route replace {self.new.words()}"


@dataclass(frozen=True)
class AddRule:
    rule: SteerRule

    def run(self, k: Kernel) -> None:
        k.rule(self.rule.ns, "add", **self.rule.attrs())

    def inverse(self) -> DeleteRule:
        return DeleteRule(self.rule)

    def describe(self) -> str:
        return f"{ip_cmd(self.rule.ns, self.rule.family)} rule add {self.rule.words()}"


@dataclass(frozen=True)
class DeleteRule:
    rule: SteerRule

    def run(self, k: Kernel) -> None:
        k.rule(self.rule.ns, "del", **self.rule.attrs())

    def inverse(self) -> AddRule:
        return AddRule(self.rule)

    def describe(self) -> str:
        return f"{ip_cmd(self.rule.ns, self.rule.family)} rule del {self.rule.words()}"


# -- read ------------------------------------------------------------------------


def _port(text: str | None) -> int | None:
    if not text:
        return None
    # vnet writes single ports ("5201:5201"); a range would show as its start
    return int(str(text).partition(":")[0])


def _rule(ns: NsName, version: int, msg: Message) -> SteerRule:
    any_addr = "0.0.0.0" if version == 4 else "::"
    src = msg.get("FRA_SRC") or any_addr
    dst = msg.get("FRA_DST") or any_addr
    return SteerRule(
        ns,
        version,
        msg.get("FRA_PRIORITY") or 0,
        msg.get("FRA_TABLE") or msg["table"],
        str(ip_network(f"{src}/{msg['src_len']}")),
        str(ip_network(f"{dst}/{msg['dst_len']}")),
        msg.get("FRA_IIFNAME") or "",
        msg.get("FRA_IP_PROTO"),
        _port(msg.get("FRA_SPORT_RANGE")),
        _port(msg.get("FRA_DPORT_RANGE")),
    )


def _encap_route(ns: NsName, msg: Message, names: dict[int, str]) -> SidRoute | SteerRoute | None:
    kind = msg.get("RTA_ENCAP_TYPE")
    if kind not in (LWTUNNEL_ENCAP_SEG6, LWTUNNEL_ENCAP_SEG6_LOCAL):
        return None
    dst = str(ip_network(f"{msg.get('RTA_DST')}/{msg['dst_len']}"))
    dev = names.get(msg.get("RTA_OIF") or 0, "")
    encap = msg.get("RTA_ENCAP")
    if kind == LWTUNNEL_ENCAP_SEG6:
        srh = encap.get("SEG6_IPTUNNEL_SRH") if encap is not None else None
        segs = tuple(reversed(srh["segs"])) if srh else ()
        return SteerRoute(ns, msg.get("RTA_TABLE") or msg["table"], dst, segs, dev)
    action = SEG6_LOCAL_NAMES.get(encap.get("SEG6_LOCAL_ACTION"), "?")
    nh = encap.get("SEG6_LOCAL_NH4") or encap.get("SEG6_LOCAL_NH6")
    return SidRoute(ns, dst.split("/")[0], action, nh, dev)


def read(
    k: Kernel, ns: NsName, names: dict[int, str]
) -> tuple[list[SidRoute], list[SteerRoute], list[SteerRule]]:
    """vnet's SIDs, encap routes and rules in one router namespace."""
    sids, steers, rules = [], [], []
    for family, version in ((socket.AF_INET, 4), (socket.AF_INET6, 6)):
        # headers first (rtquery.py): most VRs hold no connection, and decoding every
        # route and rule of thousands of namespaces with pyroute2 was most of a reconcile
        if k.rule_count(ns, family, RTPROT_VNET):
            rules += [
                _rule(ns, version, msg)
                for msg in k.rules(ns, family)
                if msg.get("FRA_PROTOCOL") == RTPROT_VNET
            ]
        ours = k.proto_routes(ns, family, RTPROT_VNET)
        if not any(r.encap_type in (LWTUNNEL_ENCAP_SEG6, LWTUNNEL_ENCAP_SEG6_LOCAL) for r in ours):
            continue
        for msg in k.routes(ns, family, proto=RTPROT_VNET):
            if msg["proto"] != RTPROT_VNET:
                continue
            found = _encap_route(ns, msg, names)
            if isinstance(found, SteerRoute):
                steers.append(found)
            elif found is not None:
                sids.append(found)
    return sids, steers, rules
