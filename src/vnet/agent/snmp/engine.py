"""pysnmp's SNMP engine, set up from the agent's configuration, and the command responder.

pysnmp (7.x) provides the message processing (v2c, v3), USM (RFC 3414,
3826, 7860) and VACM (RFC 3415). The command responder is our own: pysnmp's
answers synchronously from its MIB instrumentation, whose RowStatus
handling is loose (createAndWait reads back active, a missing column gives
genError), and a SET here must wait for the datastore commit. Ours answers
each request from `mib.View`, and a SET after the datastore commit (`Datastore.update`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import secrets
import socket
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from pyasn1.type import univ
from pysnmp.carrier.asyncio.dgram import udp, udp6
from pysnmp.entity import config as pconfig
from pysnmp.entity.engine import SnmpEngine
from pysnmp.proto import errind, error, rfc1902, rfc1905
from pysnmp.proto.api import v2c

from vnet.agent.config import AgentConfig, SnmpUser
from vnet.agent.snmp import mib, oids
from vnet.agent.snmp.oids import OID

log = logging.getLogger("vnet.agent.snmp")

AUTH = {
    "SHA": pconfig.USM_AUTH_HMAC96_SHA,
    "SHA-224": pconfig.USM_AUTH_HMAC128_SHA224,
    "SHA-256": pconfig.USM_AUTH_HMAC192_SHA256,
    "SHA-384": pconfig.USM_AUTH_HMAC256_SHA384,
    "SHA-512": pconfig.USM_AUTH_HMAC384_SHA512,
}
PRIV = {"AES": pconfig.USM_PRIV_CFB128_AES}

READ_VIEW: OID = (1, 3, 6, 1)  # what this agent serves: SNMPv2-MIB system and its MIB
WRITE_VIEW: OID = oids.MIB
USM_MODEL, V2C_MODEL = 3, 2
MAX_BULK_VARBINDS = 2048


# -- snmpEngineID and snmpEngineBoots (RFC 3414 section 2.2) -------------------


def engine_identity(state_dir: Path, configured: str | None) -> tuple[bytes, int]:
    """The engine ID and this start's snmpEngineBoots, kept in state_dir across restarts.

    The ID is RFC 3411 format 5 (octets) under the enterprise number of the MIB
    arc; boots goes up by one on every start and is written before it is used.
    """
    path = state_dir / "snmp-engine.json"
    data: dict[str, Any] = {}
    if path.exists():
        with contextlib.suppress(ValueError, OSError):
            data = json.loads(path.read_text())
    if configured:
        engine_id = bytes.fromhex(configured.removeprefix("0x"))
    elif "engine_id" in data:
        engine_id = bytes.fromhex(data["engine_id"])
    else:
        pen = oids.ENTERPRISE[-1] | 0x80000000
        engine_id = pen.to_bytes(4, "big") + b"\x05" + secrets.token_bytes(8)
    boots = int(data.get("boots", 0)) + 1 if data.get("engine_id") == engine_id.hex() else 1
    boots = min(boots, 2147483647)  # RFC 3414: then it stays there
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"engine_id": engine_id.hex(), "boots": boots}))
    with open(tmp, "rb+") as f:
        os.fsync(f.fileno())
    tmp.replace(path)
    return engine_id, boots


# -- values -------------------------------------------------------------------

_KINDS = (
    (rfc1902.Counter64.tagSet, "counter64"),
    (rfc1902.Counter32.tagSet, "counter32"),
    (rfc1902.Gauge32.tagSet, "unsigned"),
    (rfc1902.TimeTicks.tagSet, "timeticks"),
    (rfc1902.IpAddress.tagSet, "ipaddress"),
    (rfc1902.Opaque.tagSet, "opaque"),
    (rfc1902.Integer32.tagSet, "int"),
    (rfc1902.OctetString.tagSet, "str"),
    (rfc1902.ObjectIdentifier.tagSet, "oid"),
    (univ.Null.tagSet, "null"),
)


def decode(value: Any) -> mib.Value:
    """A pysnmp value from a SET request -> (kind, python value)."""
    tag = value.tagSet
    for tagset, kind in _KINDS:
        if tag == tagset:
            if kind == "str":
                return kind, value.asOctets()
            if kind == "null":
                return kind, None
            if kind == "oid":
                return kind, tuple(value)
            return kind, int(value)
    return "unknown", None


def encode(value: mib.Value) -> Any:
    kind, v = value
    if kind == "int":
        return rfc1902.Integer32(v)
    if kind == "str":
        return rfc1902.OctetString(v)
    if kind == "unsigned":
        return rfc1902.Unsigned32(v)
    if kind == "gauge":
        return rfc1902.Gauge32(v)
    if kind == "counter64":
        return rfc1902.Counter64(v)
    if kind == "timeticks":
        return rfc1902.TimeTicks(v)
    if kind == "oid":
        return rfc1902.ObjectIdentifier(v)
    if kind == "noSuchObject":
        return rfc1905.noSuchObject
    if kind == "noSuchInstance":
        return rfc1905.noSuchInstance
    raise ValueError(f"no encoding for {kind}")


def _oid_size(oid: OID) -> int:
    n = 1
    for arc in oid[2:]:
        n += 1 if arc < 128 else 2 if arc < 16384 else 3 if arc < 2097152 else 5
    return n


def varbind_size(oid: OID, value: mib.Value) -> int:
    """An upper bound on the BER size of one variable binding."""
    kind, v = value
    if kind == "str":
        vsize = len(v) + 4
    elif kind == "oid":
        vsize = _oid_size(v) + 4
    else:
        vsize = 11
    return _oid_size(oid) + 4 + vsize + 4


# -- the engine ---------------------------------------------------------------


def _udp_socket(address: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_DGRAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((address, port))  # fails now, loudly, if the port is taken
        sock.setblocking(False)
    except OSError:
        sock.close()
        raise
    return sock


def build_engine(config: AgentConfig) -> tuple[SnmpEngine, int, socket.socket]:
    """An engine listening on the agent's address, with its communities, users and views."""
    engine_id, boots = engine_identity(config.state_dir, config.snmp.engine_id)
    engine = SnmpEngine()
    builder = engine.get_mib_builder()
    (mib_engine_id,) = builder.import_symbols("__SNMP-FRAMEWORK-MIB", "snmpEngineID")
    (mib_boots,) = builder.import_symbols("__SNMP-FRAMEWORK-MIB", "snmpEngineBoots")
    mib_engine_id.syntax = mib_engine_id.syntax.clone(engine_id)
    engine.snmpEngineID = mib_engine_id.syntax
    mib_boots.syntax = mib_boots.syntax.clone(boots)

    sock = _udp_socket(config.address, config.ports.snmp)
    if sock.family == socket.AF_INET6:
        pconfig.add_transport(
            engine, udp6.DOMAIN_NAME, udp6.Udp6Transport().open_server_mode(sock=sock)
        )
    else:
        pconfig.add_transport(
            engine, udp.DOMAIN_NAME, udp.UdpTransport().open_server_mode(sock=sock)
        )

    s = config.snmp
    for n, community in enumerate(s.ro_communities):
        _community(engine, f"ro{n}", community, write=False)
    for n, community in enumerate(s.rw_communities):
        _community(engine, f"rw{n}", community, write=True)
    for user in s.users:
        _user(engine, user)
    return engine, boots, sock


