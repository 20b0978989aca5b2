"""One `vnet bench agent` run: each planned part in turn, its own agent and namespace."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import asdict

from vnet.bench.agent import confirmed, connection, largemsg, nacm, restart, topology
from vnet.bench.agent.plan import Plan
from vnet.bench.agent.sandbox import sandboxed_agent
from vnet.bench.progress import BenchOptions, BenchProgress
from vnet.bench.results import BenchResult


def start_result(plan: Plan, bench: BenchOptions) -> BenchResult:
    parameters = {
        **asdict(plan),
        "parts": list(plan.parts),
        "quick": bench.quick,
        "load_average_at_start": list(os.getloadavg()),
    }
    result = BenchResult.start(
        "agent",
        parameters=parameters,
        description="The agent's goals of issues 11 and 17, each part against a real `vnet "
        "agent run` (NETCONF front-end) in a namespace of its own, driven over NETCONF.",
    )
    declarations: dict[str, Callable[[], None]] = {
        "connection": lambda: connection.declare(result),
        "confirmed": lambda: confirmed.declare(result),
        "nacm": lambda: nacm.declare(result, plan.nacm_vrs, plan.shallow),
        "restart": lambda: restart.declare(result, plan.restart_vrs),
        "large-message": lambda: largemsg.declare(result, plan.megabytes),
        "topology": lambda: topology.declare(result, plan.hosts),
    }
    for part in plan.parts:
        declarations[part]()
    return result


def _large_message(result: BenchResult, plan: Plan) -> None:
    with sandboxed_agent(result, "large-message") as agent:
        for _ in range(plan.rounds):
            largemsg.measure(result, agent, plan.megabytes)


def _topology(result: BenchResult, plan: Plan) -> None:
    for _ in range(plan.rounds):
        topology.measure(result, plan.hosts)


MEASURE: dict[str, Callable[[BenchResult, Plan], None]] = {
    "connection": lambda r, p: connection.measure(r, p.repeat),
    "confirmed": lambda r, p: confirmed.measure(r, p.repeat),
    "nacm": lambda r, p: nacm.measure(r, p.nacm_vrs, p.repeat, p.shallow),
    "restart": lambda r, p: restart.measure(r, p.restart_vrs, p.rounds),
    "large-message": _large_message,
    "topology": _topology,
}


def run_agent_bench(plan: Plan, bench: BenchOptions) -> BenchResult:
    """Every planned part; a part that fails is a note, and the others still run."""
    from vnet.bench.agent.goals import goals

    result = start_result(plan, bench)
    progress = BenchProgress("agent", total=len(plan.parts), quiet=bench.quiet)
    seconds = result.parameters.setdefault("part_seconds", {})  # wall time of each part
    with progress:
        for part in plan.parts:
            progress.update(part)
            started = time.monotonic()
            try:
                MEASURE[part](result, plan)
            except Exception as err:  # reported as a note; the other parts go on
                result.note(f"part {part} failed: {type(err).__name__}: {err}")
                progress.log(f"part {part} failed: {err}")
            seconds[part] = round(time.monotonic() - started, 1)
            progress.advance()
    result.parameters["load_average_at_end"] = list(os.getloadavg())
    for goal in goals(result):
        result.note(f"goal {goal.goal}: {goal.detail}, {goal.verdict}")
    start = result.parameters["load_average_at_start"][0]
    result.note(
        f"1-minute load average {start:.1f} at the start on {os.cpu_count()} CPUs: "
        "figures from a busy machine are upper bounds"
    )
    return result
