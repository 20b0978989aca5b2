"""The metrics of `vnet bench mgmt` and the result they go into."""

from __future__ import annotations

import os

from vnet.bench.mgmt.plan import INTERFACES, OPERATIONS, Plan
from vnet.bench.progress import BenchOptions
from vnet.bench.results import BenchResult, tool_version

WHAT = {
    "create": "create one VR (one interface, admin state down)",
    "start": "start it (admin state up)",
    "retrieve": "retrieve it with its state",
    "remove": "remove it",
}


def start_result(plan: Plan, bench: BenchOptions) -> BenchResult:
    return BenchResult.start(
        "mgmt",
        parameters={
            **bench.as_parameters(),
            "cycles": plan.cycles,
            "active": list(plan.active),
            "per_op": list(plan.per_op),
            "load": plan.load,
            "baselines": plan.baselines,
            "interfaces": {
                "SNMPv2c": "pysnmp manager API, one engine per session",
                "SNMPv3": "pysnmp, authPriv HMAC-SHA-96 + AES-128",
                "NETCONF": "ncclient over SSH (TICK 1 ms)",
                "RESTCONF": "vnet.client RestconfClient (httpx) over HTTPS, keep-alive",
            },
            "bytes": "loopback tx bytes of the sandbox namespace (frames incl. 14-byte header)",
            "load_average_at_start": list(os.getloadavg()),
            "machine": f"{os.cpu_count()} CPUs shared with other jobs: figures are upper bounds",
        },
        tools={"snmpd": tool_version(["/usr/sbin/snmpd", "-v"])},
        description="Paper 000, Sec. IV, over SNMPv2c, SNMPv3, NETCONF and RESTCONF against one "
        "vnet agent, with yuma123 netconfd and Net-SNMP snmpd as baselines in the same run.",
    )


def declare(result: BenchResult, plan: Plan) -> None:
    series = ", ".join(INTERFACES)
    for op in OPERATIONS:
        result.declare(
            f"time_{op}",
            "ms",
            x_label="VRs active before the cycle",
            plot="line",
            description=f"Response time to {WHAT[op]}; {plan.cycles} cycles per point; {series}.",
        )
        result.declare(
            f"cpu_{op}",
            "ms",
            x_label="VRs active before the cycle",
            plot="line",
            description=f"The agent's CPU time to {WHAT[op]}: the sum over its threads of "
            "/proc/PID/task/*/schedstat run time, read before and after the operation.",
        )
    result.declare(
        "cpu_user_ms",
        "ms",
        x_label="operation",
        plot="bar",
        description="The agent's user time per operation: /proc/PID/stat utime ticks summed "
        "over all cycles of the operation, divided by their number (one tick is 10 ms).",
    )
    result.declare(
        "cpu_system_ms",
        "ms",
        x_label="operation",
        plot="bar",
        description="As cpu_user_ms, for the system time (stime).",
    )
    result.declare(
        "memory",
        "MiB",
        x_label="VRs active",
        plot="line",
        description="The agent's VmRSS after each retrieve (all front-ends in one process).",
    )
    result.declare(
        "server_memory",
        "MiB",
        x_label="",
        plot="bar",
        description="VmRSS of the agent and of the baselines (netconfd without its sshd; snmpd).",
    )
    for op in ("create", "retrieve", "remove"):
        result.declare(
            f"bytes_{op}",
            "B",
            x_label="VRs per operation",
            plot="line",
            description=f"Bytes on the loopback to {op} N VRs in a new session: its set-up "
            "(TCP, SSH or TLS handshakes, hello; SNMPv3 discovery) and close included (Fig. 10).",
        )
        result.declare(
            f"bytes_{op}_kept",
            "B",
            x_label="VRs per operation",
            plot="line",
            description=f"Bytes on the loopback to {op} N VRs in a session already open.",
        )
    result.declare(
        "netconf_floor_ms",
        "ms",
        x_label="operation on one VR",
        plot="bar",
        description="The same cycle over NETCONF against the agent and against yuma123 netconfd "
        "(same module; netconfd holds the configuration only, no kernel, no state).",
    )
    result.declare(
        "netconf_floor_cpu_ms",
        "ms",
        x_label="operation on one VR",
        plot="bar",
        description="Server CPU time (schedstat) per operation of netconf_floor_ms.",
    )
    result.declare(
        "snmp_floor_ms",
        "ms",
        x_label="",
        plot="bar",
        description="GETBULK of one row's 13 objects, and a walk (max-repetitions 50) of one "
        "column: the agent's VR table against snmpd's IF-MIB ifTable with as many rows.",
    )
    result.declare(
        "snmp_floor_cpu_ms",
        "ms",
        x_label="",
        plot="bar",
        description="Server CPU time (schedstat) per request of snmp_floor_ms.",
    )
    result.declare(
        "load",
        "s",
        x_label="",
        plot="bar",
        description=f"Loading {plan.load} VRs over NETCONF in edit-configs of 100 "
        "(vnet.bench.netconf's phase), and removing them.",
    )
    result.declare(
        "get_config",
        "ms",
        x_label="VRs in the datastore",
        plot="bar",
        description=f"get-config of running with {plan.load} VRs, agent and netconfd alternating.",
    )
    result.declare(
        "vr_op_latency",
        "ms",
        x_label="",
        plot="bar",
        description=f"get of one VR (subtree filter) with {plan.load} VRs loaded.",
    )
