"""vnet bench failover: how long a tenant is cut off when an underlay link fails.

A three-host triangle (examples/ospf-triangle.yaml: pc1 behind r1, pc3 behind r3, the
VRs on h1, h2, h3 running OSPF) carries a constant UDP probe from pc1 to pc3 (1000
datagrams a second, iperf3, sequence-numbered). One second into each run (or once the
probe reaches pc3, if iperf3 takes longer to start) the underlay link under the direct
path fails (`vnet lab link down`, as a pulled cable: both ends lose the
carrier). The outage is derived from the loss (RFC 6413's loss-derived convergence
time): lost datagrams / rate. Three variants in the same run:

- `bfd`: OSPF with BFD on the direct network (the file as it is);
- `ospf`: OSPF without BFD: the neighbour is lost after the dead interval;
- `static`: the tenant routed statically (`routing: auto`): the baseline, which does
  not recover until the link returns.

The link comes back 2 s before the end of each run (iperf3 needs a path to report), so
the static baseline's outage is the whole time the link was down. Before each run the
benchmark waits until pc3's replies come along the direct path (their TTL) and OSPF has
converged on every router (converged.py), so every run starts from the same state.

Two more variants measure the controller's own reaction (reroute.py): in a lab of
examples/controller.yaml, N guaranteed connections (`--connections`, default 1,10,100)
cross the link that fails (`reroute-link`) or the host that fails (`reroute-host`); from
the controller's records (when it recorded the link down, when each connection's history
says rerouted or degraded) come the time it took to learn of the failure, to move each
connection, the connections degraded, the ledger against capacity (over-admission) and
after every release (leaks), and the connections that moved back when the element
returned (flaps). Traffic on the moved connections is not measured: the lab routes its
tenant statically over the failed link, so iperf3's control connection has no path.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from vnet.bench.contract import Benchmark, Defaults, Goal, Option, OptionError
from vnet.bench.options import parse_kinds, parse_list

if TYPE_CHECKING:
    from vnet.bench.progress import BenchOptions
    from vnet.bench.results import BenchResult

EXAMPLES = Path(__file__).resolve().parents[4] / "examples"
EXAMPLE = EXAMPLES / "ospf-triangle.yaml"
CONTROLLER_EXAMPLE = EXAMPLES / "controller.yaml"
ROUTING = ("bfd", "ospf", "static")
REROUTING = ("reroute-link", "reroute-host")  # reroute.VARIANTS, without importing it here
VARIANTS = ROUTING + REROUTING
BFD_GOAL_MS = 1000.0
MAX_CONNECTIONS = 150  # of BANDWIDTH each: what one 100 Mbit/s link of the lab can hold


class FailoverBench(Benchmark):
    name = "failover"
    help = (
        "Tenant outage when an underlay link fails (OSPF with and without BFD, static), "
        "and the controller's reroute of guaranteed connections off a failed link or host."
    )
    defaults = Defaults(repeat=5, quick_repeat=1, duration=10.0, quick_duration=9.0)
    tools = ("iperf3", "ping")
    options = (
        Option(
            "--file",
            "file",
            path=True,
            default=EXAMPLE,
            show_default=True,
            help="A topology shaped like examples/ospf-triangle.yaml.",
        ),
        Option(
            "--variants",
            "variants",
            default=",".join(VARIANTS),
            show_default=True,
            metavar="NAME,...",
            help="Which of bfd, ospf, static, reroute-link, reroute-host to measure.",
        ),
        Option(
            "--controller-file",
            "controller_file",
            path=True,
            default=CONTROLLER_EXAMPLE,
            show_default=True,
            help="The reroute variants' lab: shaped like examples/controller.yaml.",
        ),
        Option(
            "--connections",
            "connections",
            default="1,10,100",
            show_default=True,
            metavar="N,...",
            help="The reroute variants: how many connections cross the failed element.",
        ),
    )

    def plan(
        self,
        common: BenchOptions,
        file: Path = EXAMPLE,
        variants: str = ",".join(VARIANTS),
        controller_file: Path = CONTROLLER_EXAMPLE,
        connections: str = "1,10,100",
    ) -> dict[str, Any]:
        chosen = parse_kinds(variants, VARIANTS, "--variants")
        routing = [v for v in VARIANTS if v in chosen and v in ROUTING]
        rerouting = [v for v in VARIANTS if v in chosen and v in REROUTING]
        plan: dict[str, Any] = {"routing": routing, "rerouting": rerouting}
        if routing:
            plan.update(_routing_plan(common, Path(file)))
        if rerouting:
            plan.update(_rerouting_plan(Path(controller_file), connections))
        return plan

    def run(self, plan: dict[str, Any], common: BenchOptions) -> BenchResult:
        from vnet.bench.failover.run import run_failover

        return run_failover(plan, common)

    def goals(self, result: BenchResult) -> list[Goal]:
        from vnet.bench.failover.goals import reroute_goals
        from vnet.bench.failover.run import dead_interval_ms, worst

        out = []
        bfd = worst(result, "bfd")
        if bfd is not None:
            out.append(
                Goal(
                    f"reachability back within {BFD_GOAL_MS:.0f} ms with BFD (worst run)",
                    bfd <= BFD_GOAL_MS,
                    f"{bfd:.0f} ms",
                )
            )
        ospf, dead = worst(result, "ospf"), dead_interval_ms(result)
        if ospf is not None and dead is not None:
            out.append(
                Goal(
                    f"without BFD within the dead interval, {dead:.0f} ms (worst run)",
                    ospf <= dead,
                    f"{ospf:.0f} ms",
                )
            )
        return out + reroute_goals(result)

    def finish(self, result: BenchResult, plan: dict[str, Any], directory: Path) -> str:
        """The goals' verdicts, appended to report.md and shown on the terminal."""
        lines = [f"goal {g.verdict}: {g.goal}: {g.detail}" for g in self.goals(result)]
        with (directory / "report.md").open("a") as report:
            report.write("\n## Goals\n\n" + "\n".join(f"- {line}" for line in lines) + "\n")
        return "\n".join(lines)

    def headline(self, result: BenchResult) -> str | None:
        from vnet.bench.failover.run import headline

        return headline(result)


def _routing_plan(common: BenchOptions, file: Path) -> dict[str, Any]:
    from vnet.bench.failover.scenario import check_shape, load

    base = load(file)
    check_shape(base)
    if common.duration < 6:
        raise OptionError(
            "--duration",
            "a run needs at least 6 s: 1 before the failure, 2 after the "
            "link is back, and the failure itself",
        )
    return {"file": file, "base": base}


def _rerouting_plan(file: Path, connections: str) -> dict[str, Any]:
    from vnet.bench.failover.reroute import scene_of
    from vnet.bench.failover.scenario import load

    sizes = parse_list(connections, int, "numbers of connections", "--connections")
    if any(not 1 <= n <= MAX_CONNECTIONS for n in sizes):
        raise OptionError("--connections", f"each between 1 and {MAX_CONNECTIONS}: {connections}")
    return {"controller_file": file, "scene": scene_of(load(file)), "sizes": sizes}
