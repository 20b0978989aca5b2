"""vnet bench dataplane: virtual networks against the physical baseline (paper 004, IV-V).

Every path kind carries traffic from end host "src" to end host "dst"; the
virtual kinds use the same addresses (10.9.1.2 -> 10.9.2.2), the physical
baseline the addresses of the underlay link that joins its two hosts:

  physical  two physical-host namespaces joined by one underlay veth
  bridge    a virtual network on one physical host (veth - bridge - veth)
  vxlan     a virtual network across two physical hosts (bridge - VXLAN - underlay - ...)
  vrN       a chain of N VRs on one physical host (bridge shortcuts between hops)
  srv6      an SRv6 connection over the vr3 chain (r1 encapsulates, r3 decapsulates)
  em        paper 001's Table 2 path of examples/em-testbed.yaml: hs -> R1 -> MR1 ->
            MR5 -> MR12 -> MR7 -> MR2 -> R2 -> hd, across two hosts (not by default)
  X-bridged the same path without bridge shortcuts (not by default)

For each kind: UDP at offered loads (throughput, jitter, loss, also per
second), RTT (fping, idle and next to each load), TCP throughput and RTT;
every figure also as a ratio to the baseline measured in the same run.
Kinds are interleaved at every point, so a slow drift of the machine
affects all of them alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from vnet.bench.contract import Benchmark, Defaults, Goal, Option, OptionError
from vnet.bench.options import parse_kinds, parse_list

if TYPE_CHECKING:
    from vnet.bench.progress import BenchOptions
    from vnet.bench.results import BenchResult

BASELINE = "physical"
DATAPLANE_KINDS = ("physical", "bridge", "vxlan", "vr1", "vr2", "vr4", "srv6")
KNOWN_KINDS = (
    *DATAPLANE_KINDS,
    "native",
    "native4",
    "em",
    "bridge-bridged",
    "vr1-bridged",
    "vr2-bridged",
    "vr4-bridged",
)
MAX_RATE_SIZES = (1500, 100)  # IP packet sizes, as paper 001's Table 2
QUICK_MAX_RATE_SIZES = (100,)  # a smoke run: the size where the per-packet cost shows
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
            help="Path kinds, comma-separated (also: native, native4, em, bridge-bridged, "
            "vr1-bridged, vr2-bridged, vr4-bridged).",
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
        Option(
            "--max-rate-sizes",
            "max_rate_sizes",
            metavar="BYTES,...",
            help="IP packet sizes for the loss-bounded maximum rate, one way and both ways "
            "(paper 001, Table 2); 'none' skips it [default: "
            + ",".join(map(str, MAX_RATE_SIZES))
            + "; with --quick: "
            + ",".join(map(str, QUICK_MAX_RATE_SIZES))
            + "].",
        ),
    )

    def plan(
        self,
        common: BenchOptions,
        kinds: str = ",".join(DATAPLANE_KINDS),
        loads: str | None = None,
        unlimited: bool = True,
        length: int = UDP_LENGTH,
        max_rate_sizes: str | None = None,
    ) -> dict[str, Any]:
        chosen = parse_kinds(kinds, KNOWN_KINDS)
        if BASELINE not in chosen:
            chosen.insert(0, BASELINE)
        load_list: Sequence[float] = (
            parse_list(loads, float, "loads", "--loads")
            if loads is not None
            else list(QUICK_LOADS if common.quick else DEFAULT_LOADS)
        )
        return {
            "kinds": chosen,
            "loads": load_list,
            "with_max": unlimited,
            "length": length,
            "max_rate_sizes": parse_max_rate_sizes(max_rate_sizes, common.quick),
        }

    def run(self, plan: dict[str, Any], common: BenchOptions) -> BenchResult:
        from vnet.bench.dataplane.maxrate import MaxRatePlan
        from vnet.bench.dataplane.run import run_dataplane

        sizes = plan.pop("max_rate_sizes")
        # A smoke run: one unpaced and one paced run per point; a real run bisects.
        max_rate = MaxRatePlan(sizes, 1 if common.quick else 4, 1) if sizes else None
        return run_dataplane(common, **plan, max_rate=max_rate)

    def goals(self, result: BenchResult) -> Sequence[Goal]:
        from vnet.bench.dataplane.summary import check_goals

        return check_goals(result)


def parse_max_rate_sizes(text: str | None, quick: bool) -> list[int]:
    """--max-rate-sizes: IP packet sizes in 64..1500, or none; the default per --quick."""
    if text is None:
        return list(QUICK_MAX_RATE_SIZES if quick else MAX_RATE_SIZES)
    if text.strip().lower() in ("", "none"):
        return []
    sizes = parse_list(text, int, "packet sizes", "--max-rate-sizes")
    if any(s < 64 or s > 1500 for s in sizes):
        raise OptionError("--max-rate-sizes", "IP packet sizes must be within 64..1500")
    return sizes
