"""vnet bench qos: guaranteed bandwidth, measured the way paper 001's Table 3 does.

Against a topology shaped like examples/em-testbed.yaml (tenants alpha and beta,
hs -> R1 ... R2 -> hd and b-hs -> b-R1 ... b-R2 -> b-hd, the two disjoint core
paths), run as lab "qos":

1. Accuracy. For each rate R (1, 10, 100, 500, 1000, 2000 Mbit/s): a connection
   hs -> hd over the first core path with bandwidth R (its shaper: R1's HTB class),
   and beta's first network with bandwidth R (its shaper: the class on the
   underlay link). TCP and UDP are offered at 1.2 R. Achieved is read two ways:
   the layer-2 bytes the shaper's class let through while the flow was steady,
   and the payload iperf3's receiver got. fping measures the delay meanwhile,
   through the same shaper. The underlay link is raised to 10 Gbit/s in this
   phase so that the 2 Gbit/s row fits (em-testbed's link is 1 Gbit/s).
2. Isolation. The file's link rate; alpha and beta each get 30% of it guaranteed
   on their first network (both may borrow up to the link rate); beta sends
   exactly its guarantee while alpha floods, with UDP at 1.2x the link rate and
   with 4 greedy TCP streams (GSO makes TCP cheap per byte, so it fills the link
   where the machine cannot forward the UDP flood). Both flows end at the router
   across the link (MR1, b-MR1), the fewest hops that still cross it. Beta's
   share of its guarantee, its loss and delay are compared with beta alone;
   how full the link really was (alpha + beta against its rate) is logged.
3. Path switch. UDP at 100 and 900 Mbit/s through a connection; halfway the
   path moves to the other core path (`vnet lab up` of the edited topology:
   new SIDs, next hops resolved, one `ip route replace`, old SIDs after a
   drain). Lost datagrams are counted from iperf3's sequence numbers, next to
   runs without a switch, and separately what the receiving host dropped
   itself (a full socket buffer: a receiver starved of CPU, not the network).

The shaper's rate is read from its own counter, polled every 50 ms, over the
part of the run where the counter moves (vnet.lab.shaping).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from vnet.bench.contract import Benchmark, Defaults, Option
from vnet.bench.options import parse_list

if TYPE_CHECKING:
    from vnet.bench.progress import BenchOptions
    from vnet.bench.results import BenchResult

EXAMPLE = Path(__file__).resolve().parents[4] / "examples" / "em-testbed.yaml"
RATES = [1, 10, 100, 500, 1000, 2000]
QUICK_RATES = [10, 100, 1000]


class QosBench(Benchmark):
    name = "qos"
    help = "Guaranteed bandwidth: shaper accuracy (paper 001, Table 3), isolation, path switch."
    defaults = Defaults(repeat=2, quick_repeat=1, duration=5.0, quick_duration=1.0)
    options = (
        Option(
            "--file",
            "file",
            path=True,
            default=EXAMPLE,
            show_default=True,
            help="Topology shaped like the paper's testbed.",
        ),
        Option(
            "--rates",
            "rates",
            metavar="MBIT,...",
            help=f"Shaper rates in Mbit/s [default: {','.join(map(str, RATES))}; "
            f"--quick: {','.join(map(str, QUICK_RATES))}].",
        ),
    )

    def plan(
        self, common: BenchOptions, file: Path = EXAMPLE, rates: str | None = None
    ) -> dict[str, Any]:
        from vnet.bench.qos.scenario import check_shape, load_topology

        chosen = (
            parse_list(rates, float, "rates", "--rates")
            if rates
            else list(QUICK_RATES if common.quick else RATES)
        )
        base = load_topology(Path(file))
        check_shape(base)
        return {
            "file": Path(file),
            "rates": [int(r) if r == int(r) else r for r in chosen],
            "base": base,
            "rows": [],  # Table 3's rows, filled in by the run
        }

    def run(self, plan: dict[str, Any], common: BenchOptions) -> BenchResult:
        from vnet.bench.qos.run import run_qos

        return run_qos(plan["base"], plan["file"], plan["rates"], common, plan["rows"])

    def finish(self, result: BenchResult, plan: dict[str, Any], directory: Path) -> str:
        """table3.md next to the report; shown on the terminal too."""
        from vnet.bench.qos.table import table3

        table = table3(plan["rows"])
        (directory / "table3.md").write_text(table)
        return table
