"""One SNMP benchmark run: create, GETBULK and walk per series, and the goals."""

from __future__ import annotations

import contextlib

from vnet.agent.snmp import oids
from vnet.bench.client import create_networks
from vnet.bench.progress import BenchOptions, BenchProgress
from vnet.bench.results import BenchResult, tool_version
from vnet.bench.snmp import SnmpBenchError
from vnet.bench.snmp.clients import Client, RawV2c, Series
from vnet.bench.snmp.netsnmp import cli, cli_auth, cli_missing, cli_set_args
from vnet.bench.snmp.workload import (
    ADDRESS,
    NETWORKS_XML,
    SERIES,
    create_pairs,
    destroy_pairs,
    dotted,
    getbulk_oids,
    populate,
    sandbox_agent,
)

GOALS = {"create_ms": 20.0, "getbulk_ms": 3.0, "walk_s": 1.0}


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
            create_networks(agent, NETWORKS_XML)
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
