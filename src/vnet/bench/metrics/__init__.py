"""vnet bench metrics: what one Prometheus scrape costs the agent and the controller.

- agent: one real `vnet agent run` (NETCONF and RESTCONF) in a sandbox namespace,
  loaded over NETCONF with --vrs VRs of one interface each and --connections SRv6
  connections' pieces (agent_side.py); then its `GET /metrics` and, for reference,
  `GET /restconf/data` (the same state as JSON).
- controller: the real `vnet controller run` on simulated hosts (the process of
  `vnet bench controller --southbound simulated`) with --connections connections
  established through its API (controller_side.py); then its `GET /metrics`.

Per endpoint, 2 scrapes not counted, then --repeat counted ones over a kept HTTPS
connection, the endpoints in turn: wall time, the server's CPU time (all threads, from
/proc) and the answer's size (scrape.py, figures.py). The load average before and after
is in the report: the CPU figures are the scrapes' only on a quiet machine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from vnet.bench.contract import Benchmark, Defaults, Option

if TYPE_CHECKING:
    from vnet.bench.metrics.plan import Plan
    from vnet.bench.progress import BenchOptions
    from vnet.bench.results import BenchResult


class MetricsBench(Benchmark):
    name = "metrics"
    help = "The cost of a /metrics scrape of the agent (N VRs, M connections) and the controller."
    defaults = Defaults(repeat=20, quick_repeat=3)
    options = (
        Option(
            "--vrs",
            "vrs",
            "int",
            minimum=1,
            maximum=5000,
            help="VRs of one interface on the agent, besides the connections' two "
            "[default: 1000; 20 with --quick].",
        ),
        Option(
            "--connections",
            "connections",
            "int",
            minimum=1,
            maximum=4095,  # an agent's connection ids are 1..4095
            help="Connections on the agent and on the controller [default: 1000; 20 with --quick].",
        ),
        Option(
            "--parts",
            "parts",
            default="agent,controller",
            show_default=True,
            help="What to measure: agent, controller or both (comma-separated).",
        ),
    )

    def plan(self, common: BenchOptions, **options: Any) -> Plan:
        from vnet.bench.metrics.plan import make_plan

        return make_plan(common, **options)

    def run(self, plan: Plan, common: BenchOptions) -> BenchResult:
        from vnet.bench.metrics.run import run_metrics

        return run_metrics(plan, common)

    def headline(self, result: BenchResult) -> str | None:
        from vnet.bench.metrics.figures import headline

        return headline(result)
