"""One `vnet bench metrics` run: the agent's endpoints, then the controller's."""

from __future__ import annotations

import os

from vnet.bench.metrics import figures
from vnet.bench.metrics.agent_side import agent_targets
from vnet.bench.metrics.controller_side import controller_targets
from vnet.bench.metrics.plan import WARMUPS, Plan
from vnet.bench.progress import BenchOptions, BenchProgress
from vnet.bench.results import BenchResult


def load_average() -> list[float]:
    return [round(v, 2) for v in os.getloadavg()]


def start_result(plan: Plan, bench: BenchOptions) -> BenchResult:
    result = BenchResult.start(
        "metrics",
        parameters={
            **bench.as_parameters(),
            "vrs": plan.vrs,
            "connections": plan.connections,
            "controller_hosts": plan.hosts,
            "warmups": WARMUPS,
            "parts": list(plan.parts),
            "load_average_at_start": load_average(),
            "machine": f"{os.cpu_count()} CPUs shared with other work",
        },
        description="The cost of one Prometheus scrape: the agent's GET /metrics (and GET "
        "/restconf/data, the same state as JSON, for reference) with N VRs and M connections' "
        "pieces, and the controller's GET /metrics with M established connections.",
    )
    figures.declare(result)
    return result


def run_metrics(plan: Plan, bench: BenchOptions) -> BenchResult:
    result = start_result(plan, bench)
    rounds = WARMUPS + bench.repeat
    with BenchProgress("metrics", total=len(plan.parts), quiet=bench.quiet) as progress:
        if "agent" in plan.parts:
            with agent_targets(result, plan.vrs, plan.connections, progress.update) as targets:
                figures.scrape_all(result, targets, WARMUPS, bench.repeat, progress.update)
            progress.advance()
        if "controller" in plan.parts:
            with controller_targets(
                result, plan.hosts, plan.connections, progress.update
            ) as targets:
                figures.scrape_all(result, targets, WARMUPS, bench.repeat, progress.update)
            progress.advance()
    start, end = result.parameters["load_average_at_start"], load_average()
    result.parameters["load_average_at_end"] = end
    result.note(
        f"load average (1, 5, 15 min) {start[0]} {start[1]} {start[2]} at the start, "
        f"{end[0]} {end[1]} {end[2]} at the end, on {os.cpu_count()} CPUs; "
        f"{rounds} scrapes per endpoint, the first {WARMUPS} not counted"
    )
    return result
