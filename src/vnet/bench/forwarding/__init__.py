"""vnet bench forwarding: packets per second through routers, and their CPU cost (paper 003).

trafgen blasts one small UDP frame from end host "src" towards "dst"; "dst"
drops every IPv4 packet at its interface's ingress hook (a two-instruction
eBPF program in tc, where nft's netdev ingress would sit: nftables is not
installed here), and the received rate is read from that interface's
counters. Path kinds (see vnet.bench.dataplane):

  physical  no router: two physical hosts on one underlay veth
  native    a native router: the middle of three physical hosts forwards
  native4   four native routers in a row (what vr4 is compared with)
  bridge    no router: a virtual network on one host (what every VR hop adds too)
  vrN       a chain of N vnet VRs (with vnet's bridge shortcuts, the default)
  X-bridged the same path with the shortcuts taken out: every frame crosses the
            bridges (vnet before issue 14)

Per packet CPU cost: the ticks of the sender's CPUs (/proc/stat; veth hands
packets on within the sending CPU, so the whole path runs there) divided by
packets received; with perf, also split by kernel function group, in the
spirit of paper 003's Fig. 1.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from vnet.bench.contract import Benchmark, Defaults, Goal, Option, OptionError
from vnet.bench.dataplane import parse_max_rate_sizes
from vnet.bench.options import parse_kinds, parse_list

if TYPE_CHECKING:
    from vnet.bench.progress import BenchOptions
    from vnet.bench.results import BenchResult

BASELINE = "native"
FORWARDING_KINDS = ("physical", "native", "bridge", "vr1", "vr2", "vr4")
KNOWN_KINDS = (
    "physical",
    "native",
    "native4",
    "bridge",
    "vxlan",
    "em",
    "vr1",
    "vr2",
    "vr4",
    "bridge-bridged",
    "vr1-bridged",
    "vr2-bridged",
    "vr4-bridged",
)
DEFAULT_SIZES = (64, 128, 512, 1500)  # Ethernet frame with FCS, as RFC 2544 counts
QUICK_SIZES = (64,)
DEFAULT_CORES = (1, 2)


class ForwardingBench(Benchmark):
    name = "forwarding"
    help = "Packets per second through a native router, a vnet VR and chains of VRs."
    defaults = Defaults(repeat=4, quick_repeat=2, duration=2.0, quick_duration=0.5)
    tools = ("trafgen", "fping", "iperf3")
    options = (
        Option(
            "--kinds",
            "kinds",
            default=",".join(FORWARDING_KINDS),
            show_default=True,
            help="Path kinds, comma-separated (also: native4, vxlan, em, bridge-bridged, "
            "vr1-bridged, vr2-bridged, vr4-bridged).",
        ),
        Option(
            "--sizes",
            "sizes",
            metavar="BYTES,...",
            help="Frame sizes with FCS; the first is also measured with every core count "
            "[default: "
            + ",".join(map(str, DEFAULT_SIZES))
            + "; with --quick: "
            + ",".join(map(str, QUICK_SIZES))
            + "].",
        ),
        Option(
            "--cores",
            "cores",
            default=",".join(map(str, DEFAULT_CORES)),
            show_default=True,
            metavar="N,...",
            help="Sender core counts (trafgen --cpus).",
        ),
        Option(
            "--max-rate-sizes",
            "max_rate_sizes",
            metavar="BYTES,...",
            help="IP packet sizes for the loss-bounded maximum rate (paper 001, Table 1: "
            "<= 0.1 percent loss, one way and both ways); 'none' skips it [default: 1500,100; "
            "with --quick: 100].",
        ),
        Option(
            "--profile",
            "profile",
            "flag",
            negative="--no-profile",
            help="Split CPU per packet by kernel function group with perf "
            "[default: when perf works].",
        ),
    )

    def plan(
        self,
        common: BenchOptions,
        kinds: str = ",".join(FORWARDING_KINDS),
        sizes: str | None = None,
        cores: str = ",".join(map(str, DEFAULT_CORES)),
        profile: bool | None = None,
        max_rate_sizes: str | None = None,
    ) -> dict[str, Any]:
        size_list: Sequence[int] = (
            parse_list(sizes, int, "frame sizes", "--sizes")
            if sizes is not None
            else list(QUICK_SIZES if common.quick else DEFAULT_SIZES)
        )
        if any(s < 64 or s > 1518 for s in size_list):
            raise OptionError("--sizes", "frame sizes must be within 64..1518")
        core_list = parse_list(cores, int, "core counts", "--cores")
        usable = len(os.sched_getaffinity(0))
        if any(c < 1 or c > usable for c in core_list):
            raise OptionError("--cores", f"core counts must be within 1..{usable}")
        return {
            "kinds": parse_kinds(kinds, KNOWN_KINDS),
            "sizes": size_list,
            "cores": core_list,
            "profile": profile,
            "max_rate_sizes": parse_max_rate_sizes(max_rate_sizes, common.quick),
        }

    def run(self, plan: dict[str, Any], common: BenchOptions) -> BenchResult:
        from vnet.bench.dataplane.maxrate import MaxRatePlan
        from vnet.bench.forwarding.measure import run_forwarding
        from vnet.bench.forwarding.profile import perf_works

        with_profile = perf_works() if plan["profile"] is None else plan["profile"]
        sizes = plan["max_rate_sizes"]
        # A smoke run: one unpaced and one paced run per point; a real run bisects.
        max_rate = (
            MaxRatePlan(sizes, 1 if common.quick else 4, 1 if common.quick else 2)
            if sizes
            else None
        )
        return run_forwarding(
            common, plan["kinds"], plan["sizes"], plan["cores"], with_profile, max_rate
        )

    def goals(self, result: BenchResult) -> Sequence[Goal]:
        from vnet.bench.forwarding.summary import check_goals

        return check_goals(result)
