"""vnet bench netconf: NETCONF latency and memory of the agent, against yuma123's netconfd.

Everything runs inside one network namespace made for the run
(``vnet-nb<hex>-host``, the agent's "physical host"): a real ``vnet agent run``
serving its default front-ends, and, for comparison, yuma123's ``netconfd``
behind a private ``sshd`` (own configuration, host key, port, PID file and a
client key pair, all in a temporary folder). The client is ncclient (TICK
lowered to 1 ms), one open session per server, connected from inside the
namespace; all traffic stays on that namespace's loopback.

Measured (paper 000, Table I gives 1.08 s / 0.04 s / 3.48 s for NETCONF):

- one VR (2 interfaces) created, retrieved (``get``, subtree filter on the
  router, state included) and deleted, one edit-config or get each;
- one edit-config creating ``--bulk`` VRs (and one deleting them);
- ``--vrs`` VRs loaded into both servers, then ``get-config`` of all of them,
  alternating between the two servers so that machine load hits both alike;
- VmRSS and VmHWM (``/proc/PID/status``) of the agent and of netconfd.

netconfd is started with ``--no-startup --target=running --superuser=root
--module=<vnet-router YANG>``; both netconfd and sshd run in a private mount
namespace (netconfd writes ``~/.yuma`` of the real user, so a temporary folder is
bind-mounted on /root; sshd needs /run/sshd, so it gets a private tmpfs on /run).
Nothing on the machine outside the namespace and the temporary folder is
touched; every process is stopped by PID, and the namespace and folder are
removed at the end, also after a failure.
"""

from __future__ import annotations

import signal
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from vnet.bench.contract import BenchError, Benchmark, Defaults, Goal, Option

if TYPE_CHECKING:
    from vnet.bench.netconf.config import Plan
    from vnet.bench.progress import BenchOptions
    from vnet.bench.results import BenchResult


class NetconfBenchError(BenchError):
    """A setup step failed; the message says which and why."""


def _count(flag: str, dest: str, help: str, default: int | None = None) -> Option:
    return Option(
        flag,
        dest,
        "int",
        default=default,
        minimum=1,
        maximum=5000,
        help=help,
        show_default=default is not None,
    )


def _terminate(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


class NetconfBench(Benchmark):
    name = "netconf"
    help = """NETCONF latency and memory of the agent, and get-config against yuma123's netconfd.

    Starts its own agent (and netconfd behind a private sshd) in a namespace made for
    the run. --repeat is the number of samples of each bulk measurement (one
    edit-config of --bulk VRs, get-config of --vrs VRs); --ops the number of single-VR
    create/retrieve/remove cycles. --duration is not used.
    """
    defaults = Defaults(repeat=10, quick_repeat=3, duration=1.0, quick_duration=2.0)
    options = (
        _count("--vrs", "vrs", "VRs loaded for get-config [default: 1000; 100 with --quick]."),
        _count("--bulk", "bulk", "VRs created by the one big edit-config.", 100),
        _count(
            "--ops",
            "ops",
            "Create/retrieve/remove cycles of one VR [default: 200; 20 with --quick].",
        ),
        _count("--chunk", "chunk", "VRs per edit-config when loading the --vrs VRs.", 100),
        Option(
            "--no-netconfd",
            "no_netconfd",
            "flag",
            help="Skip the comparison with yuma123 netconfd.",
        ),
    )

    def plan(
        self,
        common: BenchOptions,
        vrs: int | None = None,
        bulk: int = 100,
        ops: int | None = None,
        chunk: int = 100,
        no_netconfd: bool = False,
    ) -> tuple[Plan, str | None]:
        """The plan, and why the netconfd comparison cannot run here (None: it can)."""
        from vnet.bench.netconf.config import Plan
        from vnet.bench.netconf.netconfd import netconfd_missing

        why_not = None if no_netconfd else netconfd_missing()
        plan = Plan(
            ops=ops if ops is not None else (20 if common.quick else 200),
            bulk=bulk,
            vrs=vrs if vrs is not None else (100 if common.quick else 1000),
            chunk=chunk,
            repeat=common.repeat,
            netconfd=not no_netconfd and why_not is None,
        )
        return plan, why_not

    def run(self, plan: tuple[Plan, str | None], common: BenchOptions) -> BenchResult:
        from ncclient import NCClientError

        from vnet.bench.netconf.run import run_netconf_bench
        from vnet.lab.sandbox import SandboxError

        # SIGTERM (a CI timeout, kill PID) unwinds like Ctrl-C, so the cleanup still runs.
        previous = signal.signal(signal.SIGTERM, _terminate)
        try:
            result = run_netconf_bench(plan[0], common)
        except SandboxError as err:
            raise BenchError(str(err)) from None
        except NCClientError as err:
            raise BenchError(f"NETCONF client: {type(err).__name__}: {err}") from None
        finally:
            signal.signal(signal.SIGTERM, previous)
        if plan[1]:
            result.note(f"netconfd comparison skipped: {plan[1]}")
        return result

    def goals(self, result: BenchResult) -> Sequence[Goal]:
        from vnet.bench.netconf.goals import goals

        return goals(result, result.parameters["vrs"], result.parameters["bulk"])