def _community(engine: SnmpEngine, sec_name: str, community: str, write: bool) -> None:
    pconfig.add_v1_system(engine, sec_name, community, securityName=sec_name)
    pconfig.add_vacm_user(
        engine,
        V2C_MODEL,
        sec_name,
        "noAuthNoPriv",
        readSubTree=READ_VIEW,
        writeSubTree=WRITE_VIEW if write else (),
    )


def _user(engine: SnmpEngine, user: SnmpUser) -> None:
    pconfig.add_v3_user(
        engine,
        user.name,
        AUTH[user.auth_protocol],
        user.auth_key,
        PRIV[user.priv_protocol],
        user.priv_key,
    )
    # VACM: authPriv only; a request with a lower security level finds no access entry
    pconfig.add_vacm_user(
        engine,
        USM_MODEL,
        user.name,
        "authPriv",
        readSubTree=READ_VIEW,
        writeSubTree=WRITE_VIEW if user.access == "rw" else (),
    )


# -- the command responder ----------------------------------------------------

GET, NEXT, BULK, SET = (
    rfc1905.GetRequestPDU.tagSet,
    rfc1905.GetNextRequestPDU.tagSet,
    rfc1905.GetBulkRequestPDU.tagSet,
    rfc1905.SetRequestPDU.tagSet,
)
ERROR_STATUS = {
    "tooBig": 1,
    "noSuchName": 2,
    "badValue": 3,
    "readOnly": 4,
    "genErr": 5,
    "noAccess": 6,
    "wrongType": 7,
    "wrongLength": 8,
    "wrongEncoding": 9,
    "wrongValue": 10,
    "noCreation": 11,
    "inconsistentValue": 12,
    "resourceUnavailable": 13,
    "commitFailed": 14,
    "undoFailed": 15,
    "authorizationError": 16,
    "notWritable": 17,
    "inconsistentName": 18,
}

