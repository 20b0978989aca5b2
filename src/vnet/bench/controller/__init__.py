"""vnet bench controller: paper 001's Figs. 2-4 (Execution Management) against `vnet controller`.

Per database (SQLite, PostgreSQL: the series) a lab of emulated hosts with their agents
and a controller (the lab file's `controller:` section; examples/controller-40.yaml has
the paper's 40 end hosts), then rounds of 100 creates, 50 modifies, 50 path modifies
(moves), 10 creates that need a rearrangement (moves.py) and 100 removes at 1, 10 and 100
simultaneous requests (driver.py, schedule.py), repeated. Each request's time
is split by the controller's Server-Timing header into api, db, path and devices, and the
client's rest (timing.py); per run the throughput, the database's share, and whether the
latency held through the run (pace.py). Every round checks the links for over-admission
and, after the removes, for leaked reservations (checks.py): any violation fails the run.
The report adds one stacked-bar figure per operation in the paper's shape (figures.py).
"""

from __future__ import annotations

import signal
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vnet.bench.contract import BenchError, Benchmark, Defaults, Goal, Option

if TYPE_CHECKING:
    from vnet.bench.controller.plan import Plan
    from vnet.bench.progress import BenchOptions
    from vnet.bench.results import BenchResult


class IntegrityError(BenchError):
    """A round over-admitted a link or leaked a reservation: the run fails (after its report)."""


def _terminate(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


class ControllerBench(Benchmark):
    name = "controller"
    help = """Paper 001 Figs. 2-4: create, modify, remove requests against vnet controller.

    A lab (--topology, with a controller: section; default examples/controller-40.yaml)
    per database (--databases sqlite,postgresql), then rounds of --creates creates, --modifies
    modifies, --moves path modifies, --rearranges creates that fit only by moving another
    (one at a time, in the rounds at the lowest concurrency) and as many removes as creates
    at each --concurrency (1,10,100), repeated --repeat times. Time per request split by
    the controller's Server-Timing header (api, db, path, devices) plus the client's rest;
    throughput, p50/p99, the database's share.
    Over-admission or a leaked reservation fails the run. --duration is not used.
    """
    defaults = Defaults(repeat=3, quick_repeat=1, duration=1.0, quick_duration=1.0)
    options = (
        Option("--topology", "topology", path=True, metavar="FILE", help="Lab file."),
        Option(
            "--databases", "databases", metavar="LIST", help="sqlite,postgresql [sqlite --quick]."
        ),
        Option(
            "--concurrency", "concurrency", metavar="LIST", help="Simultaneous requests [1,10,100]."
        ),
        Option(
            "--creates", "creates", "int", minimum=3, maximum=2000, help="Creates per round [100]."
        ),
        Option("--modifies", "modifies", "int", minimum=0, maximum=2000, help="Modifies [50]."),
        Option("--moves", "moves", "int", minimum=0, maximum=2000, help="Path modifies [50]."),
        Option(
            "--rearranges",
            "rearranges",
            "int",
            minimum=0,
            maximum=200,
            help="Creates that need a move, one at a time [10].",
        ),
        Option(
            "--bandwidth", "bandwidth", default="1mbit", help="Each create's bandwidth [1mbit]."
        ),
        Option("--modified", "modified", default="2mbit", help="A modify's new bandwidth [2mbit]."),
        Option("--seed", "seed", "int", default=1, help="Seed of the random end-host pairs [1]."),
        Option(
            "--southbound",
            "southbound",
            "choice",
            default="lab",
            choices=("lab", "simulated"),
            help="lab: emulated hosts and agents; simulated: hosts in the controller's memory.",
        ),
        Option("--hosts", "hosts", metavar="LIST", help="Simulated: substrate sizes [100,1000]."),
        Option(
            "--connections",
            "connections",
            "int",
            minimum=3,
            maximum=60000,
            help="Simulated: creates per size, all removed after [10000].",
        ),
        Option(
            "--rpc-latency",
            "rpc_latency",
            "float",
            minimum=0,
            maximum=1000,
            help="Simulated: ms each RPC to a host takes [1].",
        ),
    )

    def plan(self, common: BenchOptions, **options: Any) -> Plan:
        from vnet.bench.controller.plan import make_plan

        return make_plan(common, **options)

    def run(self, plan: Plan, common: BenchOptions) -> BenchResult:
        from vnet.bench.controller.run import run_controller_bench
        from vnet.bench.controller.simulated import run_simulated

        # SIGTERM (a CI timeout, kill PID) unwinds like Ctrl-C: the lab and PostgreSQL go down.
        previous = signal.signal(signal.SIGTERM, _terminate)
        try:
            if plan.southbound == "simulated":
                return run_simulated(plan, common)
            return run_controller_bench(plan, common)
        finally:
            signal.signal(signal.SIGTERM, previous)

    def goals(self, result: BenchResult) -> Sequence[Goal]:
        from vnet.bench.controller.goals import goals, simulated_goals

        if result.parameters.get("southbound") == "simulated":
            return simulated_goals(result)
        return goals(result)

    def headline(self, result: BenchResult) -> str | None:
        judged = self.goals(result)
        counts = ", ".join(
            f"{sum(1 for g in judged if g.verdict == v)} {v}"
            for v in ("met", "MISSED", "not judged")
        )
        return f"controller goals: {counts}"

    def finish(self, result: BenchResult, plan: Plan, directory: Path) -> str | None:
        """The paper-shaped figures; then a violation fails the run, its report written."""
        from vnet.bench.controller.figures import write_figures
        from vnet.bench.controller.goals import violations

        if result.parameters.get("southbound") != "simulated":
            write_figures(result, directory)
        lines = [f"goal {g.verdict}: {g.goal}: {g.detail}" for g in self.goals(result)]
        lines += [n for n in result.notes if n.startswith(("FELL BEHIND", "VIOLATION"))]
        found = violations(result)
        if found:
            raise IntegrityError(
                "\n".join([*lines, f"{found} over-admission/leak violation(s); see {directory}"])
            )
        return "\n".join(lines)
