"""The NETCONF benchmark's metrics, goals and how to read them."""

from __future__ import annotations

import os
from typing import Any

from vnet.bench.contract import Goal
from vnet.bench.netconf.config import Plan
from vnet.bench.netconf.netconfd import NETCONFD_PORT, Netconfd
from vnet.bench.results import BenchResult
from vnet.bench.stats import percentile


def declare_metrics(result: BenchResult, plan: Plan) -> None:
    result.declare(
        "vr_op_latency",
        "ms",
        x_label="operation on one VR",
        plot="bar",
        description="One VR with 2 interfaces: create = one edit-config, retrieve = get with a "
        "subtree filter on the router (state included), remove = one edit-config deleting it. "
        "Paper 000, Table I (NETCONF): create 1.08 s, retrieve 0.04 s, remove 3.48 s.",
    )
    result.declare(
        "bulk_edit",
        "s",
        x_label="one edit-config",
        plot="bar",
        description=f"One edit-config creating {plan.bulk} VRs (2 interfaces each), and one "
        "deleting them again.",
    )
    result.declare(
        "get_config",
        "ms",
        x_label="VRs in the datastore",
        plot="bar",
        description=f"get-config of the running datastore holding {plan.vrs} VRs (the same data "
        "in both servers), samples alternating between the servers.",
    )
    result.declare(
        "load",
        "s",
        x_label="",
        plot="bar",
        description=f"Loading the {plan.vrs} VRs with edit-configs of {plan.chunk} VRs, and "
        "removing them (sum over the edit-configs; one sample per run).",
    )
    result.declare(
        "memory",
        "MiB",
        x_label="",
        plot="bar",
        description="VmRSS and VmHWM from /proc/PID/status: the vnet agent process, and the "
        "netconfd process (its sshd not counted).",
    )


def goals(result: BenchResult, vrs: int, bulk: int) -> list[Goal]:
    """The agent's goals, judged from its samples (series "vnet")."""
    found = []

    def check(metric: str, x: Any, what: str, goal: float, unit: str, stat: str = "p50") -> None:
        m = result.get(metric, "vnet", x)
        name = f"{what} <= {goal:g} {unit}"
        if m is None or not m.samples:
            found.append(Goal(name, None, "no samples"))
            return
        value = percentile(m.samples, 50) if stat == "p50" else max(m.samples)
        found.append(Goal(name, value <= goal, f"{value:.3g} {unit} ({stat})"))

    check("vr_op_latency", "create", "create one VR", 20, "ms")
    check("vr_op_latency", "retrieve", "retrieve one VR", 3, "ms")
    check("vr_op_latency", "remove", "remove one VR", 20, "ms")
    suffix = "" if vrs == 1000 else f" (goal is for 1000 VRs; measured with {vrs})"
    check("get_config", vrs, f"get-config of {vrs} VRs{suffix}", 200, "ms")
    suffix = "" if bulk == 100 else f" (goal is for 100 VRs; measured with {bulk})"
    check("bulk_edit", f"create {bulk} VRs", f"one edit-config creating {bulk} VRs{suffix}", 2, "s")
    check("memory", "VmHWM (peak of the run)", "agent VmHWM", 80, "MiB", stat="max")
    return found


def goal_notes(result: BenchResult, plan: Plan) -> list[str]:
    """One line per goal of the agent: figure measured, met or not."""
    return [
        f"goal {g.goal}: {g.detail}"
        + ("" if g.met is None else f", {'met' if g.met else 'NOT met'}")
        for g in goals(result, plan.vrs, plan.bulk)
    ]


def context_notes(result: BenchResult, plan: Plan, netconfd: Netconfd) -> list[str]:
    """How to read the figures: the ratio asked for, the reference's setup, the machine."""
    lines = []
    ours, theirs = (result.get("get_config", s, plan.vrs) for s in ("vnet", "netconfd"))
    if ours and theirs and ours.samples and theirs.samples:
        a, b = ours.summary(), theirs.summary()
        lines.append(
            f"get-config of {plan.vrs} VRs, vnet / netconfd: {a.mean / b.mean:.2f} (means "
            f"{a.mean:.1f} / {b.mean:.1f} ms), {a.p50 / b.p50:.2f} (p50s)"
        )
    if plan.netconfd:
        flags = " ".join(netconfd.command()[1:])
        lines.append(
            f"netconfd (yuma123) ran as `netconfd {flags}` with the unchanged vnet-router "
            f"module, behind a private sshd on port {NETCONFD_PORT} (root, key pair made for "
            "the run) whose netconf subsystem is netconf-subsystem; its replies are indented "
            "(its default) and its get-config also returns an empty nacm container"
        )
    lines.append(
        "remove times end with the reply; the kernel finishes tearing down deleted "
        "namespaces asynchronously after it"
    )
    start = result.parameters.get("load_average_at_start") or []
    if start:
        lines.append(
            f"1-minute load average {start[0]:.1f} at the start on {os.cpu_count()} CPUs: "
            "figures from a busy machine are upper bounds"
        )
    return lines
