"""Kernel: the one place that talks netlink (pyroute2, and by hand where pyroute2's cost per
request showed: rtquery.py's reads and small changes, rtchange.py's connection pieces).

The object kinds (namespace.py, link.py, address.py, route.py, fdb.py, tc.py,
seg6.py) build their requests as data and decode the messages they read;
the calls themselves go through here, by interface name, in any namespace.

A netlink socket opened inside a namespace stays bound to it. pyroute2's IPRoute,
though, opens a socket of its own for each thread that uses it, in the namespace that
thread is in at the time: an IPRoute opened inside namespace A and used from another
thread talks to that thread's namespace, not A. So an IPRoute serves only the thread
that opened it (the cache is by thread and namespace), and the helpers of a parallel
apply each run on a thread of their own, so their sockets are opened once. Sockets are
cached (LRU) because a lab can have more namespaces than a process has descriptors.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import os
import socket
import struct
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

from pyroute2 import IPRoute
from pyroute2.netlink.exceptions import NetlinkError

from vnet.substrate import nsfs, rtchange, rtquery
from vnet.substrate.marks import NsName
from vnet.substrate.rtquery import (
    Dump,
    LinkBrief,
    LinkDump,
    ProtoRoute,
    RouteDump,
    RouteTally,
    RuleTally,
)
from vnet.substrate.tc_numbers import FilterNumbers
from vnet.tools.wait import WaitTimeout, wait_until

Message = Any  # a decoded pyroute2 netlink message
T = TypeVar("T")
SIOCGIFINDEX = 0x8933
IFREQ = struct.Struct("16si")  # struct ifreq's name and ifindex
IFNAMSIZ = 16


class KernelError(RuntimeError):
    pass


class NotANamespace(KernelError):
    pass


def ns_text(ns: NsName) -> str:
    return ns if ns is not None else "(own namespace)"


def _request(method: Callable[..., T]) -> Callable[..., T]:
    """A method that sends one netlink request (a change, a get or a dump): counted in
    `Kernel.requests` by its name, so a test (or a profile) sees what a commit asks."""

    @functools.wraps(method)
    def counted(self: Kernel, *args: Any, **kwargs: Any) -> T:
        self.requests[method.__name__] += 1
        return method(self, *args, **kwargs)

    return counted


class Kernel:
    """Netlink access to every namespace vnet touches, with a bounded socket cache."""

    def __init__(self, max_sockets: int = 128):
        # by the thread that opened it (the Thread itself: a dead thread's id can be reused)
        self._sockets: OrderedDict[tuple[threading.Thread, NsName], IPRoute] = OrderedDict()
        # plain netlink sockets for the hand-encoded requests (rtquery.py): a VR's
        # namespace mostly needs only this one, and an IPRoute costs milliseconds to open
        self._queries: OrderedDict[NsName, socket.socket] = OrderedDict()
        self._query_lock = threading.Lock()
        self._seq = 0
        self._max = max_sockets
        # veth ends the kernel is still tearing down after a namespace deletion
        self._vanishing: set[tuple[NsName, str]] = set()
        self.requests: Counter[str] = Counter()  # netlink requests sent, by method
        self._helpers: list[Kernel] = []  # for lanes of a parallel apply (lanes.py)
        self.filter_numbers = FilterNumbers()  # of vnet's u32 filters, as far as known
        self._thread: ThreadPoolExecutor | None = None  # a helper's own thread (`submit`)

    def helper(self, lane: int) -> Kernel:
        """The Kernel lane `lane` (1, 2, ...) of a parallel apply uses: sockets of its
        own (a socket serves one caller at a time), the same view of vanishing names, and
        a thread of its own to run on (`submit`). Its requests are added to ours by
        `gather_requests` once its work is done."""
        while len(self._helpers) < lane:
            helper = Kernel(self._max)
            helper._vanishing = self._vanishing
            self._helpers.append(helper)
        return self._helpers[lane - 1]

    def submit(self, fn: Callable[..., T], *args: Any) -> Future[T]:
        """Run `fn` on this Kernel's own thread, the same one every time (see the module's
        docstring: its sockets then stay open from one parallel apply to the next)."""
        if self._thread is None:
            self._thread = ThreadPoolExecutor(1, thread_name_prefix="vnet-lane")
        return self._thread.submit(fn, *args)

    def gather_requests(self) -> None:
        for helper in self._helpers:
            self.requests.update(helper.requests)
            helper.requests.clear()

    def close(self) -> None:
        for helper in self._helpers:
            helper.close()
        if self._thread is not None:
            self._thread.shutdown(wait=True)
            self._thread = None
        for ipr in self._sockets.values():
            ipr.close()
        self._sockets.clear()
        for sock in self._queries.values():
            sock.close()
        self._queries.clear()

    def __enter__(self) -> Kernel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- sockets -----------------------------------------------------------
    def ipr(self, ns: NsName) -> IPRoute:
        """The calling thread's IPRoute in `ns` (see the module's docstring)."""
        key = (threading.current_thread(), ns)
        ipr = self._sockets.get(key)
        if ipr is not None:
            self._sockets.move_to_end(key)
            return ipr
        with nsfs.entered(ns):
            ipr = IPRoute()
        self._sockets[key] = ipr
        if len(self._sockets) > self._max:
            _, old = self._sockets.popitem(last=False)
            old.close()
        return ipr

    def _query(self, ns: NsName) -> socket.socket:
        sock = self._queries.get(ns)
        if sock is not None:
            self._queries.move_to_end(ns)
            return sock
        with nsfs.entered(ns):
            sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE)
        self._queries[ns] = sock
        if len(self._queries) > self._max:
            _, old_sock = self._queries.popitem(last=False)
            old_sock.close()
        return sock

    def forget(self, ns: NsName) -> None:
        """Drop the cached sockets (our helpers' too): they would keep a deleted namespace
        alive."""
        for helper in self._helpers:
            helper.forget(ns)
        for key in [key for key in self._sockets if key[1] == ns]:
            self._sockets.pop(key).close()
        query = self._queries.pop(ns, None)
        if query is not None:
            query.close()

    def index(self, ns: NsName, name: str) -> int:
        found = self.lookup(ns, name)
        if found is None:
            raise KernelError(f"no interface {name!r} in namespace {ns_text(ns)}")
        return found

    def lookup(self, ns: NsName, name: str) -> int | None:
        """The index of interface `name` in `ns`, or None.

        SIOCGIFINDEX on a netlink socket of the namespace (bound to it)
        asks the kernel for the index alone: microseconds, where an RTM_GETLINK
        round trip costs milliseconds of decoding a full link message we throw away.
        """
        encoded = name.encode()
        if not encoded or len(encoded) >= IFNAMSIZ:
            return None  # no interface can carry it; the kernel would truncate it
        try:
            reply = fcntl.ioctl(self._query(ns).fileno(), SIOCGIFINDEX, IFREQ.pack(encoded, 0))
        except OSError as err:
            if err.errno == errno.ENODEV:
                return None
            raise
        return int(IFREQ.unpack(reply)[1])

    # -- namespaces --------------------------------------------------------
    @_request
    def create_namespace(self, name: str, sysctls: dict[str, str], mark: str) -> None:
        """A namespace with `sysctls` set and `mark` as its loopback's alias, both done
        before it gets its name: a process stopped halfway (an agent's SIGTERM) leaves an
        unnamed namespace, gone with it, or a mount point that is no namespace (`lab down`
        removes it); never a namespace without its mark, which nothing could claim."""

        def prepare() -> None:
            # a kernel without br_netfilter has nothing to switch off
            nsfs.write_sysctls(sysctls, optional=("net.bridge.",))
            code = rtquery.acknowledged_here(
                rtquery.setlink_request(1, 1, state="up", ifalias=mark)
            )
            if code:
                raise NetlinkError(code, os.strerror(code))

        nsfs.create(name, prepare)

    def delete_namespace(self, name: str, vanishing: Iterable[tuple[NsName, str]] = ()) -> None:
        self.forget(name)
        nsfs.remove(name)
        self._vanishing.update(vanishing)

    def namespace_mark(self, name: str) -> str | None:
        """The alias of the namespace's loopback ('' when unmarked: not ours).

        None when the namespace vanished while we looked (another process, e.g. a
        lab going down, deleted it): nothing of it is left to mark. Raises
        NotANamespace for a name whose file is no namespace mount: what a crash
        between creating the mount point and binding it leaves.
        """
        try:
            lo = self.link_brief(name, "lo")
        except OSError as err:
            self.forget(name)
            if err.errno == errno.EINVAL:  # setns() on a plain file
                raise NotANamespace(name) from None
            if err.errno == errno.ENOENT:
                return None
            raise
        return lo.alias if lo is not None else ""

    def _wait_vanished(self, ns: NsName, name: str, timeout: float = 5.0) -> None:
        """Wait for a name freed by an earlier namespace deletion to really be free."""
        if (ns, name) not in self._vanishing:
            return
        try:
            wait_until(
                lambda: self.lookup(ns, name) is None,
                timeout,
                f"{name} in {ns_text(ns)} to be removed",
                interval=0.002,
            )
        except WaitTimeout:
            raise KernelError(f"{name} in {ns_text(ns)} is still being removed") from None
        self._vanishing.discard((ns, name))

    # -- links -------------------------------------------------------------
    @_request
    def add_link(self, ns: NsName, name: str, kind: str, master: str | None, **attrs: Any) -> None:
        """`ip link add`; `peer` (veth) is {"ifname", "ns", "mtu"}."""
        self._wait_vanished(ns, name)
        if master:
            attrs["master"] = self.index(ns, master)
        peer = attrs.pop("peer", None)
        if peer is None:
            self.ipr(ns).link("add", ifname=name, kind=kind, **attrs)
            return
        peer_ns = peer.pop("ns")
        fd = os.open(nsfs.path(peer_ns) if peer_ns else "/proc/self/ns/net", os.O_RDONLY)
        try:
            self.ipr(ns).link(
                "add", ifname=name, kind=kind, peer={**peer, "net_ns_fd": fd}, **attrs
            )
        finally:
            os.close(fd)

    @_request
    def set_link(self, ns: NsName, name: str, master: str | None = None, **attrs: Any) -> None:
        """`ip link set` of state, ifalias, mtu; master "" detaches, None leaves it."""
        if master is not None:
            attrs["master"] = self.index(ns, master) if master else 0
        index = self.index(ns, name)
        self._acknowledged(ns, lambda seq: rtquery.setlink_request(index, seq, **attrs))

    @_request
    def delete_link(self, ns: NsName, name: str) -> None:
        self.ipr(ns).link("del", index=self.index(ns, name))

    @_request
    def link_brief(self, ns: NsName, name: str) -> LinkBrief | None:
        """Interface `name`'s index, flags, MTU, master, MAC, alias and counters, or None.

        The same RTM_GETLINK as `link`, decoded only as far as these fields go
        (rtquery.py): the per-interface questions of shortcuts and port state."""
        with self._query_lock:
            sock, seq = self._query_socket(ns)
            sock.send(rtquery.getlink_request(name, seq))
            while True:  # a reply left over from an interrupted query has an older seq
                reply = sock.recv(1 << 16)
                if rtquery.reply_seq(reply) == seq:
                    return rtquery.parse_getlink_reply(reply)

    @_request
    def route_count(self, ns: NsName, family: int, table: int, kind: int) -> int:
        """How many routes of `family` in `table` (below 256) have type `kind`: a dump
        whose routes are counted from their headers, not decoded (rtquery.py)."""
        tally = RouteTally(table, kind)
        self._dump(ns, lambda seq: rtquery.getroute_dump_request(family, seq), tally)
        return tally.count

    @_request
    def proto_routes(self, ns: NsName, family: int, protocol: int) -> list[ProtoRoute]:
        """The routes of `family` (every table) made with `protocol`, decoded by hand."""
        dump = RouteDump(protocol)
        self._dump(ns, lambda seq: rtquery.getroute_dump_request(family, seq), dump)
        return dump.routes

    @_request
    def rule_count(self, ns: NsName, family: int, protocol: int) -> int:
        """How many rules of `family` carry FRA_PROTOCOL `protocol`."""
        tally = RuleTally(protocol)
        self._dump(ns, lambda seq: rtquery.getrule_dump_request(family, seq), tally)
        return tally.count

    @_request
    def link_briefs(self, ns: NsName) -> list[LinkBrief]:
        """Every interface of `ns` as `link_brief` describes it, in one dump."""
        dump = LinkDump()
        self._dump(ns, rtquery.getlink_dump_request, dump)
        return dump.links

    def _dump(self, ns: NsName, request: Callable[[int], bytes], into: Dump) -> None:
        with self._query_lock:
            sock, seq = self._query_socket(ns)
            sock.send(request(seq))
            while not into.done:
                into.feed(sock.recv(1 << 16), seq)

    def _acknowledged(self, ns: NsName, request: Callable[[int], bytes]) -> None:
        """Send the request `request(seq)` builds; raise NetlinkError if the kernel refuses."""
        with self._query_lock:
            sock, seq = self._query_socket(ns)
            sock.send(request(seq))
            code = rtquery.answer_to(sock, seq)
        if code:
            raise NetlinkError(code, os.strerror(code))

    def _query_socket(self, ns: NsName) -> tuple[socket.socket, int]:
        """The namespace's query socket and a fresh sequence number (under _query_lock)."""
        self._seq += 1
        return self._query(ns), self._seq

    @_request
    def links(self, ns: NsName) -> list[Message]:
        return list(self.ipr(ns).get_links())

    @_request
    def link(self, ns: NsName, name: str) -> Message | None:
        with contextlib.suppress(NetlinkError):
            return self.ipr(ns).link("get", ifname=name)[0]
        return None

    # -- addresses, routes, rules, fdb ----------------------------------------
    @_request
    def address(self, ns: NsName, command: str, dev: str, cidr: str) -> None:
        index = self.index(ns, dev)
        self._acknowledged(ns, lambda seq: rtquery.address_request(command, index, cidr, seq))

    @_request
    def addresses(self, ns: NsName) -> list[Message]:
        return list(self.ipr(ns).get_addr())

    @_request
    def route(self, ns: NsName, command: str, dev: str | None = None, **attrs: Any) -> None:
        if dev is not None:
            attrs["oif"] = self.index(ns, dev)
        self.ipr(ns).route(command, **attrs)

    @_request
    def routes(self, ns: NsName, family: int, **match: Any) -> list[Message]:
        return list(self.ipr(ns).route("dump", family=family, **match))

    @_request
    def srv6_route(
        self,
        ns: NsName,
        command: str,
        dst: str,
        dev: str | None = None,
        *,
        proto: int,
        table: int | None = None,
        encap: rtchange.Encap | None = None,
    ) -> None:
        """`ip route add|replace|del` of the routes a commit makes by the hundred (SRv6
        encap and seg6local routes), encoded by hand (rtchange.py)."""
        oif = self.index(ns, dev) if dev is not None else None
        self._acknowledged(
            ns,
            lambda seq: rtchange.route_request(
                command, dst, seq, proto=proto, table=table, oif=oif, encap=encap
            ),
        )

    @_request
    def rule(self, ns: NsName, command: str, **attrs: Any) -> None:
        self.ipr(ns).rule(command, **attrs)

    @_request
    def rules(self, ns: NsName, family: int) -> list[Message]:
        return list(self.ipr(ns).get_rules(family=family))

    @_request
    def fdb(self, ns: NsName, command: str, dev: str, **attrs: Any) -> None:
        self.ipr(ns).fdb(command, ifindex=self.index(ns, dev), **attrs)

    @_request
    def fdb_entries(self, ns: NsName) -> list[Message]:
        return list(self.ipr(ns).fdb("dump"))

    # -- traffic control -------------------------------------------------------
    @_request
    def tc(
        self,
        ns: NsName,
        command: str,
        kind: str | None,
        dev: str,
        missing_ok: bool = False,
        **attrs: Any,
    ) -> None:
        args = (command, kind) if kind else (command,)
        try:
            self.ipr(ns).tc(*args, index=self.index(ns, dev), **attrs)
        except NetlinkError:
            if not missing_ok:
                raise

    @_request
    def tc_change(self, ns: NsName, dev: str, request: Callable[[int, int], bytes]) -> None:
        """A traffic-control change encoded by hand (rtchange.py: the HTB classes, FIFOs
        and u32 filters of connections): `request(index, seq)` is its message for interface
        `dev`. NetlinkError if the kernel refuses."""
        index = self.index(ns, dev)
        self._acknowledged(ns, lambda seq: request(index, seq))

    @_request
    def qdiscs(self, ns: NsName) -> list[Message]:
        try:
            return list(self.ipr(ns).get_qdiscs())
        except NetlinkError:
            return []

    @_request
    def classes(self, ns: NsName, index: int) -> list[Message]:
        try:
            return list(self.ipr(ns).get_classes(index=index))
        except NetlinkError:
            return []

    @_request
    def filters(self, ns: NsName, index: int, parent: int) -> list[Message]:
        return list(self.ipr(ns).get_filters(index=index, parent=parent))

    @_request
    def u32_filters(
        self, ns: NsName, index: int, parent: int, one: tuple[int, int] | None = None
    ) -> list[rtquery.U32Entry]:
        """The u32 filters under `parent` on interface `index` that send to a class; `one`:
        only that (prio << 16 | protocol, number)'s, if it is there (a get, not a dump)."""
        dump = rtquery.U32Dump()
        self._dump(ns, lambda seq: rtquery.getfilter_request(index, parent, seq, one), dump)
        return dump.filters

    # -- neighbours ------------------------------------------------------------
    @_request
    def neighbours(self, ns: NsName, family: int, **match: Any) -> list[Message]:
        return list(self.ipr(ns).get_neighbours(family=family, **match))

    @_request
    def neighbour(self, ns: NsName, command: str, **attrs: Any) -> None:
        """`ip neigh <command>`; attrs as pyroute2 takes them (dst, lladdr, ifindex, state)."""
        self.ipr(ns).neigh(command, **attrs)
