"""vnet bench dataplane: virtual networks against the physical baseline (paper 004, IV-V).

Every path kind carries traffic from end host "src" to end host "dst"; the
virtual kinds use the same addresses (10.9.1.2 -> 10.9.2.2), the physical
baseline the addresses of the underlay link that joins its two hosts:

  physical  two physical-host namespaces joined by one underlay veth
  bridge    a virtual network on one physical host (veth - bridge - veth)
  vxlan     a virtual network across two physical hosts (bridge - VXLAN - underlay - ...)
  vrN       a chain of N VRs on one physical host (a bridge between each hop)
  srv6      an SRv6 connection: a hook, skipped until the model has connections

For each kind: UDP at offered loads (throughput, jitter, loss, also per
second), RTT (fping, idle and next to each load), TCP throughput and RTT;
every figure also as a ratio to the baseline measured in the same run.
Kinds are interleaved at every point, so a slow drift of the machine
affects all of them alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from vnet.bench.contract import Benchmark, Defaults, Goal, Option
from vnet.bench.options import parse_kinds, parse_list

if TYPE_CHECKING:
    from vnet.bench.progress import BenchOptions
    from vnet.bench.results import BenchResult

BASELINE = "physical"
DATAPLANE_KINDS = ("physical", "bridge", "vxlan", "vr1", "vr2", "vr4", "srv6")
KNOWN_KINDS = (*DATAPLANE_KINDS, "native")
DEFAULT_LOADS = (32, 100, 200, 400, 600, 800, 1000)  # Mbit/s, as paper 004's Fig. 7
QUICK_LOADS = (100,)
UDP_LENGTH = 1400  # fits every kind's MTU (1450 behind VXLAN), so all carry equal datagrams


class DataplaneBench(Benchmark):
    name = "dataplane"
    help = "Virtual networks against the physical baseline: UDP, RTT and TCP per path kind."
    defaults = Defaults(repeat=4, quick_repeat=2, duration=2.0, quick_duration=1.0)
    tools = ("iperf3", "fping")
    options = (
        Option(
            "--kinds",
            "kinds",
            default=",".join(DATAPLANE_KINDS),
            show_default=True,
            help="Path kinds, comma-separated (also: native).",
        ),
        Option(
            "--loads",
            "loads",
            metavar="MBIT,...",
            help="Offered UDP loads in Mbit/s [default: "
            + ",".join(map(str, DEFAULT_LOADS))
            + "; with --quick: "
            + ",".join(map(str, QUICK_LOADS))
            + "].",
        ),
        Option(
            "--unlimited",
            "unlimited",
            "flag",
            default=True,
            negative="--no-unlimited",
            show_default=True,
            help="Also UDP with no rate limit: the machine's maximum.",
        ),
        Option(
            "--length",
            "length",
            "int",
            default=UDP_LENGTH,
            minimum=64,
            maximum=1422,
            show_default=True,
            help="UDP datagram payload in bytes (at most 1422 fits VXLAN's MTU).",
        ),
    )

    def plan(
        self,
        common: BenchOptions,
        kinds: str = ",".join(DATAPLANE_KINDS),
        loads: str | None = None,
        unlimited: bool = True,
        length: int = UDP_LENGTH,
    ) -> dict[str, Any]:
        chosen = parse_kinds(kinds, KNOWN_KINDS)
        if BASELINE not in chosen:
            chosen.insert(0, BASELINE)
        load_list: Sequence[float] = (
            parse_list(loads, float, "loads", "--loads")
            if loads is not None
            else list(QUICK_LOADS if common.quick else DEFAULT_LOADS)
        )
        return {"kinds": chosen, "loads": load_list, "with_max": unlimited, "length": length}

    def run(self, plan: dict[str, Any], common: BenchOptions) -> BenchResult:
        from vnet.bench.dataplane.measure import run_dataplane

        return run_dataplane(common, **plan)

    def goals(self, result: BenchResult) -> Sequence[Goal]:
        from vnet.bench.dataplane.summary import check_goals

        return check_goals(result)
