"""A typed NETCONF client of a vnet agent (ncclient over SSH)."""

from __future__ import annotations

import contextlib
import dataclasses
import threading
from collections.abc import Callable, Iterator
from typing import Any
from xml.sax.saxutils import escape

from lxml import etree
from ncclient import manager
from ncclient.operations.errors import TimeoutExpiredError
from ncclient.operations.rpc import RPCError
from ncclient.transport.errors import (
    AuthenticationError,
    SessionCloseError,
    SessionError,
    SSHUnknownHostError,
    TransportError,
)
from ncclient.transport.session import END_DELIM, MSG_DELIM, NetconfBase, SessionListener
from ncclient.transport.ssh import SSHSession

from vnet.client import hostkeys
from vnet.client.deadline import ConnectDeadline
from vnet.client.endpoint import Endpoint
from vnet.client.errors import AuthError, ClientError, ConnectError, Refused, TimedOut
from vnet.client.routers import RouterState
from vnet.model import VirtualNetwork, VirtualRouter
from vnet.model.topology import Route
from vnet.model.yang import decode, encode
from vnet.model.yang.host import network_entry, network_of, router_entry
from vnet.model.yang.module import NAMESPACE, NETWORKS, NOTIFICATION_NS, ROUTERS, qualified
from vnet.model.yang.module import NETCONF_NS as NC
from vnet.model.yang.paths import entry_path
from vnet.model.yang.schema import root
from vnet.tools import netns


def _send_at_once(self: SSHSession, message: str) -> None:
    """ncclient's `Session.send` queues a message for the session's thread, which sends
    only between two selects of `TICK` seconds (0.1): a request waited up to 100 ms, and the
    1 ms TICK vnet set instead woke every session's thread a thousand times a second (an
    idle controller with three agents spent 16 % of a core in them). The message goes from
    the caller's thread at once, framed as that thread frames it; the thread only reads
    (a paramiko channel takes a send and a receive from two threads), and wakes when the
    answer arrives."""
    if not self.connected:
        raise TransportError("Not connected to NETCONF server")
    data = message.encode()
    if self._base == NetconfBase.BASE_11:
        data = b"\n#%i\n%s%s" % (len(data), data, END_DELIM)
    else:
        data = data + MSG_DELIM
    with self.__dict__.setdefault("_vnet_send_lock", threading.Lock()):
        while data:
            sent = self._transport_write(data)
            if sent <= 0:
                raise SessionCloseError(self._buffer.getvalue(), data)
            data = data[sent:]


SSHSession.send = _send_at_once

RUNNING = "running"
CANDIDATE = "candidate"


def _inside(namespace: str | None) -> contextlib.AbstractContextManager[None]:
    return netns.entered(namespace)  # None: stay


def connect_manager(ep: Endpoint) -> manager.Manager:
    """An ncclient session to the agent; ConnectError/AuthError instead of ncclient's errors."""
    return _connect(ep)[0]


def _connect(ep: Endpoint) -> tuple[manager.Manager, ConnectDeadline]:
    """The session and its connection's deadline: every phase of the connect (TCP, SSH
    banner, key exchange, login, subsystem, hello) together within `ep.timeout`, then each
    RPC within it (deadline.py says why paramiko's own timeouts are not enough)."""
    port = ep.port_for("netconf")
    if ep.hostkey is None and ep.known_hosts is not None:
        ep = dataclasses.replace(ep, hostkey=hostkeys.pinned_or_learned(ep))
    limit: ConnectDeadline | None = None
    try:
        with _inside(ep.namespace):  # the SSH socket stays in the namespace
            limit = ConnectDeadline(ep.address, port, ep.timeout)
            m = manager.connect(
                host=ep.address,
                port=port,
                sock=limit.sock,
                username=ep.user,
                password=ep.password,
                hostkey_verify=ep.hostkey is not None,
                hostkey_b64=ep.hostkey,
                key_filename=ep.key_file,
                look_for_keys=False,
                allow_agent=False,
                timeout=ep.timeout,
            )
        if not limit.met():  # it expired just as the connect finished: the socket is gone
            raise SessionError("the connection was shut down at the deadline")
        return m, limit
    except Exception as err:
        if limit is None or not limit.expired:
            if limit is not None:
                limit.abort()
            raise _connect_error(ep, port, err) from None
        raise TimedOut(
            f"the agent's NETCONF at {ep.address}:{port} did not complete the connect "
            f"(SSH banner, login, hello) within {ep.timeout:g} s"
        ) from None


