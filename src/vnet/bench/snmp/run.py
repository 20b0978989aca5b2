"""One SNMP benchmark run: create, GETBULK and walk per series, and the goals."""

from __future__ import annotations

import contextlib
from typing import Any

from vnet.bench.client import create_networks
from vnet.bench.contract import Goal
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
    getbulk_oids,
    populate,
    sandbox_agent,
    vr_config_table,
)
from vnet.lab.sandbox import SandboxAgent

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


def start_result(bench: BenchOptions, vrs: int, ops: int, with_cli: bool) -> BenchResult:
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
    return result


class SnmpRun:
    """The phases of one run against one agent: create/destroy, GETBULK, walk.

    `idx` is the VR every phase works on; in-process series are measured first,
    then (if installed) the Net-SNMP tools, in every repeat.
    """

    idx = 1

    def __init__(
        self, result: BenchResult, agent: SandboxAgent, client: Client, raw: RawV2c, **plan: Any
    ) -> None:
        self.result, self.agent, self.client = result, agent, client
        self.series = [Series("v2c", client), Series("v3", client), Series("v2c-raw", raw=raw)]
        self.repeat, self.ops, self.vrs = plan["repeat"], plan["ops"], plan["vrs"]
        self.with_cli: bool = plan["with_cli"]

    def warm_up(self) -> None:
        """v3 discovery and keys, first use of every code path."""
        for s in self.series:
            s.set(create_pairs(self.idx))
            s.set(destroy_pairs(self.idx))

    def create(self, progress: BenchProgress) -> None:
        for rep in range(self.repeat):
            for s in self.series:
                progress.update(f"create/destroy {s.name}, repeat {rep + 1}")
                for _ in range(self.ops):
                    self.result.record("create_ms", s.name, 1000 * s.set(create_pairs(self.idx)))
                    self.result.record("destroy_ms", s.name, 1000 * s.set(destroy_pairs(self.idx)))
                    progress.advance(2)
            if self.with_cli:
                self.create_cli(progress, rep)

    def create_cli(self, progress: BenchProgress, rep: int) -> None:
        for version in SERIES:
            progress.update(f"snmpset {version}, repeat {rep + 1}")
            for _ in range(self.ops):
                pairs = cli_set_args(create_pairs(self.idx))
                argv = ["snmpset", *cli_auth(version, True), ADDRESS, *pairs]
                self.result.record("create_cli_ms", version, 1000 * cli(self.agent, argv))
                self.client.set("v2c", destroy_pairs(self.idx))
                progress.advance()

    def getbulk(self, progress: BenchProgress) -> None:
        self.client.set("v2c", create_pairs(self.idx))  # the VR to read
        for rep in range(self.repeat):
            for s in self.series:
                progress.update(f"getbulk {s.name}, repeat {rep + 1}")
                for _ in range(self.ops):
                    elapsed, out = s.bulk(getbulk_oids(self.idx), 1)
                    if len(out) != 13 or str(out[0][1]) != f"b{self.idx}":
                        raise SnmpBenchError(f"unexpected GETBULK answer: {out}")
                    self.result.record("getbulk_ms", s.name, 1000 * elapsed)
                    progress.advance()
            if self.with_cli:
                self.getbulk_cli(progress, rep)

    def getbulk_cli(self, progress: BenchProgress, rep: int) -> None:
        for version in SERIES:
            progress.update(f"snmpbulkget {version}, repeat {rep + 1}")
            for _ in range(self.ops):
                argv = ["snmpbulkget", *cli_auth(version, False), "-Cn0", "-Cr1", ADDRESS]
                argv += getbulk_oids(self.idx)
                self.result.record("getbulk_cli_ms", version, 1000 * cli(self.agent, argv))
                progress.advance()

    def walk(self, progress: BenchProgress) -> None:
        progress.update(f"configuring {self.vrs} VRs over NETCONF")
        seconds = populate(self.agent, self.vrs - 1, 2)
        self.result.note(
            f"{self.vrs - 1} more VRs made in one NETCONF edit-config in {seconds:.1f} s"
        )
        root = vr_config_table()
        for rep in range(self.repeat):
            for s in self.series:
                progress.update(f"walk {s.name}, repeat {rep + 1}")
                elapsed, count = s.walk(root, 50)
                if count != 3 * self.vrs:
                    raise SnmpBenchError(f"walk returned {count} objects, not {3 * self.vrs}")
                self.result.record("walk_s", s.name, elapsed)
                progress.advance()
            if self.with_cli:
                for version in SERIES:
                    argv = ["snmpbulkwalk", *cli_auth(version, False), "-Cr50", ADDRESS, root]
                    self.result.record("walk_cli_s", version, cli(self.agent, argv))
                    progress.advance()


def run_snmp(bench: BenchOptions, vrs: int, ops: int) -> BenchResult:
    with_cli = cli_missing() is None
    result = start_result(bench, vrs, ops, with_cli)
    agent = sandbox_agent()
    cli_steps = (2 * ops + 1) * 2 if with_cli else 0
    total = bench.repeat * (3 * (3 * ops + 1) + cli_steps)
    client = raw = None
    try:
        with BenchProgress("snmp", total=total, quiet=bench.quiet) as progress:
            progress.update("starting the agent")
            agent.host.create()
            agent.start("netconf,snmp")
            create_networks(agent, NETWORKS_XML)
            client = Client(agent.host.namespace)
            raw = RawV2c(agent.host.namespace)
            plan = {"repeat": bench.repeat, "ops": ops, "vrs": vrs, "with_cli": with_cli}
            run = SnmpRun(result, agent, client, raw, **plan)
            run.warm_up()
            run.create(progress)
            run.getbulk(progress)
            run.walk(progress)
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
    for line in goal_notes(result):
        result.note(line)
    return result


def _judged(result: BenchResult) -> list[tuple[str, str, float, float]]:
    """(metric, series, p50, goal) for the v2c series, raw and through pysnmp."""
    found = []
    for metric, goal in GOALS.items():
        for name in ("v2c-raw", "v2c"):
            p50 = _p50(result, metric, name)
            if p50 is not None:
                found.append((metric, name, p50, goal))
    return found


def goals(result: BenchResult) -> list[Goal]:
    return [
        Goal(f"{metric} {name} p50 <= {goal:g}", p50 <= goal, f"p50 {p50:.3g} (loaded machine)")
        for metric, name, p50, goal in _judged(result)
    ]


def goal_notes(result: BenchResult) -> list[str]:
    return [
        f"{metric} {name} p50 {p50:.3g} {'meets' if p50 <= goal else 'misses'} the goal "
        f"<= {goal:g} (loaded machine)"
        for metric, name, p50, goal in _judged(result)
    ]


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
