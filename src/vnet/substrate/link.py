"""Links: bridges, VXLAN devices and veth pairs, marked by their interface alias."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from vnet.substrate.kernel import Kernel, KernelError, Message, ns_text
from vnet.substrate.marks import MARK, NsName, ip_cmd, ns_from_label, ns_label
from vnet.substrate.rtquery import LinkBrief

VXLAN_PORT = 4789


@dataclass(frozen=True)
class Link:
    """A bridge, a VXLAN device, or a whole veth pair (owner end + peer end)."""

    ns: NsName
    name: str
    kind: Literal["bridge", "vxlan", "veth"]
    scope: str
    mtu: int = 1500
    up: bool = True
    master: str | None = None
    # vxlan
    vni: int | None = None
    local: str | None = None
    # veth: the far end, which always stays up; `up` is the owner end's state
    peer_ns: NsName = None
    peer_name: str | None = None
    peer_master: str | None = None

    @property
    def key(self) -> tuple[NsName, str]:
        return (self.ns, self.name)

    @property
    def alias(self) -> str:
        if self.kind == "veth":
            return f"{MARK}:{self.scope} peer={ns_label(self.peer_ns)}/{self.peer_name}"
        return f"{MARK}:{self.scope}"

    @property
    def peer_alias(self) -> str:
        return f"{MARK}:{self.scope} end-of={ns_label(self.ns)}/{self.name}"

    def immutable(self) -> tuple[object, ...]:
        """What cannot change in place: a difference means delete and recreate."""
        return (self.kind, self.vni, self.local, self.peer_ns, self.peer_name)


def _link_words(link: Link) -> str:
    words = [f"mtu {link.mtu}"]
    if link.master:
        words.append(f"master {link.master}")
    words.append("up" if link.up else "down")
    return " ".join(words)


def _kind_attrs(link: Link) -> dict[str, Any]:
    if link.kind == "vxlan":
        assert link.local is not None and link.vni is not None
        local_key = "vxlan_local6" if ":" in link.local else "vxlan_local"
        return {
            "vxlan_id": link.vni,
            "vxlan_port": VXLAN_PORT,
            "vxlan_learning": 1,
            local_key: link.local,
        }
    if link.kind == "veth":
        assert link.peer_name is not None
        return {"peer": {"ifname": link.peer_name, "ns": link.peer_ns, "mtu": link.mtu}}
    return {}


@dataclass(frozen=True)
class CreateLink:
    link: Link

    def run(self, k: Kernel) -> None:
        lk = self.link
        k.add_link(lk.ns, lk.name, lk.kind, lk.master, mtu=lk.mtu, **_kind_attrs(lk))
        if lk.master:
            # A bridge port has no address of its own, so no IPv6 link-local either (set
            # while it is down: it is made when the port comes up). Each would be two
            # routes in the host's IPv6 tables, which the kernel walks whole, holding the
            # lock every link change takes, when any port comes up or goes: with 10,000 VRs
            # that walk was a large share of every create and delete.
            k.set_link(lk.ns, lk.name, ipv6_link_local=False)
        if lk.kind == "veth":
            assert lk.peer_name is not None
            k.set_link(lk.peer_ns, lk.peer_name, lk.peer_master, state="up", ifalias=lk.peer_alias)
        # The kernel ignores IFLA_IFALIAS on creation; set the mark right after.
        k.set_link(lk.ns, lk.name, ifalias=lk.alias, state="up" if lk.up else "down")

    def inverse(self) -> DeleteLink:
        return DeleteLink(self.link)

    def describe(self) -> str:
        lk = self.link
        head = f"{ip_cmd(lk.ns)} link add {lk.name} {_link_words(lk)}"
        if lk.kind == "vxlan":
            return f"{head} type vxlan id {lk.vni} local {lk.local} dstport {VXLAN_PORT}"
        if lk.kind == "veth":
            netns = f" netns {lk.peer_ns}" if lk.peer_ns else ""
            return f"{head} type veth peer name {lk.peer_name}{netns}"
        return f"{head} type {lk.kind}"


@dataclass(frozen=True)
class DeleteLink:
    link: Link

    def run(self, k: Kernel) -> None:
        k.delete_link(self.link.ns, self.link.name)

    def inverse(self) -> CreateLink:
        return CreateLink(self.link)

    def describe(self) -> str:
        return f"{ip_cmd(self.link.ns)} link del {self.link.name}"


@dataclass(frozen=True)
class ModifyLink:
    """Bring mtu, master and state to `new`'s values (both ends of a veth)."""

    old: Link
    new: Link

    def run(self, k: Kernel) -> None:
        lk = self.new
        if lk.kind == "veth":
            k.set_link(lk.peer_ns, lk.peer_name or "", mtu=lk.mtu)
        k.set_link(lk.ns, lk.name, lk.master or "", mtu=lk.mtu)
        k.set_link(lk.ns, lk.name, state="up" if lk.up else "down")

    def inverse(self) -> ModifyLink:
        return ModifyLink(self.new, self.old)

    def describe(self) -> str:
        state = "up" if self.new.up else "down"
        return (
            f"{ip_cmd(self.new.ns)} link set {self.new.name} mtu {self.new.mtu} "
            f"{'master ' + self.new.master if self.new.master else 'nomaster'} {state}"
        )