def _connect_error(ep: Endpoint, port: int, err: Exception) -> Exception:
    """ncclient's (or paramiko's, or the socket's) error of a connect, as vnet.client's."""
    if isinstance(err, SSHUnknownHostError):
        return AuthError(
            f"the SSH host key of {ep.address}:{port} is not the one pinned (--hostkey, the"
            " controller's agents[].hostkey or its known_hosts): if the agent's key was"
            " replaced on purpose, pin what `vnet agent hostkey` prints on that host"
        )
    if isinstance(err, AuthenticationError):
        return AuthError(f"the agent refused the login of {ep.user!r}: {err}")
    # anything else ended the connect before the session was up: refused, reset, EOF in
    # the banner (an agent dying as it accepted), a failed hello
    why = str(err) or type(err).__name__
    kind = Refused if isinstance(err, ConnectionRefusedError) else ConnectError
    return kind(f"cannot reach the agent's NETCONF at {ep.address}:{port}: {why}")


def _with_operation(xml: str, operation: str) -> str:
    """The encoded element with nc:operation on its top element."""
    el = etree.fromstring(xml)
    el.set(f"{{{NC}}}operation", operation)
    return etree.tostring(el, encoding=str)


def _missing(name: str) -> ClientError:
    return ClientError(
        "data-missing",
        f"router {name!r} does not exist",
        entry_path("routers", "router", name),
    )


class _Notifications(SessionListener):
    """The notifications a session receives, and its end, to two callbacks."""

    def __init__(
        self, on_notification: Callable[[etree._Element], None], on_end: Callable[[Exception], None]
    ):
        self.on_notification, self.on_end = on_notification, on_end

    def callback(self, root: tuple[str, Any], raw: str) -> None:
        if root[0] == f"{{{NOTIFICATION_NS}}}notification":
            self.on_notification(etree.fromstring(raw.encode() if isinstance(raw, str) else raw))

    def errback(self, ex: Exception) -> None:
        self.on_end(ex)


