"""Kernel state as comparable data: what vnet wants, or what it finds.

Both `realize` (model -> desired state) and `observe` (kernel -> actual
state) produce a KernelState, and `plan` diffs two of them. Namespace None
means "the namespace vnet itself runs in" (an agent on a real host).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:  # defined next to their realisation; they import this module
    from vnet.substrate.qos import TcClass, TcFilter, TcRoot
    from vnet.substrate.srv6 import SidRoute, SteerRoute, SteerRule

NsName = str | None
Role = Literal["host", "router", "endhost", "mgmt"]

# Routes vnet installs carry this protocol number (ip route ... proto 118),
# which is how vnet recognises its own routes and leaves others alone.
RTPROT_VNET = 118
MARK = "vnet"


def ns_label(ns: NsName) -> str:
    return ns if ns is not None else "-"


def ns_from_label(label: str) -> NsName:
    return None if label == "-" else label


@dataclass(frozen=True)
class Namespace:
    name: str
    scope: str  # the lab (or "agent") that owns it
    role: Role
    node: str  # the host, VR or end host it realises

    @property
    def mark(self) -> str:
        """Stored as the alias of the namespace's loopback."""
        return f"{MARK}:{self.scope}:{self.role}:{self.node}"


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


@dataclass(frozen=True)
class Address:
    ns: NsName
    ifname: str
    cidr: str


@dataclass(frozen=True)
class Route:
    ns: NsName
    dst: str
    via: str


@dataclass(frozen=True)
class Fdb:
    """A flooding entry: send unknown/broadcast frames of `dev` to VTEP `dst`."""

    ns: NsName
    dev: str
    dst: str


@dataclass(frozen=True)
class Shaper:
    """An HTB root on a link with one class at `rate`; QoS classes attach below it."""

    ns: NsName
    dev: str
    rate: int  # bit/s

    @property
    def key(self) -> tuple[NsName, str]:
        return (self.ns, self.dev)


@dataclass
class KernelState:
    namespaces: dict[str, Namespace] = field(default_factory=dict)
    links: dict[tuple[NsName, str], Link] = field(default_factory=dict)
    addresses: set[Address] = field(default_factory=set)
    routes: set[Route] = field(default_factory=set)
    fdb: set[Fdb] = field(default_factory=set)
    shapers: dict[tuple[NsName, str], Shaper] = field(default_factory=dict)
    # veth pairs whose far end is missing or foreign: always recreated
    broken: set[tuple[NsName, str]] = field(default_factory=set)
    # connections (SRv6) and bandwidth (tc): see srv6.py and qos.py
    sids: dict[tuple[NsName, str], SidRoute] = field(default_factory=dict)
    steers: dict[tuple[NsName, int, str], SteerRoute] = field(default_factory=dict)
    rules: set[SteerRule] = field(default_factory=set)
    tc_roots: set[TcRoot] = field(default_factory=set)
    tc_classes: dict[tuple[NsName, str, int], TcClass] = field(default_factory=dict)
    tc_filters: set[TcFilter] = field(default_factory=set)

    def add_namespace(self, ns: Namespace) -> None:
        self.namespaces[ns.name] = ns

    def add_link(self, link: Link) -> None:
        self.links[link.key] = link

    def merge(self, other: KernelState) -> None:
        self.namespaces.update(other.namespaces)
        self.links.update(other.links)
        self.addresses |= other.addresses
        self.routes |= other.routes
        self.fdb |= other.fdb
        self.shapers.update(other.shapers)
        self.broken |= other.broken
        self.sids.update(other.sids)
        self.steers.update(other.steers)
        self.rules |= other.rules
        self.tc_roots |= other.tc_roots
        self.tc_classes.update(other.tc_classes)
        self.tc_filters |= other.tc_filters

    def summary(self) -> dict[str, int]:
        return {
            "namespaces": len(self.namespaces),
            "links": len(self.links),
            "addresses": len(self.addresses),
            "routes": len(self.routes),
            "fdb": len(self.fdb),
            "shapers": len(self.shapers),
            "sids": len(self.sids),
            "steering routes": len(self.steers),
            "steering rules": len(self.rules),
            "tc classes": len(self.tc_classes),
            "tc filters": len(self.tc_filters),
        }
