"""The in-process SNMP clients: pysnmp's asyncio API and hand-encoded v2c over UDP."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import socket
import threading
import time
from collections.abc import Awaitable
from typing import Any, TypeVar

from vnet.bench.snmp import SnmpBenchError
from vnet.bench.snmp.workload import ADDRESS, AUTH_KEY, COMMUNITY_RO, COMMUNITY_RW, PRIV_KEY, USER
from vnet.tools.netns import entered

T = TypeVar("T")


# -- the in-process client --------------------------------------------------------------


class Client:
    """pysnmp's asyncio manager API on a thread inside the agent's namespace."""

    def __init__(self, namespace: str, port: int = 161):
        self.namespace, self.port = namespace, port
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        self.ready.wait(10)
        self.hl: Any = None
        self.cache: dict[Any, list[Any]] = {}
        self.call(self._setup())

    def _run(self) -> None:
        with entered(self.namespace):  # sockets made on this thread are in there
            asyncio.set_event_loop(self.loop)
            self.ready.set()
            self.loop.run_forever()

    def call(self, coro: Awaitable[T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(120)  # type: ignore[arg-type]

    async def _setup(self) -> None:
        from pysnmp.hlapi.v3arch import asyncio as hl

        self.hl = hl
        self.engine = hl.SnmpEngine()
        self.target = await hl.UdpTransportTarget.create((ADDRESS, self.port), timeout=5, retries=0)
        self.auth = {
            "v2c": (hl.CommunityData(COMMUNITY_RO), hl.CommunityData(COMMUNITY_RW)),
            "v3": (
                hl.UsmUserData(
                    USER,
                    AUTH_KEY,
                    PRIV_KEY,
                    authProtocol=hl.usmHMACSHAAuthProtocol,
                    privProtocol=hl.usmAesCfb128Protocol,
                ),
            )
            * 2,
        }

    def _varbinds(self, pairs: list[tuple[str, Any]]) -> list[Any]:
        """ObjectTypes made (and resolved by pysnmp on first use) once per request shape."""
        key = tuple((o, repr(v)) for o, v in pairs)
        if key not in self.cache:
            hl = self.hl
            self.cache[key] = [
                hl.ObjectType(hl.ObjectIdentity(o), v)
                if v is not None
                else hl.ObjectType(hl.ObjectIdentity(o))
                for o, v in pairs
            ]
        return self.cache[key]

    async def _set(self, series: str, pairs: list[tuple[str, Any]]) -> float:
        vbs = self._varbinds(pairs)
        t = time.perf_counter()
        err, status, index, _ = await self.hl.set_cmd(
            self.engine,
            self.auth[series][1],
            self.target,
            self.hl.ContextData(),
            *vbs,
            lookupMib=False,
        )
        elapsed = time.perf_counter() - t
        if err or status:
            raise SnmpBenchError(f"SET failed: {err or status.prettyPrint()} at {index}")
        return elapsed

    def set(self, series: str, pairs: list[tuple[str, Any]]) -> float:
        return self.call(self._set(series, pairs))

    async def _bulk(self, series: str, oids_: list[str], reps: int) -> tuple[float, list[Any]]:
        vbs = self._varbinds([(o, None) for o in oids_])
        t = time.perf_counter()
        err, status, _index, out = await self.hl.bulk_cmd(
            self.engine,
            self.auth[series][0],
            self.target,
            self.hl.ContextData(),
            0,
            reps,
            *vbs,
            lookupMib=False,
        )
        elapsed = time.perf_counter() - t
        if err or status:
            raise SnmpBenchError(f"GETBULK failed: {err or status.prettyPrint()}")
        return elapsed, list(out)

    def bulk(self, series: str, oids_: list[str], reps: int) -> tuple[float, list[Any]]:
        return self.call(self._bulk(series, oids_, reps))

    async def _walk(self, series: str, root: str, reps: int) -> tuple[float, int]:
        prefix = tuple(int(x) for x in root.strip(".").split("."))
        hl = self.hl
        count = 0
        last = root
        t = time.perf_counter()
        for _ in range(1_000_000):
            err, status, _, out = await hl.bulk_cmd(
                self.engine,
                self.auth[series][0],
                self.target,
                hl.ContextData(),
                0,
                reps,
                hl.ObjectType(hl.ObjectIdentity(last)),
                lookupMib=False,
            )
            if err or status:
                raise SnmpBenchError(f"walk failed: {err or status.prettyPrint()}")
            done = not out
            for name, _value in out:
                oid = tuple(name.get_oid() if hasattr(name, "get_oid") else name)
                if oid[: len(prefix)] != prefix:
                    done = True
                    break
                count += 1
                last = ".".join(map(str, oid))
            if done:
                break
        return time.perf_counter() - t, count

    def walk(self, series: str, root: str, reps: int) -> tuple[float, int]:
        return self.call(self._walk(series, root, reps))

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.engine.close_dispatcher()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


class RawV2c:
    """A minimal SNMPv2c client: BER from pysnmp's protocol API over a plain UDP socket.

    It times send-to-receive only (encoding and decoding happen outside the
    clock, except in the walk, which must decode to go on), so its figures are
    the agent's latency plus the loopback, without a manager library's cost."""

    def __init__(self, namespace: str):
        from pysnmp.proto.api import v2c

        self.v2c = v2c
        with entered(namespace):
            self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.connect((ADDRESS, 161))
        self.sock.settimeout(5)
        self.request_id = secrets.randbelow(1 << 30)

    def _exchange(self, pdu: Any, community: str) -> tuple[float, Any]:
        from pyasn1.codec.ber import decoder, encoder

        v2c = self.v2c
        self.request_id += 1
        v2c.apiPDU.set_request_id(pdu, self.request_id)
        msg = v2c.Message()
        v2c.apiMessage.set_defaults(msg)
        v2c.apiMessage.set_community(msg, community)
        v2c.apiMessage.set_pdu(msg, pdu)
        data = encoder.encode(msg)
        t = time.perf_counter()
        self.sock.send(data)
        for _ in range(100):  # skip stale answers of earlier, timed-out requests
            raw = self.sock.recv(65535)
            elapsed = time.perf_counter() - t
            rsp, _ = decoder.decode(raw, asn1Spec=v2c.Message())
            rpdu = v2c.apiMessage.get_pdu(rsp)
            if int(v2c.apiPDU.get_request_id(rpdu)) == self.request_id:
                break
        else:
            raise SnmpBenchError("no answer with our request-id")
        if int(v2c.apiPDU.get_error_status(rpdu)):
            raise SnmpBenchError(f"error-status {v2c.apiPDU.get_error_status(rpdu).prettyPrint()}")
        return elapsed, rpdu

    def set(self, pairs: list[tuple[str, Any]]) -> float:
        v2c = self.v2c
        pdu = v2c.SetRequestPDU()
        v2c.apiPDU.set_defaults(pdu)
        v2c.apiPDU.set_varbinds(pdu, [(v2c.ObjectIdentifier(o), v) for o, v in pairs])
        return self._exchange(pdu, COMMUNITY_RW)[0]

    def bulk(self, oids_: list[str], reps: int) -> tuple[float, list[Any]]:
        v2c = self.v2c
        pdu = v2c.GetBulkRequestPDU()
        v2c.apiBulkPDU.set_defaults(pdu)
        v2c.apiBulkPDU.set_non_repeaters(pdu, 0)
        v2c.apiBulkPDU.set_max_repetitions(pdu, reps)
        v2c.apiBulkPDU.set_varbinds(pdu, [(v2c.ObjectIdentifier(o), v2c.null) for o in oids_])
        elapsed, rpdu = self._exchange(pdu, COMMUNITY_RO)
        return elapsed, list(v2c.apiPDU.get_varbinds(rpdu))

    def walk(self, root: str, reps: int) -> tuple[float, int]:
        prefix = tuple(int(x) for x in root.strip(".").split("."))
        last, count, total = root, 0, 0.0
        for _ in range(1_000_000):
            t = time.perf_counter()
            _, out = self.bulk([last], reps)
            done = not out
            for name, _value in out:
                oid = tuple(name)
                if oid[: len(prefix)] != prefix:
                    done = True
                    break
                count += 1
                last = ".".join(map(str, oid))
            total += time.perf_counter() - t
            if done:
                break
        return total, count

    def close(self) -> None:
        self.sock.close()


class Series:
    """One way of talking SNMP: the series name in the results, and its three operations."""

    def __init__(self, name: str, client: Client | None = None, raw: RawV2c | None = None):
        self.name, self.client, self.raw = name, client, raw
        self.version = "v3" if name.startswith("v3") else "v2c"

    def set(self, pairs: list[tuple[str, Any]]) -> float:
        if self.raw is not None:
            return self.raw.set(pairs)
        assert self.client is not None
        return self.client.set(self.version, pairs)

    def bulk(self, oids_: list[str], reps: int) -> tuple[float, list[Any]]:
        if self.raw is not None:
            return self.raw.bulk(oids_, reps)
        assert self.client is not None
        return self.client.bulk(self.version, oids_, reps)

    def walk(self, root: str, reps: int) -> tuple[float, int]:
        if self.raw is not None:
            return self.raw.walk(root, reps)
        assert self.client is not None
        return self.client.walk(self.version, root, reps)
