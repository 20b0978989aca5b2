"""The agent's goals (issue 16), judged from the samples of one `vnet bench mgmt` run."""

from __future__ import annotations

from vnet.bench.contract import Goal
from vnet.bench.mgmt.plan import INTERFACES
from vnet.bench.results import BenchResult

IDLE = "idle, all front-ends, no session"


def _p50(result: BenchResult, metric: str, series: str, x: object) -> float | None:
    m = result.get(metric, series, x)
    return m.summary().p50 if m is not None and m.samples else None


def _at_most(name: str, value: float | None, goal: float, unit: str) -> Goal:
    if value is None:
        return Goal(name, None, "no samples")
    return Goal(name, value <= goal, f"{value:.3g} {unit}")


def _ratio(result: BenchResult, metric: str, x: object, goal: float, name: str) -> Goal:
    ours, theirs = (_p50(result, metric, s, x) for s in ("vnet", "netconfd"))
    if ours is None or theirs is None or theirs <= 0:
        return Goal(name, None, "no samples of both servers")
    r = ours / theirs
    return Goal(name, r <= goal, f"{r:.2f}x ({ours:.3g} / {theirs:.3g} ms, p50)")


def latency_goals(result: BenchResult, x: int) -> list[Goal]:
    found = []
    for iface in INTERFACES:
        for op, goal in (("create", 10.0), ("remove", 10.0)):
            value = _p50(result, f"time_{op}", iface, x)
            found.append(_at_most(f"{op} p50 over {iface} <= {goal:g} ms", value, goal, "ms"))
        if iface in ("SNMPv2c", "SNMPv3", "NETCONF"):
            value = _p50(result, "time_retrieve", iface, x)
            found.append(_at_most(f"retrieve p50 over {iface} <= 2 ms", value, 2.0, "ms"))
        value = _p50(result, "cpu_create", iface, x)
        found.append(_at_most(f"agent CPU per create over {iface} <= 5 ms", value, 5.0, "ms"))
    return found


def goals(result: BenchResult) -> list[Goal]:
    x = int(result.parameters.get("active", [0])[0])
    load = int(result.parameters.get("load", 1000))
    note = "" if load == 1000 else f" (goal is for 1000 VRs; measured with {load})"
    found = latency_goals(result, x)
    found.append(
        _ratio(result, "get_config", load, 1.0, f"get-config of {load} VRs <= 1.0x netconfd{note}")
    )
    found.append(
        _ratio(
            result,
            "vr_op_latency",
            f"retrieve, {load} VRs loaded",
            1.5,
            f"retrieve with {load} VRs loaded <= 1.5x netconfd{note}",
        )
    )
    chunks = -(-load // 100)
    loaded = _p50(result, "load", "vnet", f"create {load} VRs ({chunks} edit-configs)")
    found.append(
        _at_most(f"loading {load} VRs in {chunks} edit-configs <= 8 s{note}", loaded, 8.0, "s")
    )
    idle = _p50(result, "server_memory", "agent", IDLE)
    found.append(_at_most("agent RSS idle, NETCONF+RESTCONF+SNMP <= 64 MiB", idle, 64.0, "MiB"))
    full = _p50(result, "server_memory", "agent", f"{load} VRs loaded")
    found.append(_at_most(f"agent RSS with {load} VRs <= 96 MiB{note}", full, 96.0, "MiB"))
    return found


__all__ = ["goals"]
