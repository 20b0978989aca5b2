"""IP addresses on vnet's interfaces."""

from __future__ import annotations

import socket
from dataclasses import dataclass
from ipaddress import ip_interface

from vnet.substrate.kernel import Kernel
from vnet.substrate.marks import NsName, ip_cmd

LOOPBACK_NETS = (ip_interface("127.0.0.1/8").network, ip_interface("::1/128").network)


@dataclass(frozen=True)
class Address:
    ns: NsName
    ifname: str
    cidr: str


@dataclass(frozen=True)
class AddAddress:
    addr: Address

    def run(self, k: Kernel) -> None:
        k.address(self.addr.ns, "add", self.addr.ifname, self.addr.cidr)

    def inverse(self) -> DeleteAddress:
        return DeleteAddress(self.addr)

    def describe(self) -> str:
        return f"{ip_cmd(self.addr.ns)} addr add {self.addr.cidr} dev {self.addr.ifname}"


@dataclass(frozen=True)
class DeleteAddress:
    addr: Address

    def run(self, k: Kernel) -> None:
        k.address(self.addr.ns, "del", self.addr.ifname, self.addr.cidr)

    def inverse(self) -> AddAddress:
        return AddAddress(self.addr)

    def describe(self) -> str:
        return f"{ip_cmd(self.addr.ns)} addr del {self.addr.cidr} dev {self.addr.ifname}"


def read(k: Kernel, ns: NsName, ours: dict[int, str]) -> set[Address]:
    """Global addresses (loopback nets aside) on the interfaces `ours` (index -> name)."""
    out = set()
    for msg in k.addresses(ns):
        if msg["index"] not in ours or msg["scope"] != 0:  # 0: global
            continue
        itf = ip_interface(f"{msg.get('address')}/{msg['prefixlen']}")
        if any(itf.ip in net for net in LOOPBACK_NETS if net.version == itf.version):
            continue
        out.add(Address(ns, ours[msg["index"]], str(itf)))
    return out


def ipv4_addresses(k: Kernel, ns: NsName, dev: str) -> list[str]:
    """The IPv4 addresses on `dev` outside 127/8, in the kernel's order (any owner)."""
    index = k.index(ns, dev)
    return [
        msg.get_attr("IFA_ADDRESS")
        for msg in k.addresses(ns)
        if msg["index"] == index
        and msg["family"] == socket.AF_INET
        and not msg.get_attr("IFA_ADDRESS").startswith("127.")
    ]
