"""One NETCONF session: hello, then <rpc> after <rpc>, each answered in order.

Operations are registered in OPERATIONS by element name, one function each
(as ncclient's operations/ has one class per RPC); adding one touches only
this table.
"""

from __future__ import annotations

import asyncio
import datetime
import itertools
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar
from xml.sax.saxutils import escape

from lxml import etree

from vnet.agent.datastore import CANDIDATE, RUNNING, Datastore
from vnet.agent.datastore.events import Notice
from vnet.agent.netconf import monitoring
from vnet.agent.netconf.commit import cancel_options, commit_options
from vnet.agent.netconf.edit import apply_edit
from vnet.agent.netconf.framing import FramingError, MessageReader, frame
from vnet.agent.netconf.notifications import notification_xml
from vnet.agent.netconf.parse import parse_message
from vnet.agent.netconf.subtree import apply_filter, prune_tree, selected_tops
from vnet.model.yang import encode, schema
from vnet.model.yang.errors import ErrorTag, ErrorType, RpcError, netconf_error_xml
from vnet.model.yang.module import MONITORING_NS as MONITORING
from vnet.model.yang.module import NETCONF_NS as NC
from vnet.model.yang.module import NOTIFICATION_NS as NOTIF

log = logging.getLogger("vnet.agent.netconf")

BASE_10 = "urn:ietf:params:netconf:base:1.0"
BASE_11 = "urn:ietf:params:netconf:base:1.1"
_ids = itertools.count(1)


def capabilities() -> list[str]:
    content_id = schema.REVISION
    return [
        BASE_10,
        BASE_11,
        "urn:ietf:params:netconf:capability:writable-running:1.0",
        "urn:ietf:params:netconf:capability:candidate:1.0",
        "urn:ietf:params:netconf:capability:confirmed-commit:1.1",
        "urn:ietf:params:netconf:capability:validate:1.0",
        "urn:ietf:params:netconf:capability:validate:1.1",
        "urn:ietf:params:netconf:capability:rollback-on-error:1.0",
        "urn:ietf:params:netconf:capability:notification:1.0",
        "urn:ietf:params:netconf:capability:interleave:1.0",
        f"urn:ietf:params:netconf:capability:yang-library:1.1?revision=2019-01-04"
        f"&content-id={content_id}",
        f"{MONITORING}?module=ietf-netconf-monitoring&revision=2010-10-04",
    ]


def hello(session_id: str) -> bytes:
    caps = "".join(f"<capability>{escape(c)}</capability>" for c in capabilities())
    return (
        f'<?xml version="1.0" encoding="UTF-8"?><hello xmlns="{NC}"><capabilities>{caps}'
        f"</capabilities><session-id>{session_id}</session-id></hello>"
    ).encode()


def _child(rpc_op: etree._Element, name: str) -> etree._Element | None:
    """An operation's parameter; clients such as ncclient may send it unqualified."""
    found = rpc_op.find(f"{{{NC}}}{name}")
    return found if found is not None else rpc_op.find(name)


def _datastore_name(el: etree._Element | None, what: str) -> str:
    if el is None or not len(el):
        raise RpcError(
            ErrorTag.MISSING_ELEMENT,
            f"<{what}> must name a datastore",
            ErrorType.PROTOCOL,
            info={"bad-element": what},
        )
    return etree.QName(el[0]).localname


