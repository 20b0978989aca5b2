"""vnet bench snmp: the SNMP front-end's latency, v2c against v3 authPriv.

A real ``vnet agent run`` (NETCONF and SNMP) runs in a namespace made for the
run (``vnet-sb<hex>-host``); all traffic stays on that namespace's loopback.
Measured (paper 000 reports SNMPv2c create 1.02 s, retrieve 0.03 s):

- create: one SET that creates a VR and its interface (createAndGo on a
  vnetVrConfigEntry and a vnetVrIfConfigEntry, 7 variable bindings); the
  answer comes after the datastore commit, i.e. with the VR in the kernel.
  Each is followed by a timed destroy (one SET).
- getbulk: one GETBULK (non-repeaters 0, max-repetitions 1) returning the 13
  objects of one VR: its configuration and state rows and its interface's
  binding, state and octet counters.
- walk: with ``--vrs`` VRs configured (made in one NETCONF edit-config), a
  GETBULK walk (max-repetitions 50) of vnetVrConfigTable, i.e. 3 x N objects.

Client: pysnmp's asyncio API in this process (one SnmpEngine kept for the
whole run, so v3 engine discovery and key localisation happen once, as in a
long-running manager), on a thread that entered the namespace. The Net-SNMP
tools (``snmpset``, ``snmpbulkget``, ``snmpbulkwalk``) are measured too, as
the ``*_cli`` metrics: a fork/exec, MIB-less start and, for v3, discovery and
key localisation per call are part of those figures. Series ``v2c`` is the
baseline, so every table shows v3 authPriv (HMAC-SHA-96, AES-128) as a ratio
to v2c. Both client and agent are Python (pysnmp) in the in-process figures:
its BER and crypto costs are on both sides of the ratio.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import shutil
import socket
import threading
import time
from collections.abc import Awaitable
from typing import Any, TypeVar

import click

from vnet.agent.snmp import oids
from vnet.bench.progress import BenchOptions, BenchProgress, bench_options
from vnet.bench.report import finish_run
from vnet.bench.results import BenchResult, tool_version
from vnet.lab import processes
from vnet.lab.sandbox import HostSandbox, SandboxAgent
from vnet.substrate import nsfs

ADDRESS = "127.0.0.1"
NETCONF_PORT = 8830
NS = "urn:vnet:yang:vnet-router"
COMMUNITY_RO, COMMUNITY_RW = "bench-ro", "bench-rw"
USER, AUTH_KEY, PRIV_KEY = "bench", "bench-auth-key", "bench-priv-key"
NETWORKS_XML = f"""<config><virtual-networks xmlns="{NS}"><network><name>n1</name>
<tenant>a</tenant><vni>10</vni><ipv4-prefix>10.0.0.0/16</ipv4-prefix></network>
</virtual-networks></config>"""
SERIES = ("v2c", "v3")
GOALS = {"create_ms": 20.0, "getbulk_ms": 3.0, "walk_s": 1.0}
T = TypeVar("T")


class SnmpBenchError(Exception):
    pass


def require_root() -> None:
    if os.geteuid() != 0:
        raise click.ClickException("this benchmark creates a network namespace: run it as root")


def cli_missing() -> str | None:
    missing = [t for t in ("snmpset", "snmpbulkget", "snmpbulkwalk") if not shutil.which(t)]
    return f"not installed: {', '.join(missing)} (apt-get install snmp)" if missing else None


# -- the agent in a namespace of its own ------------------------------------------------


def sandbox_agent() -> SandboxAgent:
    """An agent in a namespace of its own, serving NETCONF (to set up) and SNMP."""
    settings = {
        "ports": {"netconf": NETCONF_PORT},
        "snmp": {
            "ro_communities": [COMMUNITY_RO],
            "rw_communities": [COMMUNITY_RW],
            "users": [{"name": USER, "auth_key": AUTH_KEY, "priv_key": PRIV_KEY}],
        },
    }
    return SandboxAgent(HostSandbox(scope="sb" + secrets.token_hex(3)), settings)


# -- the in-process client --------------------------------------------------------------


class Client:
    """pysnmp's asyncio manager API on a thread inside the agent's namespace."""

    def __init__(self, namespace: str):
        self.namespace = namespace
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        self.ready.wait(10)
        self.hl: Any = None
        self.cache: dict[Any, list[Any]] = {}
        self.call(self._setup())

    def _run(self) -> None:
        with nsfs.entered(self.namespace):  # sockets made on this thread are in there
            asyncio.set_event_loop(self.loop)
            self.ready.set()
            self.loop.run_forever()

    def call(self, coro: Awaitable[T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(120)  # type: ignore[arg-type]

    async def _setup(self) -> None:
        from pysnmp.hlapi.v3arch import asyncio as hl

        self.hl = hl
        self.engine = hl.SnmpEngine()
        self.target = await hl.UdpTransportTarget.create((ADDRESS, 161), timeout=5, retries=0)
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


# -- what is measured ---------------------------------------------------------------------


def dotted(oid: tuple[int, ...]) -> str:
    return oids.dotted(oid)


def create_pairs(idx: int) -> list[tuple[str, Any]]:
    from pysnmp.proto.rfc1902 import Integer32, OctetString

    vr = lambda c: dotted((*oids.VR_CONFIG_ENTRY, c, idx))  # noqa: E731
    itf = lambda c: dotted((*oids.IF_CONFIG_ENTRY, c, idx, 1))  # noqa: E731
    third, fourth = divmod(idx, 250)
    return [
        (vr(oids.VR_NAME), OctetString(f"b{idx}")),
        (vr(oids.VR_ADMIN), Integer32(1)),
        (vr(oids.VR_STATUS), Integer32(4)),
        (itf(oids.IF_NETWORK), OctetString("n1")),
        (itf(oids.IF_IPV4), OctetString(f"10.0.{third}.{fourth + 1}/16")),
        (itf(oids.IF_NAME), OctetString("eth0")),
        (itf(oids.IF_STATUS), Integer32(4)),
    ]


def destroy_pairs(idx: int) -> list[tuple[str, Any]]:
    from pysnmp.proto.rfc1902 import Integer32

    return [(dotted((*oids.VR_CONFIG_ENTRY, oids.VR_STATUS, idx)), Integer32(6))]


def getbulk_oids(idx: int) -> list[str]:
    """The OIDs just before one VR's 13 objects: GETBULK with one repetition returns them."""
    return (
        [dotted((*oids.VR_CONFIG_ENTRY, c, idx - 1)) for c in (2, 3, 4)]
        + [dotted((*oids.VR_ENTRY, c, idx - 1)) for c in (1, 2, 3, 4)]
        + [dotted((*oids.IF_CONFIG_ENTRY, c, idx, 0)) for c in (2, 3, 4)]
        + [dotted((*oids.IF_STATS_ENTRY, c, idx, 0)) for c in (1, 2, 6)]
    )


