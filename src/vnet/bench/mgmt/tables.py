"""The head of the report: tables shaped like paper 000's Tables I-IV, its figures next to ours.

Paper figures are from its Sec. IV (XenServer, Vyatta VRs; snmpd, netconfd and
a Java REST server per interface). Ours come from one vnet agent serving all
four interfaces, at the first --active point (0 VRs active by default).
"""

from __future__ import annotations

import itertools
from pathlib import Path

from vnet.bench.mgmt.plan import INTERFACES
from vnet.bench.report import MARKDOWN_NAME, format_number
from vnet.bench.results import BenchResult
from vnet.bench.stats import Summary

OPS3 = ("create", "retrieve", "remove")
PAPER_NAME = {"SNMPv2c": "SNMPv2c", "SNMPv3": "SNMPv3", "NETCONF": "NETCONF", "RESTCONF": "RWS"}
# Table I, average response time [s]: create, retrieve, remove
PAPER_TIME_S = {
    "SNMPv2c": (1.02, 0.03, 3.41),
    "SNMPv3": (1.12, 0.08, 3.53),
    "NETCONF": (1.08, 0.04, 3.48),
    "RESTCONF": (1.06, 0.16, 3.48),
}
# Table II, maximum CPU time [ms]
PAPER_CPU_MS = {
    "SNMPv2c": (7.7, 9.3, 8.3),
    "SNMPv3": (8.7, 7.3, 9.3),
    "NETCONF": (8.0, 2.0, 8.3),
    "RESTCONF": (13.0, 14.0, 11.0),
}
# Table III, average memory [MB]
PAPER_MEMORY_MB = {
    "SNMPv2c": (3.2, 3.2, 3.2),
    "SNMPv3": (3.5, 3.5, 3.5),
    "NETCONF": (3.9, 3.8, 3.8),
    "RESTCONF": (73.1, 73.2, 73.1),
}
# Table IV, best first, as read from the paper's text (Sec. IV-C/D); "=": statistically equal
PAPER_RANKING = {
    "response time": (
        "SNMPv2c, RWS, NETCONF, SNMPv3",
        "SNMPv2c, NETCONF, SNMPv3, RWS",
        "SNMPv2c, RWS = NETCONF, SNMPv3",
    ),
    "CPU time": (
        "SNMPv2c, NETCONF, SNMPv3, RWS",
        "NETCONF, SNMPv3, SNMPv2c, RWS",
        "SNMPv2c, SNMPv3, NETCONF, RWS",
    ),
    "memory": ("SNMPv2c, SNMPv3, NETCONF, RWS",) * 3,
    "network usage": (
        "SNMPv2c, SNMPv3, RWS, NETCONF",
        "SNMPv2c, SNMPv3, RWS, NETCONF",
        "SNMPv2c, SNMPv3, RWS, NETCONF",
    ),
}


def _summary(result: BenchResult, metric: str, series: str, x: object) -> Summary | None:
    m = result.get(metric, series, x)
    return m.summary() if m is not None and m.samples else None


def _first_active(result: BenchResult) -> int:
    return int(result.parameters.get("active", [0])[0])


def _cell(s: Summary | None, stat: str = "mean") -> str:
    if s is None:
        return "n/a"
    value = getattr(s, stat)
    if stat == "mean" and s.ci95 is not None:
        return f"{format_number(value)} ± {format_number(s.ci95)}"
    return format_number(value)


def _table(title: str, head: list[str], rows: list[list[str]]) -> list[str]:
    return [
        f"**{title}**",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
        *("| " + " | ".join(r) + " |" for r in rows),
        "",
    ]


def table_one(result: BenchResult) -> list[str]:
    x = _first_active(result)
    rows = []
    for iface in INTERFACES:
        ours = [_cell(_summary(result, f"time_{op}", iface, x)) for op in OPS3]
        paper = [format_number(v * 1000) for v in PAPER_TIME_S[iface]]
        rows.append([iface, *ours, *paper])
    head = ["interface", *(f"{op} [ms]" for op in OPS3), *(f"paper {op} [ms]" for op in OPS3)]
    return _table(
        f"Table I: mean response time ({x} VRs active; the paper's RWS is RESTCONF here)",
        head,
        rows,
    )


def table_two(result: BenchResult) -> list[str]:
    x = _first_active(result)
    rows = []
    for iface in INTERFACES:
        ours = [_cell(_summary(result, f"cpu_{op}", iface, x), "max") for op in OPS3]
        mean = [_cell(_summary(result, f"cpu_{op}", iface, x)) for op in OPS3]
        rows.append([iface, *ours, *mean, *map(format_number, PAPER_CPU_MS[iface])])
    head = ["interface", *(f"max {op}" for op in OPS3), *(f"mean {op}" for op in OPS3)]
    head += [f"paper max {op}" for op in OPS3]
    return _table("Table II: the agent's CPU time per operation [ms]", head, rows)


