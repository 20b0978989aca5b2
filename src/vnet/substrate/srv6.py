"""Connections on Linux: SRv6 SIDs, per-connection routing tables and policy rules.

For each tunnel (one direction of a connection, see `vnet.model.srv6`):

- ingress router: `ip rule add pref 1000+id from A to B [ipproto P] [sport S]
  [dport D] iif <lan> lookup 65536+id protocol 118` (one per family), and in that
  table `ip route add B encap seg6 mode encap segs <SIDs> dev <out> proto 118`;
- every router in between: `ip -6 route add <End SID>/128 encap seg6local action End`;
- egress router: `... action End.DX4 nh4 B` (End.DX6 nh6 B for IPv6).

Everything is a netlink object with vnet's mark (route protocol 118, rule
protocol 118), inside router namespaces that are vnet's as a whole; observe
reads exactly these back, so realize/observe/plan round-trip. A path change is
one `ip route replace` of the encap route (see `vnet.substrate.mbb`).
"""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass
from ipaddress import ip_network
from typing import Any

from vnet.model import Topology
from vnet.model.srv6 import PROTOCOL_NUMBERS, tunnels
from vnet.substrate import nsfs
from vnet.substrate.state import RTPROT_VNET, KernelState, NsName

LWTUNNEL_ENCAP_SEG6 = 5
LWTUNNEL_ENCAP_SEG6_LOCAL = 7
SEG6_LOCAL_ACTIONS = {"End": 1, "End.DX6": 5, "End.DX4": 6}
SEG6_LOCAL_NAMES = {v: k for k, v in SEG6_LOCAL_ACTIONS.items()}


def _ip(ns: NsName, family: int | None = None) -> str:
    fam = {4: " -4", 6: " -6"}.get(family or 0, "")
    return (f"ip -n {ns}" if ns else "ip") + fam


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


# -- realize ---------------------------------------------------------------------


def realize_connections(topo: Topology, where: Any, state: KernelState) -> None:
    """Add every connection's SIDs, tables and rules on the hosts `where` includes."""
    if not topo.connections:
        return
    hosts = {vr.name: vr.host for vr in topo.routers}
    for t in tunnels(topo):
        if where.includes(hosts[t.ingress]):
            ns = where.node_ns(t.ingress)
            for fam in t.families:
                host_len = 32 if fam == 4 else 128
                dst = f"{t.dst_addr[fam]}/{host_len}"
                steer = SteerRoute(ns, t.table, dst, t.segments(fam), t.out_ifname)
                state.steers[steer.key] = steer
                proto = PROTOCOL_NUMBERS[t.protocol][0 if fam == 4 else 1] if t.protocol else None
                state.rules.add(
                    SteerRule(
                        ns,
                        fam,
                        t.priority,
                        t.table,
                        f"{t.src_addr[fam]}/{host_len}",
                        dst,
                        t.lan_ifname,
                        proto,
                        t.src_port,
                        t.dst_port,
                    )
                )
        for router, end_sid in t.transit:
            if where.includes(hosts[router]):
                vr = topo.router(router)
                s = SidRoute(where.node_ns(router), end_sid, "End", None, vr.ifname(0))
                state.sids[s.key] = s
        if where.includes(hosts[t.egress]):
            for fam in t.families:
                action = "End.DX4" if fam == 4 else "End.DX6"
                s = SidRoute(
                    where.node_ns(t.egress),
                    t.egress_sids[fam],
                    action,
                    t.dst_addr[fam],
                    t.egress_ifname,
                )
                state.sids[s.key] = s


# -- kernel ----------------------------------------------------------------------


def _seg6local(s: SidRoute) -> dict[str, Any]:
    encap: dict[str, Any] = {"type": "seg6local", "action": s.action}
    if s.nh is not None:
        encap["nh4" if s.action == "End.DX4" else "nh6"] = s.nh
    return encap


def set_sid(k: Any, s: SidRoute, command: str = "add") -> None:
    k.ipr(s.ns).route(
        command,
        dst=f"{s.sid}/128",
        family=socket.AF_INET6,
        oif=k.index(s.ns, s.dev),
        encap=_seg6local(s),
        proto=RTPROT_VNET,
    )


def delete_sid(k: Any, s: SidRoute) -> None:
    k.ipr(s.ns).route("del", dst=f"{s.sid}/128", family=socket.AF_INET6, proto=RTPROT_VNET)


def set_steer(k: Any, r: SteerRoute, command: str = "add") -> None:
    # The segment routing header lists segments last first; iproute2 reverses
    # what it is given, pyroute2 does not.
    k.ipr(r.ns).route(
        command,
        dst=r.dst,
        family=socket.AF_INET6 if r.family == 6 else socket.AF_INET,
        table=r.table,
        oif=k.index(r.ns, r.dev),
        encap={"type": "seg6", "mode": "encap", "segs": list(reversed(r.segs))},
        proto=RTPROT_VNET,
    )


