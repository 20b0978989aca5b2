"""vnet bench resources: an end host limited to a share of a core, sending with iperf3
at full speed, against an unlimited one (issue 14's goal: 0.5 of a core sends 0.5x).

See measure.py for the set-up. The goal presumes that the unlimited sender
keeps one core busy; on a machine too loaded to give it one, the goal is not
judged and the report says how much CPU each sender got. UDP with 64-byte
datagrams is the default: its sender pays for every packet itself. A TCP
sender over a veth mostly waits for the receiving side (measured here: 17 %
of a core at 6.4 Gbit/s), so a limit of half a core does not bind it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from statistics import fmean
from typing import TYPE_CHECKING, Any

from vnet.bench.contract import Benchmark, Defaults, Goal, Option, OptionError

if TYPE_CHECKING:
    from vnet.bench.progress import BenchOptions
    from vnet.bench.results import BenchResult

METRICS = {
    # name: (unit, description)
    "send rate": ("Mbit/s", "What each sender sent in one run."),
    "sender CPU": ("cores", "CPU time the sender's group used per second of the run."),
    "ratio": ("", "Limited over unlimited send rate, from adjacent runs."),
}
# "0.5x +/- 5 %" read as within 5 % of the unlimited rate: 0.45 .. 0.55 for cpu 0.5
TOLERANCE = 0.05
# below this the unlimited sender did not have its core: the goal's premise fails
FULL_CORE = 0.9


class ResourcesBench(Benchmark):
    name = "resources"
    help = "An end host limited to --cpu of a core sending with iperf3, against an unlimited one."
    defaults = Defaults(repeat=5, quick_repeat=1, duration=5.0, quick_duration=2.0)
    tools = ("iperf3",)
    options = (
        Option(
            "--cpu", "cpu", "float", default=0.5, minimum=0.01, maximum=1.0, show_default=True,
            help="The limited sender's share of one core.",
        ),
        Option(
            "--cpuset", "cpuset", default=None, metavar="CPUS",
            help="Also pin the limited sender to these cores (e.g. 0).",
        ),
        Option(
            "--protocol", "protocol", "choice", default="udp", choices=("udp", "tcp"),
            show_default=True,
            help="UDP 64-byte datagrams (the sender's CPU is the bottleneck), or TCP bulk.",
        ),
    )  # fmt: skip

    def plan(self, common: BenchOptions, **options: Any) -> dict[str, Any]:
        from vnet.model.resources import parse_cpu_list

        if options.get("cpuset") is not None:
            try:
                options["cpuset"] = parse_cpu_list(options["cpuset"])
            except ValueError as err:
                raise OptionError("--cpuset", str(err)) from None
        return options

    def run(self, plan: dict[str, Any], common: BenchOptions) -> BenchResult:
        from vnet.bench.progress import BenchProgress
        from vnet.bench.resources.measure import Lab, send
        from vnet.bench.results import BenchResult

        result = BenchResult.start("resources", parameters={**common.as_parameters(), **plan})
        for metric, (unit, description) in METRICS.items():
            result.declare(metric, unit, description=description)
        progress = BenchProgress("resources", total=common.repeat, quiet=common.quiet)
        with progress, Lab(plan["cpu"], plan["cpuset"]):
            for i in range(common.repeat):
                progress.log(f"run {i + 1}/{common.repeat}: unlimited, then limited ...")
                pair = [send(s, common.duration, plan["protocol"]) for s in PAIR]
                for run in pair:
                    result.record("send rate", run.sender, run.mbit)
                    result.record("sender CPU", run.sender, run.cores)
                result.record("ratio", "limited/unlimited", pair[1].mbit / pair[0].mbit)
                progress.advance()
        return result

    def goals(self, result: BenchResult) -> Sequence[Goal]:
        cpu = float(result.parameters["cpu"])
        ratio, free_cpu = (
            _mean(result, "ratio", "limited/unlimited"),
            _mean(result, "sender CPU", "unlimited"),
        )
        goal = f"limited to {cpu:g} core sends {cpu:g}x +/- {TOLERANCE:g} of unlimited"
        if ratio is None or free_cpu is None:
            return [Goal(goal, None, "no samples")]
        limited_cpu = _mean(result, "sender CPU", "limited") or 0.0
        detail = (
            f"ratio {ratio:.3f}; the unlimited sender used {free_cpu:.2f} cores, "
            f"the limited one {limited_cpu:.2f} of its {cpu:g}"
        )
        if free_cpu < FULL_CORE:
            return [Goal(goal, None, f"{detail}: the machine is too loaded to judge it")]
        return [Goal(goal, abs(ratio - cpu) <= TOLERANCE, detail)]

    def finish(self, result: BenchResult, plan: dict[str, Any], directory: Path) -> str:
        """The goal's verdict, appended to report.md and shown on the terminal."""
        lines = [f"goal {g.verdict}: {g.goal}: {g.detail}" for g in self.goals(result)]
        with (directory / "report.md").open("a") as report:
            report.write("\n## Goal\n\n" + "\n".join(f"- {line}" for line in lines) + "\n")
        return "\n".join(lines)

    def headline(self, result: BenchResult) -> str:
        def fig(metric: str, series: str) -> str:
            value = _mean(result, metric, series)
            return "-" if value is None else f"{value:.3g}"

        return (
            f"send rate unlimited {fig('send rate', 'unlimited')} Mbit/s "
            f"({fig('sender CPU', 'unlimited')} cores), limited to {result.parameters['cpu']:g} "
            f"core {fig('send rate', 'limited')} Mbit/s ({fig('sender CPU', 'limited')} cores); "
            f"ratio {fig('ratio', 'limited/unlimited')}"
        )


PAIR = ("unlimited", "limited")


def _mean(result: BenchResult, metric: str, series: str) -> float | None:
    m = result.get(metric, series)
    return fmean(m.samples) if m is not None and m.samples else None