class Session:
    """Protocol state of one client; I/O is given as coroutines by the transport."""

    sessions: ClassVar[dict[str, Session]] = {}  # all live sessions, for kill-session

    def __init__(
        self,
        ds: Datastore,
        user: str,
        read: Callable[[int], Awaitable[bytes]],
        write: Callable[[bytes], None],
        close: Callable[[], None],
    ):
        self.ds = ds
        self.user = user
        self.id = str(next(_ids))
        self.reader = MessageReader(read)
        self._write = write
        self._close = close
        self.chunked = False
        self.closing = False
        self.subscription: asyncio.Task[None] | None = None
        self.send_lock = asyncio.Lock()
        self.info = monitoring.SessionInfo(self.id, user, time.time(), monitoring.Counters())

    def count(self, counter: str) -> None:
        """One more of an RFC 6022 counter, for this session and the server."""
        for counters in (self.info.counters, monitoring.STATISTICS):
            setattr(counters, counter, getattr(counters, counter) + 1)

    async def send(self, message: bytes) -> None:
        async with self.send_lock:
            self._write(frame(message, self.chunked))

    async def run(self) -> None:
        Session.sessions[self.id] = self
        try:
            self._write(frame(hello(self.id), False))
            monitoring.STATISTICS.in_sessions += 1
            if not await self._client_hello():
                monitoring.STATISTICS.in_bad_hellos += 1
                return
            while not self.closing:
                message = await self.reader.next()
                await self.handle(message)
        except (EOFError, ConnectionError, FramingError) as err:
            log.debug("session %s ended: %s", self.id, err)
            monitoring.STATISTICS.dropped_sessions += 1
        finally:
            await self.end()

    async def _client_hello(self) -> bool:
        try:
            doc = await parse_message(await self.reader.next())
        except etree.XMLSyntaxError:
            return False
        if etree.QName(doc).localname != "hello" or doc.find(f"{{{NC}}}session-id") is not None:
            return False  # RFC 6241 8.1: a client hello with a session-id is an error
        caps = {(c.text or "").strip() for c in doc.iter(f"{{{NC}}}capability")}
        if BASE_11 in caps:
            self.chunked = self.reader.chunked = True
        elif BASE_10 not in caps:
            return False
        return True

    async def end(self) -> None:
        Session.sessions.pop(self.id, None)
        if self.subscription is not None:
            self.subscription.cancel()
        self.ds.release(self.id)
        self._close()

    # -- one rpc ------------------------------------------------------------
    async def handle(self, message: bytes) -> None:
        try:
            rpc = await parse_message(message)
        except etree.XMLSyntaxError as err:
            err_xml = netconf_error_xml(
                RpcError(ErrorTag.MALFORMED_MESSAGE, f"not well-formed XML: {err}", ErrorType.RPC)
            )
            self.count("in_bad_rpcs")
            self.count("out_rpc_errors")
            await self.send(f'<rpc-reply xmlns="{NC}">{err_xml}</rpc-reply>'.encode())
            return
        self.count("in_rpcs")
        attrs = "".join(
            f' {_attr_name(k, rpc)}="{escape(v, {chr(34): "&quot;"})}"'
            for k, v in rpc.attrib.items()
        )
        extra_ns = "".join(
            f' xmlns:{p}="{u}"' for p, u in rpc.nsmap.items() if p is not None and u != NC
        )
        head = f'<rpc-reply xmlns="{NC}"{extra_ns}{attrs}>'
        try:
            if etree.QName(rpc).localname != "rpc" or etree.QName(rpc).namespace != NC:
                raise RpcError(
                    ErrorTag.UNKNOWN_ELEMENT,
                    "expected <rpc> in the NETCONF base namespace",
                    ErrorType.RPC,
                    info={"bad-element": etree.QName(rpc).localname},
                )
            if rpc.get("message-id") is None:
                raise RpcError(
                    ErrorTag.MISSING_ATTRIBUTE,
                    "<rpc> needs a message-id attribute",
                    ErrorType.RPC,
                    info={"bad-attribute": "message-id", "bad-element": "rpc"},
                )
            ops = [c for c in rpc if isinstance(c.tag, str)]
            if len(ops) != 1:
                raise RpcError(
                    ErrorTag.MALFORMED_MESSAGE,
                    "<rpc> must contain exactly one operation",
                    ErrorType.RPC,
                )
            op = ops[0]
            handler = OPERATIONS.get(etree.QName(op).localname)
            if handler is None or etree.QName(op).namespace not in (NC, NOTIF, MONITORING):
                raise RpcError(
                    ErrorTag.OPERATION_NOT_SUPPORTED,
                    f"operation {etree.QName(op).localname!r} is not supported",
                    ErrorType.PROTOCOL,
                )
            self._authorise_exec(etree.QName(op))
            body = await handler(self, op)
            reply = head + (body or "<ok/>") + "</rpc-reply>"
        except RpcError as err:
            self.count("out_rpc_errors")
            if err.error_type == ErrorType.RPC:
                self.count("in_bad_rpcs")
            reply = head + netconf_error_xml(err) + "</rpc-reply>"
        except Exception as err:  # never drop a session on a bug: report it
            log.exception("rpc failed")
            self.count("out_rpc_errors")
            reply = (
                head
                + netconf_error_xml(RpcError(ErrorTag.OPERATION_FAILED, f"internal error: {err}"))
                + "</rpc-reply>"
            )
        await self.send(reply.encode())

    def _authorise_exec(self, op: etree.QName) -> None:
        """RFC 8341 3.4.4: the user must be allowed to run the operation."""
        module = {NC: "ietf-netconf", NOTIF: "notifications"}.get(op.namespace or "", "")
        module = module or "ietf-netconf-monitoring"
        if not self.ds.nacm.may_exec(self.user, self.ds.running_snapshot(), module, op.localname):
            raise RpcError(
                ErrorTag.ACCESS_DENIED,
                f"user {self.user!r} may not run {op.localname!r} (NACM)",
                ErrorType.PROTOCOL,
            )

    def readable(self, tree: dict[str, Any]) -> dict[str, Any]:
        """What of `tree` this session's user may read (RFC 8341 3.4.5): the rest is absent."""
        return self.ds.nacm.readable(self.user, self.ds.running_snapshot(), tree)

    # -- notifications ---------------------------------------------------------
    async def _forward(self, queue: asyncio.Queue[Notice]) -> None:
        try:
            while True:
                notice = await queue.get()
                body = notification_xml(notice, self.ds.nacm, self.user, self.ds.running_snapshot())
                if body is None:
                    continue  # RFC 8341 3.4.6: only events about what the user may read
                when = datetime.datetime.fromtimestamp(notice.time, datetime.UTC).isoformat()
                await self.send(
                    f'<notification xmlns="{NOTIF}"><eventTime>{when}</eventTime>{body}'
                    "</notification>".encode()
                )
                self.count("out_notifications")
        finally:
            self.ds.unsubscribe(queue)


