"""The command responder: GET, GETNEXT, GETBULK and SET answered from the front-end.

pysnmp's own responder answers synchronously from its MIB instrumentation,
whose RowStatus handling is loose (createAndWait reads back active, a missing
column gives genError), and a SET here must wait for the datastore commit.
This one answers each request from a `view.View`, and a SET after the
datastore commit (`Datastore.update`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, NamedTuple

from pysnmp.entity.engine import SnmpEngine
from pysnmp.proto import errind, error, rfc1902, rfc1905
from pysnmp.proto.api import v2c

from vnet.agent.snmp import smi
from vnet.agent.snmp.engine import READ_VIEW
from vnet.agent.snmp.errors import ERROR_STATUS, SnmpError
from vnet.agent.snmp.view import NeedsState, Reading, View, read_through
from vnet.model.mib.oids import OID

log = logging.getLogger("vnet.agent.snmp")

GET, NEXT, BULK, SET = (
    rfc1905.GetRequestPDU.tagSet,
    rfc1905.GetNextRequestPDU.tagSet,
    rfc1905.GetBulkRequestPDU.tagSet,
    rfc1905.SetRequestPDU.tagSet,
)
MAX_BULK_VARBINDS = 2048
SET_MEMORY = 30.0  # seconds a SET's answer is kept for retransmissions of it

Reads = Callable[[Reading, str | None], Awaitable[View]]  # what to read first, v3 user -> view
Writes = Callable[[list[smi.Varbind], str | None], Awaitable[None]]
Answer = tuple[int, int, list[Any]]  # error-status, error-index, pysnmp varbinds


class Request(NamedTuple):
    """What pysnmp hands over with a request and wants back with its response."""

    mp_model: int
    sec_model: int
    sec_name: Any
    sec_level: int
    context_engine_id: Any
    context_name: Any
    pdu_version: int
    max_size: int
    state_ref: int

    def access(self) -> tuple[Any, ...]:
        """Who asks, as VACM needs it."""
        return self.sec_model, self.sec_name, self.sec_level, self.context_name

    @property
    def v3_user(self) -> str | None:
        """The USM user name of an SNMPv3 request (None for a community)."""
        return str(self.sec_name) if self.sec_model == 3 else None


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
        self.recent_sets: dict[tuple[Any, ...], tuple[float, Answer | None]] = {}
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
        request = Request(
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

    async def _answer(self, request: Request, pdu: Any, source: Any) -> None:
        rsp = v2c.apiPDU.get_response(pdu)
        key = None
        if pdu.tagSet == SET:
            key = (str(source), str(request.sec_name), int(v2c.apiPDU.get_request_id(pdu)))
            self._forget_old_sets()
            seen = self.recent_sets.get(key)
            if seen is not None:
                if seen[1] is not None:  # else still being committed: the first answer will do
                    self._send(request, rsp, seen[1])
                return
            self.recent_sets[key] = (time.monotonic(), None)
        try:
            answer = await self._dispatch(request, pdu)
        except SnmpError as err:
            answer = err.code, err.index, pdu_varbinds(pdu)
        except Exception:
            log.exception("SNMP request failed")
            answer = ERROR_STATUS["genErr"], 1, pdu_varbinds(pdu)
        if key is not None:
            self.recent_sets[key] = (time.monotonic(), answer)
        self._send(request, rsp, answer)

    def _forget_old_sets(self) -> None:
        now = time.monotonic()
        for k in [k for k, (t, _) in self.recent_sets.items() if now - t > SET_MEMORY]:
            del self.recent_sets[k]

    def _check(self, request: Request, view_type: str, oid: OID, index: int) -> None:
        sec_model, sec_name, sec_level, context_name = request.access()
        try:
            result = self.engine.access_control_model[3].is_access_allowed(
                self.engine, sec_model, sec_name, sec_level, view_type, context_name, oid
            )
        except error.StatusInformation as err:
            result = err
        if isinstance(result, error.StatusInformation):
            # pysnmp 7.1 returns instead of raising this when a view has no subtree
            if result["errorIndication"] == errind.notInView:
                raise SnmpError("noAccess", index)
            raise SnmpError("authorizationError", index)

    async def _dispatch(self, request: Request, pdu: Any) -> Answer:
        varbinds = [(tuple(o), v) for o, v in v2c.apiPDU.get_varbinds(pdu)]
        if pdu.tagSet == SET:
            for i, (oid, _) in enumerate(varbinds, start=1):
                self._check(request, "write", oid, i)
            await self.write([(oid, smi.from_pysnmp(v)) for oid, v in varbinds], request.v3_user)
            return 0, 0, pdu_varbinds(pdu)
        self._check(request, "read", READ_VIEW, 0)
        limit = max(484, min(int(request.max_size), 65507)) - 160  # room for headers and v3
        names = [oid for oid, _ in varbinds]
        out = await self._answer_read(request, pdu, names, limit)
        if _size(out) > limit:
            return ERROR_STATUS["tooBig"], 0, []
        return 0, 0, [(rfc1902.ObjectName(o), smi.to_pysnmp(v)) for o, v in out]

    async def _answer_read(
        self, request: Request, pdu: Any, names: list[OID], limit: int
    ) -> list[smi.Varbind]:
        """The varbinds of a read, the kernel state it reaches read first where it is missing
        or old (view.read_through)."""
        return await read_through(
            lambda reading: self.view(reading, request.v3_user),
            lambda view: _read(view, pdu, names, limit),
        )

    def _send(self, request: Request, rsp: Any, answer: Answer) -> None:
        status, index, varbinds = answer
        v2c.apiPDU.set_error_status(rsp, status)
        v2c.apiPDU.set_error_index(rsp, index)
        v2c.apiPDU.set_varbinds(rsp, varbinds)
        r = request
        try:
            self.engine.message_dispatcher.return_response_pdu(
                self.engine,
                r.mp_model,
                r.sec_model,
                r.sec_name,
                r.sec_level,
                r.context_engine_id,
                r.context_name,
                r.pdu_version,
                rsp,
                r.max_size,
                r.state_ref,
                {},
            )
        except error.StatusInformation as err:
            log.warning("SNMP response not sent: %s", err)


def pdu_varbinds(pdu: Any) -> list[Any]:
    return list(v2c.apiPDU.get_varbinds(pdu))


def _size(varbinds: list[smi.Varbind]) -> int:
    return sum(smi.varbind_size(o, v) for o, v in varbinds)


def _read(view: View, pdu: Any, names: list[OID], limit: int) -> list[smi.Varbind]:
    if pdu.tagSet == GET:
        return [(oid, view.get(oid)) for oid in names]
    if pdu.tagSet == NEXT:
        return [_next(view, oid) for oid in names]
    return _bulk(view, pdu, names, limit)


def _next(view: View, oid: OID) -> smi.Varbind:
    found = view.next(oid)
    return found if found is not None else (oid, smi.END_OF_MIB_VIEW)


def _bulk(view: View, pdu: Any, names: list[OID], limit: int) -> list[smi.Varbind]:
    """RFC 3416 4.2.3. Stops early (fewer repetitions, as the RFC allows) when every
    repeater reached the end of the MIB, the reply is full, or a later repetition
    reaches kernel state that is not read yet (the manager's next request reads it)."""
    n = min(max(int(v2c.apiBulkPDU.get_non_repeaters(pdu)), 0), len(names))
    m = max(int(v2c.apiBulkPDU.get_max_repetitions(pdu)), 0)
    repeaters = names[n:]
    out = [_next(view, oid) for oid in names[:n]]
    size = _size(out)
    last = list(repeaters)
    for rep in range(m):
        if not repeaters or len(out) + len(repeaters) > MAX_BULK_VARBINDS:
            break
        try:
            row = [_next(view, oid) for oid in last]
        except NeedsState:
            if rep == 0:
                raise  # the caller reads kernel state and asks again
            break  # fewer repetitions are allowed; the manager goes on from here
        row_size = _size(row)
        if size + row_size > limit and len(out) > n:
            break
        out.extend(row)
        size += row_size
        last = [o for o, _ in row]
        if all(v == smi.END_OF_MIB_VIEW for _, v in row):
            break
    return out
