"""Read what vnet owns from the kernel into a KernelState.

Ownership is decided only by vnet's marks: the namespace prefix plus the
loopback alias, the interface alias, the route protocol number. Anything
without a mark is invisible here, and so never planned for deletion.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass, field
from ipaddress import ip_interface
from typing import Any

from pyroute2.netlink.exceptions import NetlinkError

from vnet.substrate import nsfs
from vnet.substrate.kernel import ZERO_MAC, Kernel, NotANamespace, route_key
from vnet.substrate.qos import LINK_MAJOR, VNET_MAJOR, observe_tc
from vnet.substrate.srv6 import observe_connections
from vnet.substrate.state import (
    MARK,
    RTPROT_VNET,
    Address,
    Fdb,
    KernelState,
    Link,
    Namespace,
    NsName,
    Route,
    Shaper,
    ns_from_label,
)

LOOPBACK_NETS = (ip_interface("127.0.0.1/8").network, ip_interface("::1/128").network)


@dataclass
class Observation:
    state: KernelState
    # namespaces with our prefix whose mark cannot be read (a crash between
    # creating the mount point and binding it): safe to remove, nothing inside
    remnants: list[str] = field(default_factory=list)


@dataclass
class _PeerEnd:
    owner: tuple[NsName, str]
    master: str | None


def parse_namespace_mark(name: str, mark: str | None) -> Namespace | None:
    if not mark:
        return None
    parts = mark.split(":")
    if len(parts) != 4 or parts[0] != MARK or parts[2] not in ("host", "router", "endhost", "mgmt"):
        return None
    return Namespace(name=name, scope=parts[1], role=parts[2], node=parts[3])  # type: ignore[arg-type]


def observe(
    kernel: Kernel,
    scope: str,
    prefix: str,
    own_namespace: bool = False,
    namespaces_only: bool = False,
) -> Observation:
    """Everything marked for `scope` in namespaces named `prefix*` (and optionally our own).

    `namespaces_only`: just which namespaces are ours, without reading their
    contents; enough to delete them, and ~20x cheaper in a large lab.
    """
    obs = Observation(KernelState())
    scanned: list[NsName] = [None] if own_namespace else []
    for name in nsfs.list_names(prefix):
        try:
            mark = kernel.namespace_mark(name)
        except NotANamespace:
            obs.remnants.append(name)
            continue
        ns = parse_namespace_mark(name, mark)
        if ns is not None and ns.scope == scope:
            obs.state.add_namespace(ns)
            scanned.append(name)
    if namespaces_only:
        return obs
    peer_ends: dict[tuple[NsName, str], _PeerEnd] = {}
    for ns_name in scanned:
        _read_namespace(kernel, ns_name, scope, obs.state, peer_ends)
    _pair_veths(obs.state, peer_ends)
    return obs


def _owned(alias: str | None, scope: str) -> bool:
    return bool(alias) and alias.split(" ", 1)[0] == f"{MARK}:{scope}"  # type: ignore[union-attr]


def _read_namespace(
    kernel: Kernel,
    ns: NsName,
    scope: str,
    state: KernelState,
    peer_ends: dict[tuple[NsName, str], _PeerEnd],
) -> None:
    ipr = kernel.ipr(ns)
    links = ipr.get_links()
    names = {m["index"]: m.get("ifname") for m in links}
    ours: dict[int, str] = {}
    vxlans: dict[int, str] = {}
    # One qdisc dump says which devices have an HTB root at all; asking each of
    # thousands of VR ports for its classes took most of a large lab's observation.
    shaped = _htb_rooted(ipr)
    whole_namespace_ours = ns is not None  # its loopback carries our mark
    for msg in links:
        name, alias, index = msg.get("ifname"), msg.get("ifalias"), msg["index"]
        if index == 1 and whole_namespace_ours:
            ours[index] = name
            continue
        if not _owned(alias, scope):
            continue
        ours[index] = name
        master = names.get(msg.get("master")) if msg.get("master") else None
        attrs = dict(a.split("=", 1) for a in alias.split(" ")[1:] if "=" in a)
        up = bool(msg["flags"] & 1)
        if "end-of" in attrs:
            owner_ns, owner_name = attrs["end-of"].split("/", 1)
            peer_ends[(ns, name)] = _PeerEnd((ns_from_label(owner_ns), owner_name), master)
            if index in shaped:  # the far end of a rated underlay link
                _read_shaper(ipr, ns, name, index, state)
            continue
        kind = msg.get_nested("IFLA_LINKINFO", "IFLA_INFO_KIND")
        link = Link(
            ns=ns, name=name, kind=kind, scope=scope, mtu=msg.get("mtu"), up=up, master=master
        )
        if kind == "vxlan":
            data = msg.get_nested("IFLA_LINKINFO", "IFLA_INFO_DATA")
            link = _with(
                link,
                vni=data.get("IFLA_VXLAN_ID"),
                local=data.get("IFLA_VXLAN_LOCAL") or data.get("IFLA_VXLAN_LOCAL6"),
            )
        elif kind == "veth" and "peer" in attrs:
            peer_ns, peer_name = attrs["peer"].split("/", 1)
            link = _with(link, peer_ns=ns_from_label(peer_ns), peer_name=peer_name)
        state.add_link(link)
        if kind == "vxlan":
            vxlans[index] = name
        if kind == "veth" and index in shaped:
            _read_shaper(ipr, ns, name, index, state)
    if vxlans:
        _read_fdb(ipr, ns, vxlans, state)
    _read_addresses(ipr, ns, ours, state)
    if whole_namespace_ours:
        # Routes carry no owner beyond protocol 118, so only in namespaces that are
        # wholly vnet's are they known to be this scope's. vnet makes none elsewhere;
        # in a lab host's namespace the lab's routes and that host's agent meet.
        _read_routes(ipr, ns, state)
    _read_tunnels_and_classes(ipr, ns, names, ours, state)


def _read_tunnels_and_classes(
    ipr: Any, ns: NsName, names: dict[int, str], ours: dict[int, str], state: KernelState
) -> None:
    """Connections (router namespaces) and bandwidth classes (on vnet's own interfaces)."""
    role = state.namespaces[ns].role if ns in state.namespaces else None
    owned = {index: name for index, name in ours.items() if index != 1}
    if role == "router":
        observe_connections(ipr, ns, names, state)
        observe_tc(ipr, ns, owned, VNET_MAJOR, state)
    elif role == "host":
        observe_tc(ipr, ns, owned, LINK_MAJOR, state)


def _with(link: Link, **changes: Any) -> Link:
    from dataclasses import replace

    return replace(link, **changes)


def _read_addresses(ipr: Any, ns: NsName, ours: dict[int, str], state: KernelState) -> None:
    for msg in ipr.get_addr():
        if msg["index"] not in ours or msg["scope"] != 0:  # 0: global
            continue
        itf = ip_interface(f"{msg.get('address')}/{msg['prefixlen']}")
        if any(itf.ip in net for net in LOOPBACK_NETS if net.version == itf.version):
            continue
        state.addresses.add(Address(ns, ours[msg["index"]], str(itf)))


def _read_routes(ipr: Any, ns: NsName, state: KernelState) -> None:
    for family in (socket.AF_INET, socket.AF_INET6):
        for msg in ipr.route("dump", family=family, proto=RTPROT_VNET):
            if msg["proto"] != RTPROT_VNET:
                continue
            key = route_key(msg)
            if key is not None:
                state.routes.add(Route(ns, *key))


def _read_fdb(ipr: Any, ns: NsName, vxlans: dict[int, str], state: KernelState) -> None:
    """One dump per namespace: the kernel answers with every bridge's entries anyway."""
    for msg in ipr.fdb("dump"):
        index = msg["ifindex"]
        if index in vxlans and msg.get("lladdr") == ZERO_MAC and msg.get("dst"):
            state.fdb.add(Fdb(ns, vxlans[index], msg.get("dst")))


def _htb_rooted(ipr: Any) -> set[int]:
    try:
        qdiscs = ipr.get_qdiscs()
    except NetlinkError:
        return set()
    return {q["index"] for q in qdiscs if q["parent"] == 0xFFFFFFFF and q.get("kind") == "htb"}


def _read_shaper(ipr: Any, ns: NsName, name: str, index: int, state: KernelState) -> None:
    try:
        classes = ipr.get_classes(index=index)
    except NetlinkError:
        return
    for msg in classes:
        if msg.get("kind") == "htb" and msg["handle"] == 0x10001:
            parms = msg.get_nested("TCA_OPTIONS", "TCA_HTB_PARMS")
            rate64 = msg.get_nested("TCA_OPTIONS", "TCA_HTB_RATE64")
            rate = (rate64 or parms["rate"]) * 8
            state.shapers[(ns, name)] = Shaper(ns, name, rate)


def _pair_veths(state: KernelState, peer_ends: dict[tuple[NsName, str], _PeerEnd]) -> None:
    """Join each veth owner end with its far end; an owner without one is broken."""
    for key, link in list(state.links.items()):
        if link.kind != "veth":
            continue
        end = peer_ends.get((link.peer_ns, link.peer_name or ""))
        if end is None or end.owner != key:
            state.broken.add(key)
            continue
        state.links[key] = _with(link, peer_master=end.master)