def _attr_name(key: str, el: etree._Element) -> str:
    if not key.startswith("{"):
        return key
    ns, local = key[1:].split("}", 1)
    prefix = next((p for p, u in el.nsmap.items() if u == ns and p), None)
    return f"{prefix}:{local}" if prefix else local


# -- operations -----------------------------------------------------------------
Handler = Callable[[Session, etree._Element], Awaitable[str | None]]


def _filtered(xml: str, filter_el: etree._Element | None) -> str:
    if filter_el is None:
        return f"<data>{xml}</data>"
    ftype = filter_el.get("type", "subtree")
    if ftype != "subtree":
        raise RpcError(
            ErrorTag.INVALID_VALUE,
            f"filter type {ftype!r} is not supported; use subtree",
            ErrorType.PROTOCOL,
            info={"bad-attribute": "type", "bad-element": "filter"},
        )
    roots = list(etree.fromstring(f"<data>{xml}</data>"))
    kept = apply_filter(roots, filter_el)
    return "<data>" + "".join(etree.tostring(e, encoding=str) for e in kept) + "</data>"


async def op_get_config(s: Session, op: etree._Element) -> str:
    source = _datastore_name(_child(op, "source"), "source")
    # serialised only: the running tree need not be copied
    tree = s.ds.running_snapshot() if source == RUNNING else s.ds.tree(source)
    filter_el = _child(op, "filter")
    tree = prune_tree(s.readable(tree), filter_el, _selected_routers(filter_el))
    return _filtered(encode.tree_to_xml(tree), filter_el)


def _selected_routers(filter_el: etree._Element | None) -> set[str] | None:
    """Names of the routers a subtree filter can select (None: any router)."""
    if filter_el is None:
        return None
    tops = [c for c in filter_el if isinstance(c.tag, str)]
    routers = [c for c in tops if etree.QName(c).localname == "routers"]
    if not routers:
        return set()
    names: set[str] = set()
    for top in routers:
        entries = [c for c in top if isinstance(c.tag, str)]
        if not entries:
            return None
        for entry in entries:
            name = entry.find(f"{{{schema.NAMESPACE}}}name")
            if name is None:
                name = entry.find("name")
            if name is None or not (name.text or "").strip():
                return None
            names.add(name.text.strip())
    return names


async def op_get(s: Session, op: etree._Element) -> str:
    filter_el = _child(op, "filter")
    routers, tops = _selected_routers(filter_el), selected_tops(filter_el)
    tree = await s.ds.state_tree(routers, tops)
    # the server's own members, only when the filter can select them (the library alone
    # cost more than the rest of a get of one VR)
    if tops is None or tops & {"yang-library", "modules-state"}:
        tree.update(schema.yang_library())
    if tops is None or "netconf-state" in tops:
        sessions = [other.info for other in Session.sessions.values()]
        tree.update(monitoring.netconf_state(capabilities(), sessions))
    # readable first: a VR's tenant comes from its networks, which the filter may prune
    tree = prune_tree(s.readable(tree), filter_el, routers)
    return _filtered(encode.tree_to_xml(tree), filter_el)


