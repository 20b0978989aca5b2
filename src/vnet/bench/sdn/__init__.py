"""vnet bench sdn: OpenFlow control-plane latency of Open vSwitch, direct and through a hypervisor.

perfbench (the Rust crate in ``perfbench/``) plays the tenant controllers and the
data plane; Open vSwitch's userspace datapath is the switch. Each setup of the
paper's Table 1 (paper 002, "perfbench"; docs/papers.md) runs three times: switch-only ("ovs":
the switch connects straight to the tenant controllers), through perfbench's
pass-through proxy ("proxy": the switch connects to the proxy, which connects
on to the controllers) and through the slicing hypervisor ("hv", the crate in
``hypervisor/``: one switch connection, one slice per tenant), with
TCP_NODELAY off ("AGG", Nagle aggregates) and on ("ND") where the paper varies
it. Then the hypervisor against the switch alone: PACKET_OUT at rising rates,
a noisy tenant, and FLOW_MOD+BARRIER (see plan.py); goals in goals.py.

Everything runs inside one network namespace made for the run: ovsdb-server and
ovs-vswitchd (private OVS_RUNDIR/DBDIR/LOGDIR/SYSCONFDIR in a temp folder), the
proxy and perfbench, with a veth pair whose one end is the bridge's port 1 and
whose other end is perfbench's data-plane interface (AF_PACKET). Daemons are
stopped by the PIDs they wrote, and deleting the namespace removes the veth
pair and the bridge's tap device.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vnet.bench.contract import BenchError, Benchmark, Defaults, Goal, Option, OptionError

if TYPE_CHECKING:
    from vnet.bench.progress import BenchOptions
    from vnet.bench.results import BenchResult

DEFAULT_TENANTS = [2, 5, 10, 20]
QUICK_TENANTS = [2, 20]
DESCRIPTION = (__doc__ or "").split("\n\n")[0]


class SdnBenchError(BenchError):
    """A setup step failed; the message says which and why."""


def parse_tenants(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise OptionError("--tenants", f"{text!r} is not a comma list of integers") from None
    if not values or any(not 1 <= v <= 100 for v in values):
        raise OptionError("--tenants", f"{text!r}: each tenant count must be within 1..100")
    return values


class SdnBench(Benchmark):
    name = "sdn"
    help = (
        "OpenFlow control latency of Open vSwitch, switch-only, through a pass-through "
        "proxy and through the slicing hypervisor.\n\n"
        "Table 1 of paper 002 (docs/papers.md): PACKET_IN at 10k-40k/s and port statistics at "
        "5k-8k/s for one tenant, PACKET_OUT at 60k/s in total for 2-20 tenants, with "
        "TCP_NODELAY off (AGG) and on (ND); then PACKET_OUT at 10k-50k/s over the most "
        "tenants, a noisy tenant at 10x its rate limit, and FLOW_MOD+BARRIER, through "
        "the hypervisor and the switch alone. Runs that fall behind their load are "
        "marked overloaded. The first and last sixth of each run (5 s of 30) are cut. "
        "Needs root (network namespace, AF_PACKET)."
    )
    defaults = Defaults(repeat=1, quick_repeat=1, duration=30.0, quick_duration=1.0)
    options = (
        Option(
            "--tenants",
            "tenants",
            metavar="N,N,...",
            help="Tenant counts for the PACKET_OUT runs [default: 2,5,10,20; --quick: 2,20].",
        ),
        Option(
            "--of",
            "version",
            "choice",
            choices=("1.0", "1.3"),
            default="1.3",
            show_default=True,
            help="OpenFlow version.",
        ),
    )

    def plan(
        self, common: BenchOptions, tenants: str | None = None, version: str = "1.3"
    ) -> dict[str, Any]:
        chosen = (
            parse_tenants(tenants)
            if tenants
            else (QUICK_TENANTS if common.quick else DEFAULT_TENANTS)
        )
        return {"tenants": chosen, "version": version, "runs": []}

    def run(self, plan: dict[str, Any], common: BenchOptions) -> BenchResult:
        from vnet.bench.sdn.run import run_sdn

        return run_sdn(common, plan["tenants"], plan["version"], plan["runs"])

    def goals(self, result: BenchResult) -> Sequence[Goal]:
        from vnet.bench.sdn.goals import check_goals

        return check_goals(result)

    def headline(self, result: BenchResult) -> str:
        verdicts = [g.verdict for g in self.goals(result)]
        counts = ", ".join(f"{verdicts.count(v)} {v}" for v in ("met", "MISSED", "not judged"))
        return f"sdn goals: {counts} (see the report's Goals and the overloaded points)"

    def finish(self, result: BenchResult, plan: dict[str, Any], directory: Path) -> str:
        from vnet.bench.sdn.figures import write_extras

        goals = self.goals(result)
        write_extras(plan["runs"], directory, goals)
        return "\n".join(f"goal {g.verdict}: {g.goal}: {g.detail}" for g in goals)