def table_three(result: BenchResult) -> list[str]:
    x = _first_active(result)
    rows = []
    for iface in INTERFACES:
        ours = _cell(_summary(result, "memory", iface, x))
        paper = " / ".join(map(format_number, PAPER_MEMORY_MB[iface]))
        rows.append([iface, ours, paper])
    for series in ("netconfd", "snmpd"):
        s = _summary(result, "server_memory", series, "idle, all front-ends, no session")
        if s is not None:
            rows.append([f"baseline {series} (idle)", _cell(s), ""])
    head = [
        "interface",
        "VmRSS [MiB] (one agent for all four)",
        "paper create / retrieve / remove [MB]",
    ]
    return _table("Table III: memory", head, rows)


def rank(values: dict[str, Summary]) -> str:
    """Best (lowest mean) first; '=' joins neighbours whose 95% CIs overlap."""
    order = sorted(values, key=lambda k: values[k].mean)
    text = order[0]
    for prev, cur in itertools.pairwise(order):
        a, b = values[prev], values[cur]
        same = a.high is not None and b.low is not None and b.low <= a.high
        text += (" = " if same else ", ") + cur
    return text


def _ranking(result: BenchResult, metric: str, x: object) -> str:
    found = {i: s for i in INTERFACES if (s := _summary(result, metric, i, x)) is not None}
    return rank(found) if found else "n/a"


def table_four(result: BenchResult) -> list[str]:
    x = _first_active(result)
    sources = {
        "response time": ("time_{op}", x),
        "CPU time": ("cpu_{op}", x),
        "network usage": ("bytes_{op}", 1),
    }
    rows = []
    for what, (pattern, at) in sources.items():
        ours = [_ranking(result, pattern.format(op=op), at) for op in OPS3]
        rows.append([what, *ours])
        rows.append([f"paper: {what}", *PAPER_RANKING[what]])
    rows.append(["memory", *("one process serves all four",) * 3])
    rows.append(["paper: memory", *PAPER_RANKING["memory"]])
    head = ["metric (best first)", *OPS3]
    return _table(
        "Table IV: ranking from the measured means (network: 1 VR, new session)", head, rows
    )


def figure_ten(result: BenchResult) -> list[str]:
    lines: list[str] = []
    for op in OPS3:
        xs = sorted({m.x for m in result.measurements_of(f"bytes_{op}")}, key=float)
        rows = []
        for n in xs:
            cells = [
                f"{_cell(_summary(result, f'bytes_{op}', i, n), 'p50')} / "
                f"{_cell(_summary(result, f'bytes_{op}_kept', i, n), 'p50')}"
                for i in INTERFACES
            ]
            rows.append([str(n), *cells])
        if rows:
            title = f"Fig. 10 ({op}): bytes on the wire, new session / session kept (p50)"
            lines += _table(title, ["VRs per op", *INTERFACES], rows)
    return lines


def floors(result: BenchResult) -> list[str]:
    rows = []
    for metric, label in (("netconf_floor_ms", "NETCONF"), ("snmp_floor_ms", "SNMP")):
        for m in result.measurements_of(metric):
            if m.samples:
                cpu = _summary(result, metric.replace("_ms", "_cpu_ms"), m.series, m.x)
                rows.append([label, str(m.x), m.series, _cell(m.summary()), _cell(cpu)])
    return _table(
        "Baselines in the same run",
        ["protocol", "operation", "server", "time [ms]", "CPU [ms]"],
        rows,
    )


def goal_table(result: BenchResult) -> list[str]:
    from vnet.bench.mgmt.goals import goals

    rows = [[g.goal, g.detail, g.verdict] for g in goals(result)]
    return _table(
        "Goals of issue 16 (p50; a loaded machine)", ["goal", "measured", "verdict"], rows
    )


def lead(result: BenchResult) -> list[str]:
    return [
        "## Paper 000, Tables I-IV, next to this run",
        "",
        "Paper: XenServer 6.2, Vyatta VRs, one server process per interface; its times include "
        "booting and shutting down a VM. Here: one vnet agent, VRs are namespaces; a loaded "
        "shared machine (figures are upper bounds). ± is the 95 % CI half-width.",
        "",
        *table_one(result),
        *table_two(result),
        *table_three(result),
        *table_four(result),
        *figure_ten(result),
        *floors(result),
        *goal_table(result),
    ]


def lead_report(result: BenchResult, directory: Path) -> str | None:
    """Put the paper-shaped tables at the head of report.md, after its title block."""
    path = directory / MARKDOWN_NAME
    text = path.read_text(encoding="utf-8")
    head, sep, rest = text.partition("\n## ")
    path.write_text(head + "\n" + "\n".join(lead(result)) + sep + rest, encoding="utf-8")
    return None


def headline(result: BenchResult) -> str | None:
    x = _first_active(result)
    parts = []
    for iface in INTERFACES:
        s = _summary(result, "time_create", iface, x)
        if s is not None:
            parts.append(f"{iface} {format_number(s.p50)}")
    return "create p50 [ms]: " + ", ".join(parts) if parts else None