async def op_edit_config(s: Session, op: etree._Element) -> None:
    target = _datastore_name(_child(op, "target"), "target")
    config = _child(op, "config")
    if config is None:
        raise RpcError(
            ErrorTag.MISSING_ELEMENT,
            "<edit-config> needs <config>",
            ErrorType.PROTOCOL,
            info={"bad-element": "config"},
        )
    default_op = _text(_child(op, "default-operation")) or "merge"
    test = _text(_child(op, "test-option")) or "test-then-set"
    error_option = _text(_child(op, "error-option")) or "stop-on-error"
    if test not in ("test-then-set", "set", "test-only"):
        raise RpcError(
            ErrorTag.INVALID_VALUE, f"test-option {test!r} is unknown", ErrorType.PROTOCOL
        )
    if error_option not in ("stop-on-error", "continue-on-error", "rollback-on-error"):
        raise RpcError(
            ErrorTag.INVALID_VALUE, f"error-option {error_option!r} is unknown", ErrorType.PROTOCOL
        )
    await s.ds.update(
        target,
        lambda current: (apply_edit(current, config, default_op), None),
        s.id,
        test_only=test == "test-only",
        user=s.user,
        in_place=False,  # apply_edit builds a new tree
    )
    return None


async def op_validate(s: Session, op: etree._Element) -> None:
    source_el = _child(op, "source")
    config = _child(source_el, "config") if source_el is not None else None
    if config is not None:
        s.ds.prepare(apply_edit({}, config, "merge"))
    else:
        s.ds.validate(_datastore_name(source_el, "source"))
    return None


async def op_commit(s: Session, op: etree._Element) -> None:
    await s.ds.commit(s.id, **commit_options(op), user=s.user)
    return None


async def op_cancel_commit(s: Session, op: etree._Element) -> None:
    await s.ds.cancel_commit(s.id, **cancel_options(op))
    return None


async def op_discard_changes(s: Session, op: etree._Element) -> None:
    s.ds.discard_changes(s.id, s.user)
    return None


async def op_lock(s: Session, op: etree._Element) -> None:
    s.ds.lock(_datastore_name(_child(op, "target"), "target"), s.id)
    return None


async def op_unlock(s: Session, op: etree._Element) -> None:
    s.ds.unlock(_datastore_name(_child(op, "target"), "target"), s.id)
    return None


async def op_close_session(s: Session, op: etree._Element) -> None:
    s.closing = True
    return None


async def op_kill_session(s: Session, op: etree._Element) -> None:
    victim = _text(_child(op, "session-id"))
    if not victim:
        raise RpcError(
            ErrorTag.MISSING_ELEMENT,
            "<kill-session> needs <session-id>",
            ErrorType.PROTOCOL,
            info={"bad-element": "session-id"},
        )
    if victim == s.id:
        raise RpcError(
            ErrorTag.INVALID_VALUE,
            "a session cannot kill itself; use close-session",
            ErrorType.PROTOCOL,
        )
    other = Session.sessions.get(victim)
    if other is None:
        raise RpcError(ErrorTag.INVALID_VALUE, f"there is no session {victim}", ErrorType.PROTOCOL)
    await other.end()
    return None


async def op_create_subscription(s: Session, op: etree._Element) -> None:
    stream = _text(op.find(f"{{{NOTIF}}}stream")) or "NETCONF"
    if stream != "NETCONF":
        raise RpcError(
            ErrorTag.INVALID_VALUE,
            f"no stream {stream!r}; the only stream is NETCONF",
            ErrorType.PROTOCOL,
        )
    if s.subscription is not None:
        raise RpcError(
            ErrorTag.OPERATION_FAILED, "this session already has a subscription", ErrorType.PROTOCOL
        )
    s.subscription = asyncio.create_task(s._forward(s.ds.subscribe()))
    return None


async def op_get_schema(s: Session, op: etree._Element) -> str:
    ident = _text(op.find(f"{{{MONITORING}}}identifier"))
    version = _text(op.find(f"{{{MONITORING}}}version"))
    fmt = _text(op.find(f"{{{MONITORING}}}format")) or "yang"
    served = dict(schema.served_modules())
    if (
        ident not in served
        or (version and version != served[ident])
        or fmt not in ("yang", "ncm:yang")
    ):
        raise RpcError(
            ErrorTag.INVALID_VALUE,
            f"no schema {ident!r} {version} in format {fmt}",
            ErrorType.APPLICATION,
            info={"bad-element": "identifier"},
        )
    return f'<data xmlns="{MONITORING}">{escape(schema.yang_text(ident))}</data>'


def _text(el: etree._Element | None) -> str:
    return (el.text or "").strip() if el is not None else ""


OPERATIONS: dict[str, Handler] = {
    "get": op_get,
    "get-config": op_get_config,
    "edit-config": op_edit_config,
    "validate": op_validate,
    "commit": op_commit,
    "cancel-commit": op_cancel_commit,
    "discard-changes": op_discard_changes,
    "lock": op_lock,
    "unlock": op_unlock,
    "close-session": op_close_session,
    "kill-session": op_kill_session,
    "create-subscription": op_create_subscription,
    "get-schema": op_get_schema,
}

__all__ = ["CANDIDATE", "OPERATIONS", "RUNNING", "Session"]