Reads = Callable[[bool], Awaitable[mib.View]]  # with_state -> view
Writes = Callable[[list[tuple[OID, mib.Value]]], Awaitable[None]]


class Denied(Exception):
    def __init__(self, status: str, index: int):
        super().__init__(status)
        self.status = status
        self.index = index


class Responder:
    """Answers GET, GETNEXT, GETBULK and SET from the front-end's view and writer.

    pysnmp calls `process_pdu` for each authenticated request; the answer is
    computed in a task and returned with `return_response_pdu` (pysnmp keeps
    the request's security state for 600 timer ticks).
    """

    def __init__(self, engine: SnmpEngine, view: Reads, write: Writes):
        self.engine = engine
        self.view = view
        self.write = write
        self.tasks: set[asyncio.Task[None]] = set()
        self.context_engine_id = engine.snmpEngineID
        # SETs by (transport address, security name, request-id): a retransmission
        # of a SET still being committed is dropped, one of a finished SET is
        # answered again without running it twice
        self.recent_sets: dict[tuple[Any, ...], tuple[float, Any]] = {}
        engine.message_dispatcher.register_context_engine_id(
            self.context_engine_id, (GET, NEXT, BULK, SET), self.process_pdu
        )

    def close(self) -> None:
        self.engine.message_dispatcher.unregister_context_engine_id(
            self.context_engine_id, (GET, NEXT, BULK, SET)
        )
        for task in self.tasks:
            task.cancel()

    def process_pdu(
        self,
        engine: SnmpEngine,
        mp_model: int,
        sec_model: int,
        sec_name: Any,
        sec_level: int,
        context_engine_id: Any,
        context_name: Any,
        pdu_version: int,
        pdu: Any,
        max_size: int,
        state_ref: int,
    ) -> None:
        if mp_model == 0:  # SNMPv1 is not served
            return
        ctx = engine.observer.get_execution_context("rfc3412.receiveMessage:request")
        source = ctx.get("transportAddress") if ctx else None
        request = (
            mp_model,
            sec_model,
            sec_name,
            sec_level,
            context_engine_id,
            context_name,
            pdu_version,
            max_size,
            state_ref,
        )
        task = asyncio.get_running_loop().create_task(self._answer(request, pdu, source))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _answer(self, request: tuple[Any, ...], pdu: Any, source: Any) -> None:
        _mp_model, sec_model, sec_name, sec_level, _, context_name, _, max_size, _ = request
        rsp = v2c.apiPDU.get_response(pdu)
        varbinds = [(tuple(o), v) for o, v in v2c.apiPDU.get_varbinds(pdu)]
        tag = pdu.tagSet
        key = None
        if tag == SET:
            key = (str(source), str(sec_name), int(v2c.apiPDU.get_request_id(pdu)))
            self._forget_old_sets()
            seen = self.recent_sets.get(key)
            if seen is not None:
                if seen[1] is None:
                    return  # still being committed: the first answer will do
                status, index, vbs = seen[1]
                self._send(request, rsp, status, index, vbs)
                return
            self.recent_sets[key] = (time.monotonic(), None)
        access = (sec_model, sec_name, sec_level, context_name)
        try:
            status, index, out = await self._dispatch(tag, pdu, varbinds, access, max_size)
        except (Denied, mib.SnmpError) as err:
            status, index, out = ERROR_STATUS[err.status], err.index, pdu_varbinds(pdu)
        except Exception:
            log.exception("SNMP request failed")
            status, index, out = ERROR_STATUS["genErr"], 1, pdu_varbinds(pdu)
        if key is not None:
            self.recent_sets[key] = (time.monotonic(), (status, index, out))
        self._send(request, rsp, status, index, out)

    def _forget_old_sets(self) -> None:
        now = time.monotonic()
        for k in [k for k, (t, _) in self.recent_sets.items() if now - t > 30]:
            del self.recent_sets[k]

    def _check(self, access: tuple[Any, ...], view_type: str, oid: OID, index: int) -> None:
        sec_model, sec_name, sec_level, context_name = access
        try:
            result = self.engine.access_control_model[3].is_access_allowed(
                self.engine, sec_model, sec_name, sec_level, view_type, context_name, oid
            )
        except error.StatusInformation as err:
            result = err
        if isinstance(result, error.StatusInformation):
            # pysnmp 7.1 returns instead of raising this when a view has no subtree
            if result["errorIndication"] == errind.notInView:
                raise Denied("noAccess", index)
            raise Denied("authorizationError", index)

    async def _dispatch(
        self,
        tag: Any,
        pdu: Any,
        varbinds: list[tuple[OID, Any]],
        access: tuple[Any, ...],
        max_size: int,
    ) -> tuple[int, int, list[Any]]:
        limit = max(484, min(int(max_size), 65507)) - 160  # room for headers and v3 security
        if tag == SET:
            for i, (oid, _) in enumerate(varbinds, start=1):
                self._check(access, "write", oid, i)
            await self.write([(oid, decode(v)) for oid, v in varbinds])
            return 0, 0, [(o, v) for o, v in pdu_varbinds(pdu)]
        self._check(access, "read", READ_VIEW, 0)
        names = [oid for oid, _ in varbinds]

        def answer(view: mib.View) -> list[tuple[OID, mib.Value]]:
            if tag == GET:
                return [(oid, view.get(oid)) for oid in names]
            if tag == NEXT:
                return [_next(view, oid) for oid in names]
            return _bulk(view, pdu, names, limit)

        try:
            out = answer(await self.view(False))
        except mib.NeedsState:  # the request reaches kernel state: read it, answer again
            out = answer(await self.view(True))
        size = sum(varbind_size(o, v) for o, v in out)
        if size > limit:
            return ERROR_STATUS["tooBig"], 0, []
        return 0, 0, [(rfc1902.ObjectName(o), _encode_out(v)) for o, v in out]

    def _send(
        self, request: tuple[Any, ...], rsp: Any, status: int, index: int, varbinds: list[Any]
    ) -> None:
        (
            mp_model,
            sec_model,
            sec_name,
            sec_level,
            context_engine_id,
            context_name,
            pdu_version,
            max_size,
            state_ref,
        ) = request
        v2c.apiPDU.set_error_status(rsp, status)
        v2c.apiPDU.set_error_index(rsp, index)
        v2c.apiPDU.set_varbinds(rsp, varbinds)
        try:
            self.engine.message_dispatcher.return_response_pdu(
                self.engine,
                mp_model,
                sec_model,
                sec_name,
                sec_level,
                context_engine_id,
                context_name,
                pdu_version,
                rsp,
                max_size,
                state_ref,
                {},
            )
        except error.StatusInformation as err:
            log.warning("SNMP response not sent: %s", err)


