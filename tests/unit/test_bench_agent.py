"""vnet bench agent: the plan from the options, and the goals judged from recorded samples."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from vnet.bench.agent import confirmed, connection, largemsg, nacm, restart, topology
from vnet.bench.agent.goals import goals
from vnet.bench.agent.plan import PARTS, make_plan
from vnet.bench.contract import Goal, OptionError
from vnet.bench.progress import BenchOptions
from vnet.bench.results import BenchResult
from vnet.lab.topology_file import parse_topology_text
from vnet.model.bridge_ports import BRIDGE_MAX_PORTS

QUICK = BenchOptions(True, 1.0, 6, None, None, True)
FULL = BenchOptions(False, 1.0, 50, None, None, True)


def test_quick_plans_every_part_small_and_the_full_run_at_the_goals_sizes() -> None:
    quick, full = make_plan(QUICK), make_plan(FULL)
    assert quick.parts == full.parts == PARTS
    assert (quick.rounds, quick.nacm_vrs, quick.restart_vrs, quick.hosts) == (1, 50, 50, 300)
    assert (full.nacm_vrs, full.hosts, full.megabytes) == (1000, 10000, 50)


def test_parts_are_chosen_by_name_and_run_in_their_own_order() -> None:
    plan = make_plan(QUICK, parts="topology, nacm", hosts=300)
    assert plan.parts == ("nacm", "topology") and plan.hosts == 300


@pytest.mark.parametrize("parts", ["nacm,bogus", ",", "nacm,nacm"])
def test_a_bad_parts_list_names_the_option(parts: str) -> None:
    with pytest.raises(OptionError) as err:
        make_plan(QUICK, parts=parts)
    assert err.value.option == "--parts"


def test_more_connections_than_one_subnet_holds_is_refused() -> None:
    with pytest.raises(OptionError) as err:
        make_plan(BenchOptions(False, 1.0, 251, None, None, True))
    assert err.value.option == "--repeat"


def recorded(**parameters: object) -> BenchResult:
    """A run of every part, samples as a loaded machine gave them."""
    result = BenchResult.start("agent", parameters={"megabytes": 10, **parameters})
    result.add(connection.METRIC, "vnet", [12.0, 14.0, 30.0], x=connection.ADD)
    for kind, ms in (("plain", 20.0), ("noop", 10.0), ("confirmed", 23.0), ("confirm", 17.0)):
        result.add(confirmed.METRIC, "vnet", [ms, ms + 1], x=kind)
    result.add(nacm.METRIC, nacm.NO_NACM, [100.0, 100.0], x=nacm.FIRST)
    result.add(nacm.METRIC, nacm.RULES, [108.0, 108.0], x=nacm.FIRST)
    result.add(nacm.METRIC, nacm.NO_NACM, [10.0], x=nacm.CACHED)
    result.add(nacm.METRIC, nacm.RULES, [12.0], x=nacm.CACHED)
    result.add(restart.METRIC, "vnet", [12.0, 25.0], x=restart.ANSWER)
    result.add(largemsg.GET_METRIC, "vnet", [5.0, 400.0], x=largemsg.DURING)
    result.add(topology.METRIC, "vnet", [1.0], x=topology.PARSE)
    result.add(topology.METRIC, "vnet", [2.5], x=topology.CHECK)
    result.add(topology.METRIC, "vnet", [36.0], x=topology.FILE)
    return result


def verdicts(found: list[Goal]) -> list[bool | None]:
    return [g.met for g in found]


def test_goals_at_the_goals_sizes() -> None:
    result = recorded(nacm_vrs=1000, restart_vrs=10000, hosts=10000)
    found = goals(result)
    # connection 14 ms; confirmed +2.5 ms, confirm +7 ms; NACM +8 %, +20 %; restart
    # 25 s (the worst); 0.4 s beside the edit; topology 3.5 s, its file 36 s
    assert verdicts(found) == [True, True, False, True, False, False, True, True, False]
    assert "+8.0 %" in found[3].detail and "25.00 s" in found[5].detail
    assert "(goal is for 1000 VRs" not in found[3].goal


def test_a_time_goal_at_a_smaller_size_is_not_judged_and_a_ratio_says_its_size() -> None:
    found = goals(recorded(nacm_vrs=50, restart_vrs=50, hosts=1000))
    assert verdicts(found)[5] is None and "with 50 VRs only" in found[5].detail
    assert verdicts(found)[7] is None and "with 1000 hosts" in found[7].detail
    assert verdicts(found)[8] is None
    assert "measured with 50" in found[3].goal and found[3].met is True


def test_only_the_parts_run_are_judged_and_a_part_without_samples_is_not() -> None:
    result = BenchResult.start("agent", parameters={"parts": ["connection", "restart"]})
    found = goals(result)
    assert [g.met for g in found] == [None, None]
    assert all(g.detail == "no samples" for g in found)


def test_goals_survive_the_results_file() -> None:
    result = recorded(nacm_vrs=1000, restart_vrs=10000, hosts=10000)
    again = BenchResult.from_json(result.to_json())
    assert goals(again) == goals(result)


def test_each_commit_kind_takes_the_vr_down_as_often_as_up() -> None:
    changes = [step for i in range(2) for step in confirmed.cycle_steps(i) if step[1]]
    assert sorted(changes) == sorted(
        [("plain", "down"), ("plain", "up"), ("confirmed", "up"), ("confirmed", "down")]
    )


def test_nacm_has_100_rules_in_both_mixes() -> None:
    for shallow in (False, True):
        assert nacm.rules(shallow).count("<rule>") == 100


def test_the_generated_topology_file_holds_what_the_model_checks() -> None:
    data = topology.topology_data(20)
    topo = parse_topology_text(topology.yaml_text(data), Path("t.yaml"))
    assert len(topo.hosts) == 20 and len(topo.links) == 19 and len(topo.endhosts) == 20


class Chunks:
    """What an SSH channel hands over: the bytes in pieces, then end of file."""

    def __init__(self, data: bytes, size: int):
        self.pieces = [data[i : i + size] for i in range(0, len(data), size)]

    async def read(self, n: int) -> bytes:
        return self.pieces.pop(0) if self.pieces else b""


def test_replies_are_framed_also_when_the_end_marker_is_split() -> None:
    session = largemsg.Session(None, Chunks(b"<a/>]]>]]><b/>]]>]]>", 3))

    async def both() -> list[bytes]:
        return [await session.reply(), await session.reply()]

    assert asyncio.run(both()) == [b"<a/>", b"<b/>"]
    with pytest.raises(EOFError):
        asyncio.run(session.reply())


def test_the_large_edit_has_the_size_asked_for() -> None:
    message = largemsg.large_edit(2)
    assert 2 * 1024 * 1024 - 2000 < len(message) < 2 * 1024 * 1024 + 2000
    assert message.endswith(largemsg.EOM)


def test_the_restarts_vrs_are_spread_so_that_no_bridge_takes_more_than_the_kernel_allows() -> None:
    nets = re.findall(r"<name>(n\d+)</name>", restart.networks(10_000))
    assert nets == [f"n{k}" for k in range(1, 11)]
    members: dict[str, int] = {}
    addresses = set()
    for first in range(0, 10_000, 100):
        config = restart.routers(first, 100)
        for net in re.findall(r"<network>(n\d+)</network>", config):
            members[net] = members.get(net, 0) + 1
        addresses |= set(re.findall(r"<ipv4>([\d./]+)</ipv4>", config))
    assert set(members) == set(nets) and max(members.values()) <= BRIDGE_MAX_PORTS
    assert len(addresses) == 10_000  # every VR its own address
    assert restart.networks(50).count("<network>") == 1
