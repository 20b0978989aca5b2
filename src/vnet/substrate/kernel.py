"""Netlink sessions into namespaces, and the primitive kernel changes vnet makes.

A netlink socket opened inside a namespace stays bound to it, so one socket
per namespace serves every later call from any thread. Sockets are cached
(LRU) because a lab can have more namespaces than a process has descriptors.
"""

from __future__ import annotations

import contextlib
import errno
import os
import socket
import time
from collections import OrderedDict
from collections.abc import Iterable
from ipaddress import ip_interface, ip_network
from typing import Any

from pyroute2 import IPRoute
from pyroute2.netlink.exceptions import NetlinkError

from vnet.substrate import nsfs
from vnet.substrate.state import RTPROT_VNET, Address, Fdb, Link, Namespace, NsName, Route, Shaper

ZERO_MAC = "00:00:00:00:00:00"
ROLE_SYSCTLS: dict[str, dict[str, str]] = {
    # Addresses come up at once (no DAD wait), forwarding where packets are routed.
    "host": {
        "net.ipv4.ip_forward": "1",
        "net.ipv6.conf.all.forwarding": "1",
        "net.ipv6.conf.all.accept_dad": "0",
        "net.ipv6.conf.default.accept_dad": "0",
        # Bridged tenant frames need no iptables pass; the hooks cost ~100 ns per
        # packet per bridge even with no rules (measured by `vnet bench forwarding`).
        "net.bridge.bridge-nf-call-iptables": "0",
        "net.bridge.bridge-nf-call-ip6tables": "0",
        "net.bridge.bridge-nf-call-arptables": "0",
    },
    "router": {
        "net.ipv4.ip_forward": "1",
        "net.ipv6.conf.all.forwarding": "1",
        "net.ipv6.conf.all.accept_dad": "0",
        "net.ipv6.conf.default.accept_dad": "0",
        "net.ipv6.conf.all.keep_addr_on_down": "1",
        "net.ipv6.conf.default.keep_addr_on_down": "1",
    },
    "endhost": {
        "net.ipv6.conf.all.accept_dad": "0",
        "net.ipv6.conf.default.accept_dad": "0",
    },
    "mgmt": {
        "net.ipv6.conf.all.accept_dad": "0",
        "net.ipv6.conf.default.accept_dad": "0",
    },
}


class KernelError(RuntimeError):
    pass


class NotANamespace(KernelError):
    pass


