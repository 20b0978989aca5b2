"""Kernel operations as data: each prints as the equivalent iproute2 command,
runs through netlink, and knows its exact inverse for the undo log."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from vnet.model import format_rate
from vnet.substrate.kernel import Kernel
from vnet.substrate.state import Address, Fdb, Link, Namespace, NsName, Route, Shaper


class Op(Protocol):
    def run(self, k: Kernel) -> None: ...
    def inverse(self) -> Op: ...
    def describe(self) -> str: ...


def _ip(ns: NsName) -> str:
    return f"ip -n {ns}" if ns else "ip"


@dataclass(frozen=True)
class CreateNamespace:
    ns: Namespace

    def run(self, k: Kernel) -> None:
        k.create_namespace(self.ns)

    def inverse(self) -> Op:
        return DeleteNamespace(self.ns)

    def describe(self) -> str:
        return (
            f"ip netns add {self.ns.name}  # {self.ns.role} {self.ns.node}, marked {self.ns.mark}"
        )


@dataclass(frozen=True)
class DeleteNamespace:
    """Delete a namespace with everything in it, and the veth pairs into it.

    The kernel removes the far ends (`vanishing`) asynchronously; the inverse
    brings back an empty namespace, and rollback's reconcile step the rest.
    """

    ns: Namespace
    vanishing: tuple[tuple[NsName, str], ...] = ()

    def run(self, k: Kernel) -> None:
        k.delete_namespace(self.ns.name, self.vanishing)

    def inverse(self) -> Op:
        return CreateNamespace(self.ns)

    def describe(self) -> str:
        return f"ip netns del {self.ns.name}"

    @property
    def takes_contents(self) -> bool:
        return True


def _link_words(link: Link) -> str:
    words = [f"mtu {link.mtu}"]
    if link.master:
        words.append(f"master {link.master}")
    words.append("up" if link.up else "down")
    return " ".join(words)


@dataclass(frozen=True)
class CreateLink:
    link: Link

    def run(self, k: Kernel) -> None:
        k.create_link(self.link)

    def inverse(self) -> Op:
        return DeleteLink(self.link)

    def describe(self) -> str:
        lk = self.link
        head = f"{_ip(lk.ns)} link add {lk.name} {_link_words(lk)}"
        if lk.kind == "vxlan":
            return f"{head} type vxlan id {lk.vni} local {lk.local} dstport 4789"
        if lk.kind == "veth":
            netns = f" netns {lk.peer_ns}" if lk.peer_ns else ""
            return f"{head} type veth peer name {lk.peer_name}{netns}"
        return f"{head} type {lk.kind}"


@dataclass(frozen=True)
class DeleteLink:
    link: Link

    def run(self, k: Kernel) -> None:
        k.delete_link(self.link.ns, self.link.name)

    def inverse(self) -> Op:
        return CreateLink(self.link)

    def describe(self) -> str:
        return f"{_ip(self.link.ns)} link del {self.link.name}"


@dataclass(frozen=True)
class ModifyLink:
    old: Link
    new: Link

    def run(self, k: Kernel) -> None:
        k.modify_link(self.new)

    def inverse(self) -> Op:
        return ModifyLink(self.new, self.old)

    def describe(self) -> str:
        master = self.new.master or "nomaster"
        state = "up" if self.new.up else "down"
        return (
            f"{_ip(self.new.ns)} link set {self.new.name} mtu {self.new.mtu} "
            f"{'master ' + master if self.new.master else 'nomaster'} {state}"
        )


@dataclass(frozen=True)
class AddAddress:
    addr: Address

    def run(self, k: Kernel) -> None:
        k.add_address(self.addr)

    def inverse(self) -> Op:
        return DeleteAddress(self.addr)

    def describe(self) -> str:
        return f"{_ip(self.addr.ns)} addr add {self.addr.cidr} dev {self.addr.ifname}"


@dataclass(frozen=True)
class DeleteAddress:
    addr: Address

    def run(self, k: Kernel) -> None:
        k.delete_address(self.addr)

    def inverse(self) -> Op:
        return AddAddress(self.addr)

    def describe(self) -> str:
        return f"{_ip(self.addr.ns)} addr del {self.addr.cidr} dev {self.addr.ifname}"


@dataclass(frozen=True)
class AddRoute:
    route: Route

    def run(self, k: Kernel) -> None:
        k.add_route(self.route)

    def inverse(self) -> Op:
        return DeleteRoute(self.route)

    def describe(self) -> str:
        r = self.route
        return f"{_ip(r.ns)} route add {r.dst} via {r.via} proto 118"


@dataclass(frozen=True)
class DeleteRoute:
    route: Route

    def run(self, k: Kernel) -> None:
        k.delete_route(self.route)

    def inverse(self) -> Op:
        return AddRoute(self.route)

    def describe(self) -> str:
        r = self.route
        return f"{_ip(r.ns)} route del {r.dst} via {r.via} proto 118"


@dataclass(frozen=True)
class AddFdb:
    fdb: Fdb

    def run(self, k: Kernel) -> None:
        k.add_fdb(self.fdb)

    def inverse(self) -> Op:
        return DeleteFdb(self.fdb)

    def describe(self) -> str:
        f = self.fdb
        ns = f"-n {f.ns} " if f.ns else ""
        return f"bridge {ns}fdb append 00:00:00:00:00:00 dev {f.dev} dst {f.dst}"


@dataclass(frozen=True)
class DeleteFdb:
    fdb: Fdb

    def run(self, k: Kernel) -> None:
        k.delete_fdb(self.fdb)

    def inverse(self) -> Op:
        return AddFdb(self.fdb)

    def describe(self) -> str:
        f = self.fdb
        ns = f"-n {f.ns} " if f.ns else ""
        return f"bridge {ns}fdb del 00:00:00:00:00:00 dev {f.dev} dst {f.dst}"


@dataclass(frozen=True)
class SetShaper:
    """Install, change (old and new) or remove (new None) a link's HTB root."""

    ns: NsName
    dev: str
    old: Shaper | None
    new: Shaper | None

    def run(self, k: Kernel) -> None:
        if self.new is None:
            k.clear_shaper(self.ns, self.dev)
        else:
            k.set_shaper(self.new)

    def inverse(self) -> Op:
        return SetShaper(self.ns, self.dev, self.new, self.old)

    def describe(self) -> str:
        tc = f"tc -n {self.ns}" if self.ns else "tc"
        if self.new is None:
            return f"{tc} qdisc del dev {self.dev} root"
        rate = format_rate(self.new.rate)
        return (
            f"{tc} qdisc replace dev {self.dev} root handle 1: htb default 1 && "
            f"{tc} class add dev {self.dev} parent 1: classid 1:1 htb rate {rate} ceil {rate}"
        )