def cli_auth(series: str, write: bool) -> list[str]:
    if series == "v2c":
        return ["-v2c", "-c", COMMUNITY_RW if write else COMMUNITY_RO]
    return [
        "-v3",
        "-l",
        "authPriv",
        "-u",
        USER,
        "-a",
        "SHA",
        "-A",
        AUTH_KEY,
        "-x",
        "AES",
        "-X",
        PRIV_KEY,
    ]


def cli(agent: SandboxAgent, argv: list[str]) -> float:
    t = time.perf_counter()
    done = processes.run(agent.host.namespace, ["env", "MIBS=", *argv], timeout=120)
    elapsed = time.perf_counter() - t
    if done.returncode != 0 or "Error" in done.stderr:
        raise SnmpBenchError(f"{' '.join(argv)}: {done.stderr.strip() or done.stdout[-300:]}")
    return elapsed


def cli_set_args(pairs: list[tuple[str, Any]]) -> list[str]:
    out = []
    for oid, value in pairs:
        kind = "i" if value.__class__.__name__ == "Integer32" else "s"
        out += [oid, kind, str(value)]
    return out


def populate(agent: SandboxAgent, count: int, first: int) -> float:
    """`count` VRs (no interface) in one NETCONF edit-config; returns its seconds."""
    routers = "".join(
        f"<router><name>w{i}</name><index>{i}</index></router>" for i in range(first, first + count)
    )
    with agent.netconf(timeout=600) as m:
        t = time.perf_counter()
        m.edit_config(
            target="running", config=f'<config><routers xmlns="{NS}">{routers}</routers></config>'
        )
        return time.perf_counter() - t


