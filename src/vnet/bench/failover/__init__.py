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
  does not recover until the link returns.

The link comes back 2 s before the end of each run (iperf3 needs a path to report), so
the static baseline's outage is the whole time the link was down. Between runs the
benchmark waits until pc3's replies come along the direct path again (their TTL), so
every run starts from the same state.
Connections the manager reroutes are not part of this benchmark yet.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from vnet.bench.contract import Benchmark, Defaults, Goal, Option, OptionError

if TYPE_CHECKING:
    from vnet.bench.progress import BenchOptions
    from vnet.bench.results import BenchResult

EXAMPLE = Path(__file__).resolve().parents[4] / "examples" / "ospf-triangle.yaml"
VARIANTS = ("bfd", "ospf", "static")
BFD_GOAL_MS = 1000.0


class FailoverBench(Benchmark):
    name = "failover"
    help = "Tenant outage when an underlay link fails: OSPF with and without BFD, static."
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
            help="Which of bfd, ospf, static to measure.",
        ),
    )

    def plan(
        self, common: BenchOptions, file: Path = EXAMPLE, variants: str = ",".join(VARIANTS)
    ) -> dict[str, Any]:
        from vnet.bench.failover.scenario import check_shape, load

        chosen = [v.strip() for v in variants.split(",") if v.strip()]
        unknown = sorted(set(chosen) - set(VARIANTS))
        if unknown or not chosen:
            raise OptionError(
                "--variants",
                f"unknown: {', '.join(unknown) or '(none given)'}; "
                f"choose from {', '.join(VARIANTS)}",
            )
        base = load(Path(file))
        check_shape(base)
        if common.duration < 6:
            raise OptionError(
                "--duration",
                "a run needs at least 6 s: 1 before the failure, 2 after the "
                "link is back, and the failure itself",
            )
        return {"file": Path(file), "base": base, "variants": chosen}

    def run(self, plan: dict[str, Any], common: BenchOptions) -> BenchResult:
        from vnet.bench.failover.run import run_failover

        return run_failover(plan["base"], plan["file"], plan["variants"], common)

    def goals(self, result: BenchResult) -> list[Goal]:
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
        return out

    def finish(self, result: BenchResult, plan: dict[str, Any], directory: Path) -> str:
        """The goals' verdicts, appended to report.md and shown on the terminal."""
        lines = [f"goal {g.verdict}: {g.goal}: {g.detail}" for g in self.goals(result)]
        with (directory / "report.md").open("a") as report:
            report.write("\n## Goals\n\n" + "\n".join(f"- {line}" for line in lines) + "\n")
        return "\n".join(lines)

    def headline(self, result: BenchResult) -> str | None:
        from vnet.bench.failover.run import headline

        return headline(result)