def _burst(rate: int) -> int:
    """HTB burst in bytes: measured here, HTB needs >= 512 kB to reach ~99% at 1-2 Gbit/s."""
    return max(rate // 8 // 250 + 1514, 512 * 1024 if rate >= 500_000_000 else 32 * 1024)


class Kernel:
    """Netlink access to every namespace vnet touches, with a bounded socket cache."""

    def __init__(self, max_sockets: int = 128):
        self._sockets: OrderedDict[NsName, IPRoute] = OrderedDict()
        self._max = max_sockets
        # veth ends the kernel is still tearing down after a namespace deletion
        self._vanishing: set[tuple[NsName, str]] = set()

    def close(self) -> None:
        for ipr in self._sockets.values():
            ipr.close()
        self._sockets.clear()

    def __enter__(self) -> Kernel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- sockets -----------------------------------------------------------
    def ipr(self, ns: NsName) -> IPRoute:
        ipr = self._sockets.get(ns)
        if ipr is not None:
            self._sockets.move_to_end(ns)
            return ipr
        with nsfs.entered(ns):
            ipr = IPRoute()
        self._sockets[ns] = ipr
        if len(self._sockets) > self._max:
            _, old = self._sockets.popitem(last=False)
            old.close()
        return ipr

    def forget(self, ns: NsName) -> None:
        """Drop the cached socket: it would keep a deleted namespace alive."""
        ipr = self._sockets.pop(ns, None)
        if ipr is not None:
            ipr.close()

    def index(self, ns: NsName, name: str) -> int:
        found = self.ipr(ns).link_lookup(ifname=name)
        if not found:
            raise KernelError(f"no interface {name!r} in namespace {nsfs_label(ns)}")
        return int(found[0])

    # -- namespaces --------------------------------------------------------
    def create_namespace(self, ns: Namespace) -> None:
        nsfs.create(ns.name)
        try:
            with nsfs.entered(ns.name):
                for key, value in ROLE_SYSCTLS[ns.role].items():
                    if key.startswith("net.bridge.") and not nsfs.sysctl_exists(key):
                        continue  # a kernel without br_netfilter has nothing to switch off
                    nsfs.write_sysctl(key, value)
            ipr = self.ipr(ns.name)
            ipr.link("set", index=1, state="up", ifalias=ns.mark)
        except BaseException:
            self.forget(ns.name)
            nsfs.remove(ns.name)
            raise

    def delete_namespace(self, name: str, vanishing: Iterable[tuple[NsName, str]] = ()) -> None:
        self.forget(name)
        nsfs.remove(name)
        self._vanishing.update(vanishing)

    def _wait_vanished(self, ns: NsName, name: str, timeout: float = 5.0) -> None:
        """Wait for a name freed by an earlier namespace deletion to really be free."""
        if (ns, name) not in self._vanishing:
            return
        deadline = time.monotonic() + timeout
        while self.ipr(ns).link_lookup(ifname=name):
            if time.monotonic() > deadline:
                raise KernelError(f"{name} in {nsfs_label(ns)} is still being removed")
            time.sleep(0.002)
        self._vanishing.discard((ns, name))

    def namespace_mark(self, name: str) -> str | None:
        """The alias of the namespace's loopback ('' when unmarked: not ours).

        Raises NotANamespace for a name whose file is no namespace mount:
        what a crash between creating the mount point and binding it leaves.
        """
        try:
            lo = self.ipr(name).get_links(1)[0]
        except OSError as err:
            self.forget(name)
            if err.errno == errno.EINVAL:  # setns() on a plain file
                raise NotANamespace(name) from None
            raise
        return lo.get("ifalias") or ""

    # -- links -------------------------------------------------------------
    def create_link(self, link: Link) -> None:
        self._wait_vanished(link.ns, link.name)
        ipr = self.ipr(link.ns)
        common: dict[str, Any] = {"ifname": link.name, "mtu": link.mtu}
        if link.master:
            common["master"] = self.index(link.ns, link.master)
        if link.kind == "bridge":
            ipr.link("add", kind="bridge", **common)
        elif link.kind == "vxlan":
            assert link.local is not None and link.vni is not None
            local_key = "vxlan_local6" if ":" in link.local else "vxlan_local"
            ipr.link(
                "add",
                kind="vxlan",
                vxlan_id=link.vni,
                vxlan_port=4789,
                vxlan_learning=1,
                **{local_key: link.local},
                **common,
            )
        elif link.kind == "veth":
            self._create_veth(link, common)
        else:
            raise KernelError(f"unknown link kind {link.kind!r}")
        # The kernel ignores IFLA_IFALIAS on creation; set the mark right after.
        ipr.link(
            "set",
            index=self.index(link.ns, link.name),
            ifalias=link.alias,
            state="up" if link.up else "down",
        )

    def _create_veth(self, link: Link, common: dict[str, Any]) -> None:
        assert link.peer_name is not None
        peer_path = nsfs.path(link.peer_ns) if link.peer_ns else "/proc/self/ns/net"
        fd = os.open(peer_path, os.O_RDONLY)
        try:
            peer = {"ifname": link.peer_name, "net_ns_fd": fd, "mtu": link.mtu}
            self.ipr(link.ns).link("add", kind="veth", peer=peer, **common)
        finally:
            os.close(fd)
        ipr = self.ipr(link.peer_ns)
        peer_attrs: dict[str, Any] = {"state": "up", "ifalias": link.peer_alias}
        if link.peer_master:
            peer_attrs["master"] = self.index(link.peer_ns, link.peer_master)
        ipr.link("set", index=self.index(link.peer_ns, link.peer_name), **peer_attrs)

    def delete_link(self, ns: NsName, name: str) -> None:
        self.ipr(ns).link("del", index=self.index(ns, name))

    def modify_link(self, link: Link) -> None:
        """Bring mtu, master and state to `link`'s values (both ends of a veth)."""
        ipr = self.ipr(link.ns)
        index = self.index(link.ns, link.name)
        master = self.index(link.ns, link.master) if link.master else 0
        if link.kind == "veth":
            peer_index = self.index(link.peer_ns, link.peer_name or "")
            self.ipr(link.peer_ns).link("set", index=peer_index, mtu=link.mtu)
        ipr.link("set", index=index, mtu=link.mtu, master=master)
        ipr.link("set", index=index, state="up" if link.up else "down")

    # -- addresses, routes, fdb ---------------------------------------------
    def add_address(self, a: Address) -> None:
        itf = ip_interface(a.cidr)
        self.ipr(a.ns).addr(
            "add",
            index=self.index(a.ns, a.ifname),
            address=str(itf.ip),
            prefixlen=itf.network.prefixlen,
        )

    def delete_address(self, a: Address) -> None:
        itf = ip_interface(a.cidr)
        self.ipr(a.ns).addr(
            "del",
            index=self.index(a.ns, a.ifname),
            address=str(itf.ip),
            prefixlen=itf.network.prefixlen,
        )

    def add_route(self, r: Route) -> None:
        self.ipr(r.ns).route("add", dst=r.dst, gateway=r.via, proto=RTPROT_VNET)

    def delete_route(self, r: Route) -> None:
        self.ipr(r.ns).route("del", dst=r.dst, gateway=r.via, proto=RTPROT_VNET)

    def add_fdb(self, f: Fdb) -> None:
        self.ipr(f.ns).fdb("append", ifindex=self.index(f.ns, f.dev), lladdr=ZERO_MAC, dst=f.dst)

    def delete_fdb(self, f: Fdb) -> None:
        self.ipr(f.ns).fdb("del", ifindex=self.index(f.ns, f.dev), lladdr=ZERO_MAC, dst=f.dst)

    # -- shaping -----------------------------------------------------------
    def set_shaper(self, s: Shaper) -> None:
        ipr = self.ipr(s.ns)
        index = self.index(s.ns, s.dev)
        with contextlib.suppress(NetlinkError):
            ipr.tc("del", index=index, handle="1:", root=True)
        ipr.tc("add", "htb", index=index, handle="1:", default=0x1, root=True)
        burst = _burst(s.rate)
        ipr.tc(
            "add-class",
            "htb",
            index=index,
            handle="1:1",
            parent="1:",
            rate=s.rate // 8,
            ceil=s.rate // 8,
            burst=burst,
            cburst=burst,
        )

    def clear_shaper(self, ns: NsName, dev: str) -> None:
        self.ipr(ns).tc("del", index=self.index(ns, dev), handle="1:", root=True)


def nsfs_label(ns: NsName) -> str:
    return ns if ns is not None else "(own namespace)"


def route_key(msg: Any) -> tuple[str, str] | None:
    """(dst, via) of a route message, or None if it has no gateway."""
    via = msg.get("gateway")
    if via is None:
        return None
    dst = msg.get("dst")
    family = msg["family"]
    if dst is None:
        dst = "0.0.0.0" if family == socket.AF_INET else "::"
    return str(ip_network(f"{dst}/{msg['dst_len']}")), via