def declare(result: BenchResult) -> None:
    vrs = result.parameters["vrs"]
    series = "series v2c and v3: pysnmp client; v2c-raw: hand-encoded PDUs"
    result.declare(
        "create_ms",
        "ms",
        description="one SET creating a VR with one interface "
        f"(createAndGo, 7 varbinds), answered after the commit; {series}",
    )
    result.declare("destroy_ms", "ms", description=f"one SET destroying that VR; {series}")
    result.declare("getbulk_ms", "ms", description=f"one GETBULK of one VR's 13 objects; {series}")
    result.declare(
        "walk_s",
        "s",
        description=f"GETBULK walk (max-repetitions 50) of "
        f"vnetVrConfigTable with {vrs} VRs ({3 * vrs} objects); {series}",
    )
    result.declare("create_cli_ms", "ms", description="snmpset creating a VR (process included)")
    result.declare(
        "getbulk_cli_ms", "ms", description="snmpbulkget of one VR's 13 objects (process included)"
    )
    result.declare(
        "walk_cli_s",
        "s",
        description=f"snmpbulkwalk -Cr50 of vnetVrConfigTable with {vrs} VRs (process included)",
    )
    result.declare(
        "agent_rss_mb",
        "MB",
        description="VmRSS of the agent process (NETCONF + SNMP front-ends) at the end of the run",
    )


class RawV2c:
    """A minimal SNMPv2c client: BER from pysnmp's protocol API over a plain UDP socket.

    It times send-to-receive only (encoding and decoding happen outside the
    clock, except in the walk, which must decode to go on), so its figures are
    the agent's latency plus the loopback, without a manager library's cost."""

    def __init__(self, namespace: str):
        from pysnmp.proto.api import v2c

        self.v2c = v2c
        with nsfs.entered(namespace):
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