# -- read ------------------------------------------------------------------------


@dataclass
class PeerEnd:
    owner: tuple[NsName, str]
    master: str | None


@dataclass
class LinkScan:
    """What one namespace's link dump says about vnet's links."""

    links: list[Link] = field(default_factory=list)
    peer_ends: dict[tuple[NsName, str], PeerEnd] = field(default_factory=dict)
    names: dict[int, str] = field(default_factory=dict)  # every interface: index -> name
    ours: dict[int, str] = field(default_factory=dict)  # vnet's (and lo in its namespaces)
    vxlans: dict[int, str] = field(default_factory=dict)
    veth_ends: dict[int, str] = field(default_factory=dict)  # where a link shaper may sit


def owned(alias: str | None, scope: str) -> bool:
    return bool(alias) and alias.split(" ", 1)[0] == f"{MARK}:{scope}"  # type: ignore[union-attr]


def read(k: Kernel, ns: NsName, scope: str) -> LinkScan:
    """vnet's links of `scope` in `ns`; in a namespace that is vnet's whole, lo counts too."""
    msgs = k.links(ns)
    scan = LinkScan(names={m["index"]: m.get("ifname") for m in msgs})
    for msg in msgs:
        name, alias, index = msg.get("ifname"), msg.get("ifalias"), msg["index"]
        if index == 1 and ns is not None:  # its loopback carries our mark
            scan.ours[index] = name
        elif owned(alias, scope):
            scan.ours[index] = name
            _read_one(msg, ns, scope, scan)
    return scan


def _read_one(msg: Message, ns: NsName, scope: str, scan: LinkScan) -> None:
    name, alias, index = msg.get("ifname"), msg.get("ifalias"), msg["index"]
    master = scan.names.get(msg.get("master")) if msg.get("master") else None
    attrs = dict(a.split("=", 1) for a in alias.split(" ")[1:] if "=" in a)
    if "end-of" in attrs:
        owner_ns, owner_name = attrs["end-of"].split("/", 1)
        scan.peer_ends[(ns, name)] = PeerEnd((ns_from_label(owner_ns), owner_name), master)
        scan.veth_ends[index] = name
        return
    kind = msg.get_nested("IFLA_LINKINFO", "IFLA_INFO_KIND")
    up = bool(msg["flags"] & 1)
    link = Link(ns=ns, name=name, kind=kind, scope=scope, mtu=msg.get("mtu"), up=up, master=master)
    if kind == "vxlan":
        data = msg.get_nested("IFLA_LINKINFO", "IFLA_INFO_DATA")
        local = data.get("IFLA_VXLAN_LOCAL") or data.get("IFLA_VXLAN_LOCAL6")
        link = replace(link, vni=data.get("IFLA_VXLAN_ID"), local=local)
        scan.vxlans[index] = name
    elif kind == "veth":
        scan.veth_ends[index] = name
        if "peer" in attrs:
            peer_ns, peer_name = attrs["peer"].split("/", 1)
            link = replace(link, peer_ns=ns_from_label(peer_ns), peer_name=peer_name)
    scan.links.append(link)


def pair_veths(
    links: dict[tuple[NsName, str], Link], peer_ends: dict[tuple[NsName, str], PeerEnd]
) -> set[tuple[NsName, str]]:
    """Join each veth owner end with its far end in `links`; return the broken ones."""
    broken = set()
    for key, link in list(links.items()):
        if link.kind != "veth":
            continue
        end = peer_ends.get((link.peer_ns, link.peer_name or ""))
        if end is None or end.owner != key:
            broken.add(key)
            continue
        links[key] = replace(link, peer_master=end.master)
    return broken


@dataclass(frozen=True)
class PortState:
    """An interface as the kernel reports it now: up, and its counters (stats64 names)."""

    name: str
    up: bool  # up, and the far end of a veth too: IFF_UP | IFF_LOWER_UP
    counters: dict[str, int]


IFF_UP_AND_LOWER_UP = 0x10001


def read_ports(k: Kernel, ns: NsName, names: list[str] | None = None) -> dict[str, PortState]:
    """The interfaces `names` of `ns` (None: all, in one dump) that exist."""
    if names is None:
        found: Iterable[LinkBrief | None] = k.link_briefs(ns)
    else:
        found = (k.link_brief(ns, name) for name in names)
    return {b.name: _port_state(b) for b in found if b is not None}


def _port_state(link: LinkBrief) -> PortState:
    up = link.flags & IFF_UP_AND_LOWER_UP == IFF_UP_AND_LOWER_UP
    return PortState(link.name, up, dict(link.stats64))


def mac_address(k: Kernel, ns: NsName, name: str) -> str:
    """The link-layer address of interface `name` (any owner)."""
    brief = k.link_brief(ns, name)
    if brief is None:
        raise KernelError(f"no interface {name!r} in namespace {ns_text(ns)}")
    return brief.mac.hex(":")
