"""The agent benchmark's goals (issues 11 and 17), judged from the samples alone.

A goal set for a size (1000 VRs, 10k hosts, 10k VRs) is judged at another size only
when it is a ratio (NACM's overhead), with the size said; a goal in seconds at a
size not reached is "not judged", since a smaller run meets it trivially.
"""

from __future__ import annotations

from collections.abc import Callable

from vnet.bench.agent import confirmed, connection, largemsg, nacm, restart, topology
from vnet.bench.contract import Goal
from vnet.bench.results import BenchResult
from vnet.bench.stats import percentile

CONNECTION_MS, CONFIRMED_MS, NACM_PERCENT = 15.0, 5.0, 10.0
RESTART_VRS, RESTART_S = 10000, 20.0
TOPOLOGY_HOSTS, TOPOLOGY_S = 10000, 5.0  # "a few seconds"
GET_BESIDE_EDIT_S = 1.0  # the stall before the fix: 6.2 s for a 50 MB edit


def p50(result: BenchResult, metric: str, x: str, series: str = "vnet") -> float | None:
    m = result.get(metric, series, x)
    return percentile(m.samples, 50) if m is not None and m.samples else None


def _connection(result: BenchResult) -> list[Goal]:
    name = f"one connection's pieces configured, p50 <= {CONNECTION_MS:g} ms"
    value = p50(result, connection.METRIC, connection.ADD)
    if value is None:
        return [Goal(name, None, "no samples")]
    return [Goal(name, value <= CONNECTION_MS, f"{value:.1f} ms")]


def _confirmed(result: BenchResult) -> list[Goal]:
    found = []
    for kind, base in (("confirmed", "plain"), ("confirm", "noop")):
        name = f"{kind} commit over a {base} one, p50 <= +{CONFIRMED_MS:g} ms"
        a, b = p50(result, confirmed.METRIC, kind), p50(result, confirmed.METRIC, base)
        if a is None or b is None:
            found.append(Goal(name, None, "no samples"))
            continue
        found.append(Goal(name, a - b <= CONFIRMED_MS, f"{a - b:+.2f} ms ({a:.1f} vs {b:.1f})"))
    return found


def _nacm(result: BenchResult) -> list[Goal]:
    vrs = result.parameters.get("nacm_vrs")
    size = "" if vrs == 1000 else f" (goal is for 1000 VRs; measured with {vrs})"
    found = []
    for x in (nacm.FIRST, nacm.CACHED):
        name = f"NACM with 100 rules adds <= {NACM_PERCENT:g} % to get-config, {x}{size}"
        a, b = (p50(result, nacm.METRIC, x, s) for s in (nacm.RULES, nacm.NO_NACM))
        if a is None or b is None:
            found.append(Goal(name, None, "no samples"))
            continue
        extra = 100 * (a / b - 1)
        detail = f"{extra:+.1f} % (p50 {a:.1f} vs {b:.1f} ms)"
        found.append(Goal(name, extra <= NACM_PERCENT, detail))
    return found


def _restart(result: BenchResult) -> list[Goal]:
    vrs = result.parameters.get("restart_vrs") or 0
    name = f"restart with {RESTART_VRS} VRs to a NETCONF answer <= {RESTART_S:g} s"
    m = result.get(restart.METRIC, "vnet", restart.ANSWER)
    if m is None or not m.samples:
        return [Goal(name, None, "no samples")]
    worst = max(m.samples)
    if vrs < RESTART_VRS:
        return [Goal(name, None, f"{worst:.2f} s (max) with {vrs} VRs only")]
    return [Goal(name, worst <= RESTART_S, f"{worst:.2f} s (max) with {vrs} VRs")]


def _large_message(result: BenchResult) -> list[Goal]:
    mb = result.parameters.get("megabytes")
    name = f"another session's <get> during a {mb} MB edit <= {GET_BESIDE_EDIT_S:g} s (max)"
    m = result.get(largemsg.GET_METRIC, "vnet", largemsg.DURING)
    if m is None or not m.samples:
        return [Goal(name, None, "no <get> overlapped the edit")]
    worst = max(m.samples) / 1000
    return [Goal(name, worst <= GET_BESIDE_EDIT_S, f"{worst:.3f} s (max of {len(m.samples)})")]


def _topology(result: BenchResult) -> list[Goal]:
    hosts = result.parameters.get("hosts") or 0
    name = f"parse and check a topology of {TOPOLOGY_HOSTS} hosts <= {TOPOLOGY_S:g} s CPU"
    parse, check = (p50(result, topology.METRIC, x) for x in (topology.PARSE, topology.CHECK))
    if parse is None or check is None:
        return [Goal(name, None, "no samples")]
    detail = f"{parse + check:.2f} s (parse {parse:.2f} + check {check:.2f}) with {hosts} hosts"
    if hosts < TOPOLOGY_HOSTS:
        return [Goal(name, None, detail)]
    return [Goal(name, parse + check <= TOPOLOGY_S, detail)]


def _topology_file(result: BenchResult) -> list[Goal]:
    hosts = result.parameters.get("hosts") or 0
    name = f"read a topology file of {TOPOLOGY_HOSTS} hosts <= {TOPOLOGY_S:g} s CPU"
    value = p50(result, topology.METRIC, topology.FILE)
    if value is None:
        return [Goal(name, None, "no samples")]
    detail = f"{value:.2f} s with {hosts} hosts"
    return [Goal(name, value <= TOPOLOGY_S if hosts >= TOPOLOGY_HOSTS else None, detail)]


def _topologies(result: BenchResult) -> list[Goal]:
    return _topology(result) + _topology_file(result)


JUDGES: dict[str, Callable[[BenchResult], list[Goal]]] = {
    "connection": _connection,
    "confirmed": _confirmed,
    "nacm": _nacm,
    "restart": _restart,
    "large-message": _large_message,
    "topology": _topologies,
}


def goals(result: BenchResult) -> list[Goal]:
    """The goals of the parts the run measured."""
    parts = result.parameters.get("parts") or list(JUDGES)
    return [g for part in parts for g in JUDGES[part](result)]
