"""Routing configurations that cannot work, refused with the exact place before anything starts.

OSPF forms no adjacency between interfaces of one network whose areas or
hello/dead intervals differ, cannot run a version on an interface without an
address of its family, and two routers with one router id in one tenant's
OSPF domain fight over their LSAs. Each is a problem here, not a silent
"neighbour stuck in Init" later.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from ipaddress import IPv4Address

from vnet.model.errors import Loc, Problem, shown
from vnet.model.routing import Family, InterfaceOspf
from vnet.model.topology import Topology, VirtualRouter

OSPF_VERSION = {"ipv4": "OSPFv2", "ipv6": "OSPFv3"}


def router_id(vr: VirtualRouter) -> IPv4Address:
    """The VR's OSPF router id: its own, else its smallest IPv4 address, else one from its name."""
    if vr.routing is not None and vr.routing.router_id is not None:
        return vr.routing.router_id
    ipv4 = [itf.ipv4.ip for itf in vr.interfaces if itf.ipv4 is not None]
    if ipv4:
        return min(ipv4)
    return IPv4Address(zlib.crc32(vr.name.encode()) or 1)


def ospf_families(vr: VirtualRouter) -> list[Family]:
    """The OSPF versions the VR runs, as families: its own, else those its OSPF interfaces have."""
    if vr.routing is not None and vr.routing.families is not None:
        return list(dict.fromkeys(vr.routing.families))
    fams: list[Family] = []
    for itf in vr.interfaces:
        if itf.ospf is not None:
            fams += [f for f in ("ipv4", "ipv6") if getattr(itf, f) is not None and f not in fams]
    return sorted(fams)


@dataclass(frozen=True)
class _Member:
    """One OSPF interface on a network: who it is (for messages) and its settings."""

    loc: Loc
    who: str
    ospf: InterfaceOspf


def routing_problems(topo: Topology) -> list[Problem]:
    out: list[Problem] = []
    members: dict[str, list[_Member]] = {}  # network -> its OSPF interfaces, in file order
    ids: dict[tuple[str, IPv4Address], str] = {}  # (tenant, router id) -> first VR with it
    tenants = {n.name: n.tenant for n in topo.networks}
    for i, vr in enumerate(topo.routers):
        subject = f"router {shown(vr.name)}"
        out += [Problem(loc, msg, subject) for loc, msg in _router_problems(topo, i, vr)]
        if not vr.runs_ospf:
            continue
        for k, itf in enumerate(vr.interfaces):
            if itf.ospf is not None:
                loc = ("routers", i, "interfaces", k, "ospf")
                who = f"router {vr.name!r} interface {vr.ifname(k)!r}"
                members.setdefault(itf.network, []).append(_Member(loc, who, itf.ospf))
        tenant = next((tenants[x.network] for x in vr.interfaces if x.network in tenants), "")
        rid = router_id(vr)
        first = ids.setdefault((tenant, rid), vr.name)
        if first != vr.name:
            out.append(
                Problem(
                    ("routers", i, "routing", "router_id"),
                    f"router id {rid} is already that of router {first!r} in tenant {tenant!r}: "
                    "give one of them its own `router_id`",
                    subject,
                )
            )
    for network, on_net in members.items():
        out += _shared_network_problems(network, on_net)
    return out


def _router_problems(topo: Topology, i: int, vr: VirtualRouter) -> list[tuple[Loc, str]]:
    out: list[tuple[Loc, str]] = []
    ospf_itfs = [k for k, itf in enumerate(vr.interfaces) if itf.ospf is not None]
    if not vr.runs_ospf:
        for k in ospf_itfs:
            out.append(
                (
                    ("routers", i, "interfaces", k, "ospf"),
                    "OSPF settings on an interface of a VR whose routing is static: "
                    "set the VR's `routing: {protocol: ospf}` or remove them",
                )
            )
        return out
    if not ospf_itfs:
        out.append(
            (
                ("routers", i, "routing", "protocol"),
                "routing is ospf but no interface takes part: give the interfaces toward "
                "other routers an `ospf:` section",
            )
        )
    families = ospf_families(vr)
    nets = {n.name: n for n in topo.networks}
    for k in ospf_itfs:
        itf = vr.interfaces[k]
        net = nets.get(itf.network)
        if not families:
            out.append(
                (
                    ("routers", i, "interfaces", k, "ospf"),
                    f"OSPF on network {itf.network!r} but the interface has no address: "
                    "OSPFv2 needs an IPv4 one, OSPFv3 an IPv6 one",
                )
            )
        for fam in families:
            if getattr(itf, fam) is not None:
                continue
            has_subnet = net is not None and getattr(net, fam) is not None
            why = "the interface has none" if has_subnet else "the network has none"
            out.append(
                (
                    ("routers", i, "interfaces", k, "ospf"),
                    f"{OSPF_VERSION[fam]} runs on every OSPF interface of this VR but network "
                    f"{itf.network!r} has no {fam.upper().replace('IPV', 'IPv')} address here "
                    f"({why}): give it one or set the VR's `routing.families`",
                )
            )
    return out


def _shared_network_problems(network: str, on_net: list[_Member]) -> list[Problem]:
    """Every OSPF interface of one network agrees with the first on area, hello and dead."""
    out: list[Problem] = []
    first = on_net[0]
    for m in on_net[1:]:
        for field, unit in (("area", ""), ("hello", " s"), ("dead", " s")):
            mine, theirs = getattr(m.ospf, field), getattr(first.ospf, field)
            if mine != theirs:
                out.append(
                    Problem(
                        (*m.loc, field),
                        f"{field} {mine}{unit} differs from {theirs}{unit} of {first.who} on "
                        f"the shared network {network!r}: OSPF forms no adjacency between them",
                        m.who,
                    )
                )
    return out