def pdu_varbinds(pdu: Any) -> list[Any]:
    return list(v2c.apiPDU.get_varbinds(pdu))


END = ("endOfMibView", None)


def _encode_out(value: mib.Value) -> Any:
    if value[0] == "endOfMibView":
        return rfc1905.endOfMibView
    return encode(value)


def _next(view: mib.View, oid: OID) -> tuple[OID, mib.Value]:
    found = view.next(oid)
    return found if found is not None else (oid, END)


def _bulk(view: mib.View, pdu: Any, names: list[OID], limit: int) -> list[tuple[OID, Any]]:
    """RFC 3416 4.2.3. Stops early (fewer repetitions, as the RFC allows) when every
    repeater reached the end of the MIB, the reply is full, or a later repetition
    reaches kernel state that is not read yet (the manager's next request reads it)."""
    n = min(max(int(v2c.apiBulkPDU.get_non_repeaters(pdu)), 0), len(names))
    m = max(int(v2c.apiBulkPDU.get_max_repetitions(pdu)), 0)
    repeaters = names[n:]
    out = [_next(view, oid) for oid in names[:n]]
    size = sum(varbind_size(o, v) for o, v in out)
    last = list(repeaters)
    for rep in range(m):
        if not repeaters or len(out) + len(repeaters) > MAX_BULK_VARBINDS:
            break
        try:
            row = [_next(view, oid) for oid in last]
        except mib.NeedsState:
            if rep == 0:
                raise  # the caller reads kernel state and asks again
            break  # fewer repetitions are allowed; the manager goes on from here
        row_size = sum(varbind_size(o, v) for o, v in row)
        if size + row_size > limit and len(out) > n:
            break
        out.extend(row)
        size += row_size
        last = [o for o, _ in row]
        if all(v == END for _, v in row):
            break
    return out