def delete_steer(k: Any, r: SteerRoute) -> None:
    k.ipr(r.ns).route(
        "del",
        dst=r.dst,
        family=socket.AF_INET6 if r.family == 6 else socket.AF_INET,
        table=r.table,
        proto=RTPROT_VNET,
    )


def _rule_args(r: SteerRule) -> dict[str, Any]:
    src, dst = ip_network(r.src), ip_network(r.dst)
    args: dict[str, Any] = {
        "family": socket.AF_INET if r.family == 4 else socket.AF_INET6,
        "priority": r.priority,
        "table": r.table,
        "src": str(src.network_address),
        "src_len": src.prefixlen,
        "dst": str(dst.network_address),
        "dst_len": dst.prefixlen,
        "iifname": r.iif,
        "protocol": RTPROT_VNET,
    }
    if r.ip_proto is not None:
        args["ip_proto"] = r.ip_proto
    if r.sport is not None:
        args["sport_range"] = f"{r.sport}:{r.sport}"
    if r.dport is not None:
        args["dport_range"] = f"{r.dport}:{r.dport}"
    return args


def add_rule(k: Any, r: SteerRule) -> None:
    k.ipr(r.ns).rule("add", **_rule_args(r))


def delete_rule(k: Any, r: SteerRule) -> None:
    k.ipr(r.ns).rule("del", **_rule_args(r))


NUD_USABLE = 0x02 | 0x04 | 0x08 | 0x10 | 0x80  # reachable, stale, delay, probe, permanent


def resolve_neighbours(k: Any, hops: tuple[tuple[NsName, str], ...], timeout: float = 2.0) -> None:
    """Make every router on a path know its next hop's link-layer address.

    A datagram to the discard port starts neighbour discovery (the answer is a
    harmless "port unreachable"); without this the first packets of a switched
    flow would wait in, and overflow, a 3-packet queue per unresolved neighbour.
    """
    pending = list(hops)
    deadline = time.monotonic() + timeout
    while pending:
        for ns, addr in pending:
            with nsfs.entered(ns):
                probe = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
            try:
                probe.sendto(b"", (addr, 9))
            except OSError:
                pass  # no route yet: retried below, then reported
            finally:
                probe.close()
        time.sleep(0.005)
        pending = [
            (ns, addr)
            for ns, addr in pending
            if not any(
                n["state"] & NUD_USABLE
                for n in k.ipr(ns).get_neighbours(family=socket.AF_INET6, dst=addr)
            )
        ]
        if pending and time.monotonic() > deadline:
            ns, addr = pending[0]
            raise OSError(f"next hop {addr} does not answer neighbour discovery in {ns}")
        if pending:
            time.sleep(0.05)


# -- observe ---------------------------------------------------------------------


def _port(text: str | None) -> int | None:
    if not text:
        return None
    # vnet writes single ports ("5201:5201"); a range would show as its start
    return int(str(text).partition(":")[0])


def observe_connections(ipr: Any, ns: NsName, names: dict[int, str], state: KernelState) -> None:
    """Read vnet's rules, encap routes and SIDs of one router namespace."""
    for family, version in ((socket.AF_INET, 4), (socket.AF_INET6, 6)):
        for msg in ipr.get_rules(family=family):
            if msg.get("FRA_PROTOCOL") != RTPROT_VNET:
                continue
            src = msg.get("FRA_SRC") or ("0.0.0.0" if version == 4 else "::")
            dst = msg.get("FRA_DST") or ("0.0.0.0" if version == 4 else "::")
            state.rules.add(
                SteerRule(
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
            )
        for msg in ipr.route("dump", family=family, proto=RTPROT_VNET):
            if msg["proto"] != RTPROT_VNET:
                continue
            kind = msg.get("RTA_ENCAP_TYPE")
            if kind not in (LWTUNNEL_ENCAP_SEG6, LWTUNNEL_ENCAP_SEG6_LOCAL):
                continue
            dst = str(ip_network(f"{msg.get('RTA_DST')}/{msg['dst_len']}"))
            dev = names.get(msg.get("RTA_OIF") or 0, "")
            encap = msg.get("RTA_ENCAP")
            if kind == LWTUNNEL_ENCAP_SEG6:
                srh = encap.get("SEG6_IPTUNNEL_SRH") if encap is not None else None
                segs = tuple(reversed(srh["segs"])) if srh else ()
                table = msg.get("RTA_TABLE") or msg["table"]
                steer = SteerRoute(ns, table, dst, segs, dev)
                state.steers[steer.key] = steer
            else:
                action = SEG6_LOCAL_NAMES.get(encap.get("SEG6_LOCAL_ACTION"), "?")
                nh = encap.get("SEG6_LOCAL_NH4") or encap.get("SEG6_LOCAL_NH6")
                s = SidRoute(ns, dst.split("/")[0], action, nh, dev)
                state.sids[s.key] = s