class NetconfClient:
    """VR and network operations over one NETCONF session; use as a context manager."""

    def __init__(self, ep: Endpoint):
        self.ep = ep
        self.m, self._connection = _connect(ep)

    def __enter__(self) -> NetconfClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """<close-session>, then the connection ends (also if the agent did not answer)."""
        with contextlib.suppress(Exception):
            self.m.close_session()
        self._connection.abort()

    def abort(self) -> None:
        """End the connection without <close-session>: for an agent that did not answer in
        time, whom a polite goodbye would only wait for again."""
        self._connection.abort()

    @property
    def connected(self) -> bool:
        """The session is still up (the agent did not end it, the transport did not break)."""
        return bool(self.m.connected)

    @contextlib.contextmanager
    def _errors(self) -> Iterator[None]:
        try:
            yield
        except RPCError as err:
            raise ClientError(
                err.tag or "operation-failed",
                err.message or str(err),
                err.path,
                app_tag=err.app_tag,
            ) from None
        except TimeoutExpiredError as err:
            raise TimedOut(f"the agent did not answer in {self.m.timeout:g} s: {err}") from None

    # -- notifications (RFC 5277) -----------------------------------------------------
    def subscribe(
        self,
        on_notification: Callable[[etree._Element], None],
        on_end: Callable[[Exception], None],
    ) -> None:
        """<create-subscription> to the NETCONF stream. Each notification as it arrives (its
        <notification> element) goes to `on_notification`, and the session's end (the agent
        stopped, the transport broke) to `on_end`, both on ncclient's session thread: no
        thread of the caller waits for them."""
        # ncclient hands received messages only to its session's listeners (its own queue
        # of notifications must be polled): the listener is the push it offers
        self.m._session.add_listener(_Notifications(on_notification, on_end))
        with self._errors():
            self.m.create_subscription(stream_name="NETCONF")

    # -- trees ----------------------------------------------------------------------
    def get_tree(self, subtree: str | None, source: str | None = RUNNING) -> dict[str, Any]:
        """<get-config> of `source` (None: <get>, with state), under a subtree filter
        (None: everything), as an RFC 7951 tree of vnet's module."""
        filt = ("subtree", subtree) if subtree is not None else None
        with self._errors():
            if source is None:
                reply = self.m.get(filter=filt)
            else:
                reply = self.m.get_config(source, filter=filt)
        tree: dict[str, Any] = {}
        for el in reply.data_ele:
            if not isinstance(el.tag, str) or etree.QName(el).namespace != NAMESPACE:
                continue
            name = etree.QName(el).localname
            snode = root().child(name)
            if snode is not None:
                tree[qualified(name)] = decode.element_value(el, snode)
        return tree

    def get_config(self, source: str = RUNNING) -> dict[str, Any]:
        """The whole configuration of `source`, as the agent's datastore holds it."""
        return self.get_tree(None, source)

    def edit(
        self, config_xml: str, target: str = RUNNING, default_operation: str | None = None
    ) -> None:
        """<edit-config> of `config_xml` (the elements inside <config>)."""
        config = f'<config xmlns:nc="{NC}">{config_xml}</config>'
        with self._errors():
            self.m.edit_config(target=target, config=config, default_operation=default_operation)

    def edit_tree(
        self, tree: dict[str, Any], target: str = RUNNING, default_operation: str | None = None
    ) -> None:
        """Merge (or `default_operation`) an RFC 7951 tree into `target`."""
        self.edit(encode.tree_to_xml(tree), target, default_operation)

    def lock(self, target: str = RUNNING) -> None:
        with self._errors():
            self.m.lock(target)

    def unlock(self, target: str = RUNNING) -> None:
        with self._errors():
            self.m.unlock(target)

    def commit(
        self,
        confirmed: bool = False,
        timeout: int | None = None,
        persist: str | None = None,
        persist_id: str | None = None,
    ) -> None:
        """<commit> of the candidate. `confirmed`: a confirmed commit (RFC 6241 Sec. 8.4)
        that goes back unless confirmed within `timeout` s (the agent's default: 600);
        `persist`: a token that lets any session confirm or cancel it, and keeps it
        pending when this session ends. A plain commit (with `persist_id` = that token,
        if one was given) confirms it."""
        with self._errors():
            self.m.commit(
                confirmed=confirmed,
                timeout=None if timeout is None else str(timeout),
                persist=persist,
                persist_id=persist_id,
            )

    def cancel_commit(self, persist_id: str | None = None) -> None:
        """<cancel-commit>: the pending confirmed commit goes back now."""
        with self._errors():
            self.m.cancel_commit(persist_id=persist_id)

    def validate(self, source: str = CANDIDATE) -> None:
        """<validate> of `source`: the agent checks it as a commit would, changing nothing."""
        with self._errors():
            self.m.validate(source=source)

    def discard(self) -> None:
        with self._errors():
            self.m.discard_changes()

    # -- virtual routers ---------------------------------------------------------------
    def _router_entries(self, name: str | None, state: bool) -> list[dict[str, Any]]:
        inner = f"<router><name>{escape(name)}</name></router>" if name is not None else ""
        tree = self.get_tree(
            f'<routers xmlns="{NAMESPACE}">{inner}</routers>', None if state else RUNNING
        )
        return list(tree.get(ROUTERS, {}).get("router", []))

    def routers(self, state: bool = True) -> list[RouterState]:
        return [RouterState.from_entry(e, self.ep.host) for e in self._router_entries(None, state)]

    def router(self, name: str, state: bool = True) -> RouterState | None:
        found = self._router_entries(name, state)
        return RouterState.from_entry(found[0], self.ep.host) if found else None

    def _edit_router(self, router_xml: str, target: str) -> None:
        self.edit(f'<routers xmlns="{NAMESPACE}">{router_xml}</routers>', target)

    def create_router(self, vr: VirtualRouter, target: str = RUNNING) -> None:
        node = root().children["routers"].children["router"]
        xml = encode.to_xml("router", [router_entry(vr)], node)
        self._edit_router(_with_operation(xml, "create"), target)

    def add_routes(self, name: str, routes: list[Route], target: str = RUNNING) -> None:
        """Merge `routes` into router `name`'s (a route to the same destination is replaced)."""
        if self.router(name, state=False) is None:  # a merge would create it
            raise _missing(name)
        entries = "".join(
            f"<route><destination>{r.destination}</destination><next-hop>{r.via}</next-hop></route>"
            for r in routes
        )
        self._edit_router(f"<router><name>{escape(name)}</name>{entries}</router>", target)

    def delete_router(self, name: str, target: str = RUNNING) -> None:
        self._edit_router(
            f'<router nc:operation="delete"><name>{escape(name)}</name></router>', target
        )

    def remove_router(self, name: str, target: str = RUNNING) -> None:
        """The VR and the SRv6 locators it owns gone (nc:operation remove: a VR or locator
        that is not there is no error)."""
        srv6 = self.get_tree(f'<srv6 xmlns="{NAMESPACE}"/>', target)
        owned = [
            x["prefix"]
            for x in srv6.get(qualified("srv6"), {}).get("locator", [])
            if x.get("router") == name
        ]
        if owned:
            entries = "".join(
                f'<locator nc:operation="remove"><prefix>{escape(p)}</prefix></locator>'
                for p in owned
            )
            self.edit(f'<srv6 xmlns="{NAMESPACE}">{entries}</srv6>', target)
        self._edit_router(
            f'<router nc:operation="remove"><name>{escape(name)}</name></router>', target
        )

    def remove_routes(self, name: str, destinations: list[str], target: str = RUNNING) -> None:
        """Router `name`'s routes to `destinations` gone (one it lacks: no error)."""
        entries = "".join(
            f'<route nc:operation="remove"><destination>{escape(d)}</destination></route>'
            for d in destinations
        )
        self._edit_router(f"<router><name>{escape(name)}</name>{entries}</router>", target)

    def set_admin(self, name: str, admin_state: str, target: str = RUNNING) -> None:
        if self.router(name, state=False) is None:  # a merge would create it
            raise _missing(name)
        self._edit_router(
            f"<router><name>{escape(name)}</name><admin-state>{admin_state}</admin-state></router>",
            target,
        )

    # -- guarantees ----------------------------------------------------------------------
    def guarantees(self, state: bool = True) -> dict[str, Any]:
        """The `underlay` and `srv6` containers (classes, locators, connection pieces)."""
        source = None if state else RUNNING
        out: dict[str, Any] = {}
        for container in ("underlay", "srv6"):  # a subtree filter holds one element
            out |= self.get_tree(f'<{container} xmlns="{NAMESPACE}"/>', source)
        return out

    # -- virtual networks ----------------------------------------------------------------
    def networks(self) -> list[VirtualNetwork]:
        tree = self.get_tree(f'<virtual-networks xmlns="{NAMESPACE}"/>')
        entries = tree.get(NETWORKS, {}).get("network", [])
        return [network_of(e) for e in entries]

    def create_network(
        self, net: VirtualNetwork, remote_vteps: list[str] | None = None, target: str = RUNNING
    ) -> None:
        node = root().children["virtual-networks"].children["network"]
        xml = encode.to_xml("network", [network_entry(net, remote_vteps)], node)
        entry_xml = _with_operation(xml, "create")
        self.edit(f'<virtual-networks xmlns="{NAMESPACE}">{entry_xml}</virtual-networks>', target)

    def remove_network(self, name: str, target: str = RUNNING) -> None:
        """The network gone (nc:operation remove: one the host lacks is no error)."""
        self.edit(
            f'<virtual-networks xmlns="{NAMESPACE}"><network nc:operation="remove">'
            f"<name>{escape(name)}</name></network></virtual-networks>",
            target,
        )

    def delete_network(self, name: str, target: str = RUNNING) -> None:
        self.edit(
            f'<virtual-networks xmlns="{NAMESPACE}"><network nc:operation="delete">'
            f"<name>{escape(name)}</name></network></virtual-networks>",
            target,
        )
