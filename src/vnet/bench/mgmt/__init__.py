"""vnet bench mgmt: paper 000's evaluation in one run, over all four management interfaces.

One real ``vnet agent run`` (NETCONF, RESTCONF and SNMP front-ends) in a
namespace made for the run, and in the same namespace the baselines: yuma123
netconfd behind a private sshd (vnet.bench.netconf.netconfd) and Net-SNMP
snmpd serving IF-MIB (vnet.bench.mgmt.snmpd). Clients: pysnmp (SNMPv2c and
SNMPv3 authPriv), ncclient (NETCONF over SSH), httpx through vnet.client
(RESTCONF over HTTPS).

Measured, as in the paper's Sec. IV:

- create / start / retrieve / remove cycles of one VR (``--cycles``, 30 by
  default) with 0..N VRs already active (``--active``): response time, the
  agent's CPU time per operation (/proc/PID/stat and schedstat deltas) and its
  memory (VmRSS after the operation): Tables I-III, Fig. 7-9;
- bytes on the loopback per operation, with and without the session's
  set-up, for 1..30 VRs per operation (``--per-op``): Fig. 10;
- the NETCONF floor against netconfd: the same cycle, and ``--load`` VRs
  loaded in edit-configs of 100, then get-config and retrieve with them
  (the phases of vnet.bench.netconf, run here as a part);
- the SNMP floor against snmpd: GETBULK of one row's 13 objects and a walk of
  a table of as many rows (IF-MIB over port-less bridges against
  VNET-ROUTER-MIB's VR table);
- Table IV, the ranking, computed from the measured means.

The report leads with tables shaped like the paper's, its figures next to ours.
"""

from __future__ import annotations

import signal
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vnet.bench.contract import BenchError, Benchmark, Defaults, Goal, Option

if TYPE_CHECKING:
    from vnet.bench.mgmt.plan import Plan
    from vnet.bench.progress import BenchOptions
    from vnet.bench.results import BenchResult


class MgmtBenchError(BenchError):
    """A step of the management benchmark failed; the message says which and why."""


def _terminate(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


class MgmtBench(Benchmark):
    name = "mgmt"
    help = """Paper 000's evaluation: SNMPv2c, SNMPv3, NETCONF and RESTCONF against one agent.

    Create/start/retrieve/remove cycles with response time, the agent's CPU time and
    memory, bytes on the wire with and without session set-up, sweeps over active VRs
    and VRs per operation, the ranking of Table IV, and the baselines netconfd
    (NETCONF) and snmpd (SNMP) in the same run. --repeat is the number of samples of
    each bulk and per-operation-sweep point; --duration is not used.
    """
    defaults = Defaults(repeat=3, quick_repeat=1)
    tools = ("ip",)
    options = (
        Option(
            "--cycles",
            "cycles",
            "int",
            minimum=2,
            maximum=1000,
            help="Create/start/retrieve/remove cycles per point [default: 30; 4 with --quick].",
        ),
        Option(
            "--active",
            "active",
            metavar="LIST",
            help="VRs active before the cycles, e.g. 0,6,100, at most 10000 [default: "
            "0,2,6,30,100; 0,5 with --quick].",
        ),
        Option(
            "--per-op",
            "per_op",
            metavar="LIST",
            help="VRs per operation for the bytes sweep, 1..30 [default: 1,2,5,10,20,30; "
            "1,3 with --quick].",
        ),
        Option(
            "--load",
            "load",
            "int",
            minimum=10,
            maximum=5000,
            help="VRs loaded for get-config against netconfd [default: 1000; 30 with --quick].",
        ),
        Option("--no-baselines", "no_baselines", "flag", help="Skip netconfd and snmpd."),
    )

    def plan(self, common: BenchOptions, **options: Any) -> Plan:
        from vnet.bench.mgmt.plan import make_plan

        return make_plan(common, **options)

    def run(self, plan: Plan, common: BenchOptions) -> BenchResult:
        from ncclient import NCClientError

        from vnet.bench.mgmt.run import run_mgmt
        from vnet.client import ClientError, ConnectError
        from vnet.lab.sandbox import SandboxError

        previous = signal.signal(signal.SIGTERM, _terminate)
        try:
            return run_mgmt(plan, common)
        except (SandboxError, ClientError, ConnectError) as err:
            raise BenchError(str(err)) from None
        except NCClientError as err:
            raise BenchError(f"NETCONF client: {type(err).__name__}: {err}") from None
        finally:
            signal.signal(signal.SIGTERM, previous)

    def goals(self, result: BenchResult) -> Sequence[Goal]:
        from vnet.bench.mgmt.goals import goals

        return goals(result)

    def finish(self, result: BenchResult, plan: Plan, directory: Path) -> str | None:
        from vnet.bench.mgmt.tables import lead_report

        return lead_report(result, directory)

    def headline(self, result: BenchResult) -> str | None:
        from vnet.bench.mgmt.tables import headline

        return headline(result)
