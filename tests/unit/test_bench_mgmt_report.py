"""vnet bench mgmt: plan, Table IV's ranking, the paper-shaped report head and the goals."""

from __future__ import annotations

import ipaddress
import re
from collections import Counter
from pathlib import Path

import pytest

from vnet.bench.contract import OptionError
from vnet.bench.mgmt.goals import IDLE, goals
from vnet.bench.mgmt.interfaces import NETWORK, Vr
from vnet.bench.mgmt.metrics import declare, start_result
from vnet.bench.mgmt.phases import (
    ACTIVE_PER_NETWORK,
    CYCLE_FIRST,
    active_networks,
    active_vr,
    fresh,
)
from vnet.bench.mgmt.plan import INTERFACES, MAX_ACTIVE, MAX_PER_OP, OPERATIONS, make_plan
from vnet.bench.mgmt.tables import lead, lead_report, rank
from vnet.bench.progress import BenchOptions
from vnet.bench.results import BenchResult
from vnet.bench.stats import summarize
from vnet.model.bridge_ports import BRIDGE_MAX_PORTS

QUICK = BenchOptions(quick=True, duration=1.0, repeat=1, out=None, json_path=None, quiet=True)


def test_plan_defaults_and_bad_lists() -> None:
    plan = make_plan(QUICK)
    assert (plan.cycles, plan.active, plan.per_op) == (4, (0, 5), (1, 3))
    assert make_plan(QUICK, active="100,0,6,6").active == (0, 6, 100)
    with pytest.raises(OptionError) as err:
        make_plan(QUICK, per_op="0,5")
    assert err.value.option == "--per-op"


def test_rank_joins_overlapping_intervals() -> None:
    values = {
        "NETCONF": summarize([10.0, 10.2, 9.8]),
        "SNMPv2c": summarize([10.1, 10.3, 9.9]),
        "RESTCONF": summarize([20.0, 20.1, 19.9]),
    }
    assert rank(values) == "NETCONF = SNMPv2c, RESTCONF"


def made_up_run() -> BenchResult:
    plan = make_plan(QUICK)
    result = start_result(plan, QUICK)
    declare(result, plan)
    for k, iface in enumerate(INTERFACES):
        for op in OPERATIONS:
            for v in (5.0 + k, 6.0 + k, 7.0 + k):
                result.record(f"time_{op}", iface, v, x=0)
                result.record(f"cpu_{op}", iface, v / 2, x=0)
            result.record("memory", iface, 60.0, x=0)
        for op in ("create", "retrieve", "remove"):
            result.record(f"bytes_{op}", iface, 500.0 * (k + 1), x=1)
            result.record(f"bytes_{op}_kept", iface, 100.0 * (k + 1), x=1)
    result.record("server_memory", "agent", 61.0, x=IDLE)
    result.record("server_memory", "agent", 99.0, x="30 VRs loaded")
    result.record("get_config", "vnet", 3.0, x=30)
    result.record("get_config", "netconfd", 2.0, x=30)
    return result


def test_report_head_has_our_figures_next_to_the_papers() -> None:
    text = "\n".join(lead(made_up_run()))
    assert "| SNMPv2c | 6.000 ± 2.484 |" in text  # Table I: mean of 5, 6, 7 ms
    assert "| 1020 | 30.00 | 3410 |" in text  # the paper's SNMPv2c row, in ms
    assert "| network usage | SNMPv2c, SNMPv3, NETCONF, RESTCONF |" in text
    assert "| 1 | 500.0 / 100.0 | 1000 / 200.0 |" in text  # Fig. 10, new session / kept


def test_lead_report_goes_before_the_first_section(tmp_path: Path) -> None:
    (tmp_path / "report.md").write_text("# vnet bench mgmt\n\nintro\n\n## time_create (ms)\n")
    lead_report(made_up_run(), tmp_path)
    text = (tmp_path / "report.md").read_text()
    assert text.index("Table I") < text.index("## time_create")
    assert text.startswith("# vnet bench mgmt\n\nintro")


def test_goals_judge_each_interface_and_the_ratios() -> None:
    found = {g.goal: g for g in goals(made_up_run())}
    assert found["create p50 over SNMPv2c <= 10 ms"].met is True
    assert found["retrieve p50 over NETCONF <= 2 ms"].met is False
    cpu = found["agent CPU per create over RESTCONF <= 5 ms"]  # half of 8, 9, 10 ms
    assert (cpu.met, cpu.detail) == (True, "4.5 ms")
    ratio = next(g for name, g in found.items() if name.startswith("get-config of 30 VRs"))
    assert ratio.met is False and ratio.detail.startswith("1.50x")
    assert found["agent RSS idle, NETCONF+RESTCONF+SNMP <= 64 MiB"].met is True
    assert next(g for n, g in found.items() if n.startswith("loading")).met is None


def test_each_measured_cycle_creates_a_vr_of_its_own() -> None:
    """A name removed a moment ago is still held by the kernel (see phases.fresh): the
    cycles never reuse one, nor a name or address of the active VRs or of the sweep."""
    lanes, cycles = len(INTERFACES), 1000  # the most --cycles allows
    vrs = [fresh(k, i, lanes) for k in range(cycles) for i in range(lanes)]
    assert len({vr.name for vr in vrs}) == len({vr.ipv4 for vr in vrs}) == cycles * lanes
    others = [active_vr(i) for i in range(MAX_ACTIVE)]
    others += [Vr(CYCLE_FIRST + j) for j in range(MAX_PER_OP + 1)]
    assert not {vr.ipv4 for vr in vrs} & {vr.ipv4 for vr in others}


def test_the_active_vrs_fill_networks_a_bridge_can_hold() -> None:
    """As many active VRs as --active allows: at most ACTIVE_PER_NETWORK per network (with
    the cycles' VR, within a bridge's ports), each address once and in its network, and
    the networks made for them are those they use."""
    vrs = [active_vr(i) for i in range(MAX_ACTIVE)]
    per_network = Counter(vr.network for vr in vrs)
    assert max(per_network.values()) == ACTIVE_PER_NETWORK
    assert per_network[NETWORK] + 1 <= BRIDGE_MAX_PORTS
    assert len({vr.ipv4 for vr in vrs}) == MAX_ACTIVE
    made = dict(
        re.findall(r"<name>(a\d+)</name>.*?<ipv4-prefix>([^<]+)<", active_networks(MAX_ACTIVE))
    )
    assert set(made) == set(per_network) - {NETWORK}
    for vr in vrs:
        if vr.network != NETWORK:
            assert ipaddress.ip_interface(vr.ipv4) in ipaddress.ip_network(made[vr.network])
    assert active_networks(ACTIVE_PER_NETWORK).count("<network>") == 0