def run_snmp(bench: BenchOptions, vrs: int, ops: int) -> BenchResult:
    with_cli = cli_missing() is None
    result = BenchResult.start(
        "snmp",
        parameters={
            **bench.as_parameters(),
            "vrs": vrs,
            "ops_per_repeat": ops,
            "clients": {
                "v2c, v3": "pysnmp asyncio manager API in this process (one engine)",
                "v2c-raw": "hand-encoded v2c PDUs over a plain UDP socket, send-to-receive",
                "*_cli": "Net-SNMP tools, one process per operation",
            },
            "v3": "authPriv, HMAC-SHA-96 and AES-128",
            "goals_v2c_p50": GOALS,
            "machine": "shared 2-core machine that other jobs load: figures are from a loaded "
            "machine",
        },
        tools={
            "snmpset": tool_version(["snmpset", "--version"]) if with_cli else None,
            "pysnmp": _pysnmp_version(),
        },
        baseline="v2c",
    )
    declare(result)
    if not with_cli:
        result.note(f"Net-SNMP CLI figures skipped: {cli_missing()}")
    agent = sandbox_agent()
    cli_steps = (2 * ops + 1) * 2 if with_cli else 0
    total = bench.repeat * (3 * (3 * ops + 1) + cli_steps)
    client = raw = None
    idx = 1
    try:
        with BenchProgress("snmp", total=total, quiet=bench.quiet) as progress:
            progress.update("starting the agent")
            agent.host.create()
            agent.start("netconf,snmp")
            with agent.netconf(timeout=600) as m:
                m.edit_config(target="running", config=NETWORKS_XML)
            client = Client(agent.host.namespace)
            raw = RawV2c(agent.host.namespace)
            series = [Series("v2c", client), Series("v3", client), Series("v2c-raw", raw=raw)]
            for s in series:  # warm-up: v3 discovery and keys, first use of every code path
                s.set(create_pairs(idx))
                s.set(destroy_pairs(idx))
            for rep in range(bench.repeat):
                for s in series:
                    progress.update(f"create/destroy {s.name}, repeat {rep + 1}")
                    for _ in range(ops):
                        result.record("create_ms", s.name, 1000 * s.set(create_pairs(idx)))
                        result.record("destroy_ms", s.name, 1000 * s.set(destroy_pairs(idx)))
                        progress.advance(2)
                if with_cli:
                    for version in SERIES:
                        progress.update(f"snmpset {version}, repeat {rep + 1}")
                        for _ in range(ops):
                            argv = [
                                "snmpset",
                                *cli_auth(version, True),
                                ADDRESS,
                                *cli_set_args(create_pairs(idx)),
                            ]
                            result.record("create_cli_ms", version, 1000 * cli(agent, argv))
                            client.set("v2c", destroy_pairs(idx))
                            progress.advance()
            client.set("v2c", create_pairs(idx))  # the VR to read
            for rep in range(bench.repeat):
                for s in series:
                    progress.update(f"getbulk {s.name}, repeat {rep + 1}")
                    for _ in range(ops):
                        elapsed, out = s.bulk(getbulk_oids(idx), 1)
                        if len(out) != 13 or str(out[0][1]) != f"b{idx}":
                            raise SnmpBenchError(f"unexpected GETBULK answer: {out}")
                        result.record("getbulk_ms", s.name, 1000 * elapsed)
                        progress.advance()
                if with_cli:
                    for version in SERIES:
                        progress.update(f"snmpbulkget {version}, repeat {rep + 1}")
                        for _ in range(ops):
                            argv = [
                                "snmpbulkget",
                                *cli_auth(version, False),
                                "-Cn0",
                                "-Cr1",
                                ADDRESS,
                                *getbulk_oids(idx),
                            ]
                            result.record("getbulk_cli_ms", version, 1000 * cli(agent, argv))
                            progress.advance()
            progress.update(f"configuring {vrs} VRs over NETCONF")
            seconds = populate(agent, vrs - 1, 2)
            result.note(f"{vrs - 1} more VRs made in one NETCONF edit-config in {seconds:.1f} s")
            root = dotted(oids.VR_CONFIG_ENTRY[:-1])
            for rep in range(bench.repeat):
                for s in series:
                    progress.update(f"walk {s.name}, repeat {rep + 1}")
                    elapsed, count = s.walk(root, 50)
                    if count != 3 * vrs:
                        raise SnmpBenchError(f"walk returned {count} objects, not {3 * vrs}")
                    result.record("walk_s", s.name, elapsed)
                    progress.advance()
                if with_cli:
                    for version in SERIES:
                        argv = ["snmpbulkwalk", *cli_auth(version, False), "-Cr50", ADDRESS, root]
                        result.record("walk_cli_s", version, cli(agent, argv))
                        progress.advance()
            rss = agent.rss_mb()
            if rss is not None:
                result.record("agent_rss_mb", "agent", rss)
    finally:
        if raw is not None:
            raw.close()
        if client is not None:
            client.close()
        for problem in agent.host.cleanup():
            result.note(problem)
    for metric, goal in GOALS.items():
        for name in ("v2c-raw", "v2c"):
            p50 = _p50(result, metric, name)
            if p50 is not None:
                verdict = "meets" if p50 <= goal else "misses"
                result.note(
                    f"{metric} {name} p50 {p50:.3g} {verdict} the goal <= {goal:g} (loaded machine)"
                )
    return result


def _p50(result: BenchResult, metric: str, series: str) -> float | None:
    for m in result.measurements:
        if m.metric == metric and m.series == series and m.samples:
            return m.summary().p50
    return None


def _pysnmp_version() -> str | None:
    with contextlib.suppress(Exception):
        import pysnmp

        return f"pysnmp {pysnmp.__version__}"
    return None


@click.command("snmp")
@bench_options(duration=1.0, repeat=3, quick_duration=1.0, quick_repeat=1)  # no --duration use
@click.option(
    "--vrs",
    type=click.IntRange(2, 5000),
    default=None,
    help="VRs configured for the walk [default: 1000; 200 with --quick].",
)
@click.option(
    "--ops",
    type=click.IntRange(1, 1000),
    default=None,
    help="Operations per series and repeat [default: 20; 5 with --quick].",
)
def snmp(bench: BenchOptions, vrs: int | None, ops: int | None) -> None:
    """SNMP create, GETBULK and walk latency, v2c against v3 authPriv (paper 000)."""
    require_root()
    result = run_snmp(
        bench, vrs or (200 if bench.quick else 1000), ops or (5 if bench.quick else 20)
    )
    finish_run(result, bench)
