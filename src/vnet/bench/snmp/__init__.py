"""vnet bench snmp: the SNMP front-end's latency, v2c against v3 authPriv.

A real ``vnet agent run`` (NETCONF and SNMP) runs in a namespace made for the
run (``vnet-sb<hex>-host``); all traffic stays on that namespace's loopback.
Measured (paper 000 reports SNMPv2c create 1.02 s, retrieve 0.03 s):

- create: one SET that creates a VR and its interface (createAndGo on a
  vnetVrConfigEntry and a vnetVrIfConfigEntry, 7 variable bindings); the
  answer comes after the datastore commit, i.e. with the VR in the kernel.
  Each is followed by a timed destroy (one SET).
- getbulk: one GETBULK (non-repeaters 0, max-repetitions 1) returning the 13
  objects of one VR: its configuration and state rows and its interface's
  binding, state and octet counters.
- walk: with ``--vrs`` VRs configured (made in one NETCONF edit-config), a
  GETBULK walk (max-repetitions 50) of vnetVrConfigTable, i.e. 3 x N objects.

Client: pysnmp's asyncio API in this process (one SnmpEngine kept for the
whole run, so v3 engine discovery and key localisation happen once, as in a
long-running manager), on a thread that entered the namespace. The Net-SNMP
tools (``snmpset``, ``snmpbulkget``, ``snmpbulkwalk``) are measured too, as
the ``*_cli`` metrics: a fork/exec, MIB-less start and, for v3, discovery and
key localisation per call are part of those figures. Series ``v2c`` is the
baseline, so every table shows v3 authPriv (HMAC-SHA-96, AES-128) as a ratio
to v2c. Both client and agent are Python (pysnmp) in the in-process figures:
its BER and crypto costs are on both sides of the ratio.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from vnet.bench.contract import BenchError, Benchmark, Defaults, Goal, Option

if TYPE_CHECKING:
    from vnet.bench.progress import BenchOptions
    from vnet.bench.results import BenchResult


class SnmpBenchError(BenchError):
    pass


class SnmpBench(Benchmark):
    name = "snmp"
    help = "SNMP create, GETBULK and walk latency, v2c against v3 authPriv (paper 000)."
    # --duration is accepted like everywhere else, but nothing here runs for a set time
    defaults = Defaults(repeat=3, quick_repeat=1, duration=1.0, quick_duration=1.0)
    options = (
        Option(
            "--vrs",
            "vrs",
            "int",
            minimum=2,
            maximum=5000,
            help="VRs configured for the walk [default: 1000; 200 with --quick].",
        ),
        Option(
            "--ops",
            "ops",
            "int",
            minimum=1,
            maximum=1000,
            help="Operations per series and repeat [default: 20; 5 with --quick].",
        ),
    )

    def plan(
        self, common: BenchOptions, vrs: int | None = None, ops: int | None = None
    ) -> dict[str, Any]:
        return {
            "vrs": vrs or (200 if common.quick else 1000),
            "ops": ops or (5 if common.quick else 20),
        }

    def run(self, plan: dict[str, Any], common: BenchOptions) -> BenchResult:
        from vnet.bench.snmp.run import run_snmp

        return run_snmp(common, plan["vrs"], plan["ops"])

    def goals(self, result: BenchResult) -> Sequence[Goal]:
        from vnet.bench.snmp.run import goals

        return goals(result)
