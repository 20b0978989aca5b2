"""vnet bench agent: the management agent's speed goals of issues 11 and 17, in parts.

Each part starts its own `vnet agent run` (NETCONF front-end) in a namespace made for
it (vnet.lab.sandbox) and drives it as a client would (vnet.client, ncclient, or
asyncssh in a process of its own); `topology` runs the model's check in-process.

- connection: one edit adding one SRv6 connection's pieces, one removing it, one
  adding a VR for reference (connection.py);
- confirmed: plain, no-op, confirmed and confirming commits, interleaved (confirmed.py);
- nacm: get-config by the recovery user and by a user with 100 rules (nacm.py);
- restart: an agent restarted with N VRs, to listening, answering and reconciled
  (restart.py);
- large-message: another session's <get> latency during a large edit-config
  (largemsg.py, also used by the integration test of the NETCONF framing);
- topology: parse and check a generated topology of N hosts (topology.py).

Goals (goals.py) are judged from the samples. Every process is stopped by PID and
every namespace removed at the end of its part, also after a failure.
"""

from __future__ import annotations

import signal
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from vnet.bench.contract import Benchmark, Defaults, Goal, Option

if TYPE_CHECKING:
    from vnet.bench.agent.plan import Plan
    from vnet.bench.progress import BenchOptions
    from vnet.bench.results import BenchResult

PART_NAMES = "connection,confirmed,nacm,restart,large-message,topology"


def _count(flag: str, dest: str, help: str, maximum: int) -> Option:
    return Option(flag, dest, "int", minimum=1, maximum=maximum, help=help)


def _terminate(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


class AgentBench(Benchmark):
    name = "agent"
    help = """The agent's goals: SRv6 connection edits, confirmed commit, NACM, restarts, big edits.

    Parts (--parts, default all): connection, confirmed, nacm, restart, large-message,
    topology; each starts its own agent in a namespace made for it. --repeat is the
    number of connection edits, confirmed-commit cycles and NACM rounds; --rounds the
    number of restarts, large edits and topology checks. --duration is not used.
    """
    defaults = Defaults(repeat=50, quick_repeat=5, duration=1.0, quick_duration=1.0)
    options = (
        Option(
            "--parts",
            "parts",
            help=f"Comma-separated parts to run [default: {PART_NAMES}].",
            metavar="LIST",
        ),
        _count("--rounds", "rounds", "Restarts, large edits, topology checks [3; 1 --quick].", 100),
        _count("--nacm-vrs", "nacm_vrs", "VRs get-config reads [1000; 50 with --quick].", 5000),
        Option(
            "--shallow",
            "shallow",
            "flag",
            help="NACM rules on networks instead of rules reaching inside every VR.",
        ),
        _count("--restart-vrs", "restart_vrs", "VRs restarted [1000; 50 with --quick].", 20000),
        _count("--megabytes", "megabytes", "Size of the large edit [50; 5 with --quick].", 500),
        _count("--hosts", "hosts", "Hosts of the topology [10000; 300 with --quick].", 100000),
    )

    def plan(self, common: BenchOptions, **options: Any) -> Plan:
        from vnet.bench.agent.plan import make_plan

        return make_plan(common, **options)

    def run(self, plan: Plan, common: BenchOptions) -> BenchResult:
        from vnet.bench.agent.run import run_agent_bench

        # SIGTERM (a CI timeout, kill PID) unwinds like Ctrl-C, so the cleanup still runs.
        previous = signal.signal(signal.SIGTERM, _terminate)
        try:
            return run_agent_bench(plan, common)
        finally:
            signal.signal(signal.SIGTERM, previous)

    def goals(self, result: BenchResult) -> Sequence[Goal]:
        from vnet.bench.agent.goals import goals

        return goals(result)

    def headline(self, result: BenchResult) -> str | None:
        from vnet.bench.agent.goals import goals

        judged = goals(result)
        met = sum(1 for g in judged if g.met)
        missed = sum(1 for g in judged if g.met is False)
        return f"agent: {met} goal(s) met, {missed} missed, {len(judged) - met - missed} not judged"
