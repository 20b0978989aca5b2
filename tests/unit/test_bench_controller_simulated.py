"""vnet bench controller --southbound simulated, its pure parts: the generated substrate, the
plan, the steps, the goals; and the controller's configuration of simulated hosts."""

from __future__ import annotations

import asyncio
import time
from collections import Counter, deque
from pathlib import Path

import pytest
from pydantic import ValidationError

from vnet.bench.contract import OptionError
from vnet.bench.controller.goals import simulated_goals, violations
from vnet.bench.controller.plan import make_plan
from vnet.bench.controller.simulated import GROWTH, PATH, TIME, VIOLATIONS, declare, steps
from vnet.bench.controller.substrate import leaf_spine, spine_count
from vnet.bench.progress import BenchOptions
from vnet.bench.results import BenchResult
from vnet.controller.server import make_agents
from vnet.controller.southbound.memory import MemorySouthbound
from vnet.model.check import check
from vnet.model.controller_config import ControllerConfig, SimulatedAgents
from vnet.model.host import host_configs

QUICK = BenchOptions(True, 1.0, 1, None, None, True)
FULL = BenchOptions(False, 1.0, 3, None, None, True)


# -- the substrate ---------------------------------------------------------------------------
def _hops(links: list[tuple[str, str]], start: str) -> dict[str, int]:
    """Breadth-first hop counts from `start`."""
    near: dict[str, set[str]] = {}
    for a, b in links:
        near.setdefault(a, set()).add(b)
        near.setdefault(b, set()).add(a)
    seen, queue = {start: 0}, deque([start])
    while queue:
        here = queue.popleft()
        for there in near[here] - seen.keys():
            seen[there] = seen[here] + 1
            queue.append(there)
    return seen


@pytest.mark.parametrize("hosts", [4, 12, 100])
def test_a_substrate_is_a_valid_leaf_spine_with_short_paths(hosts: int) -> None:
    topo = leaf_spine(hosts, tenants=2, endhosts=3)
    assert check(topo) == []
    assert len(topo.hosts) == hosts
    spines = spine_count(hosts)
    leaves = [h.name for h in topo.hosts if h.name.startswith("h")]
    assert len(leaves) == hosts - spines
    links = [(link.a, link.b) for link in topo.links]
    assert len(links) == spines * (spines - 1) // 2 + 2 * len(leaves)
    assert all(link.rate and link.rate > 0 for link in topo.links)
    # every leaf has two uplinks, and any two leaves are at most three links apart
    uplinks = Counter(a for a, _ in links if a.startswith("h"))
    assert set(uplinks.values()) == {2}
    assert max(_hops(links, leaves[0])[leaf] for leaf in leaves) <= 3
    # per tenant a VR on every host, end hosts on the leaves only
    for t in ("t0", "t1"):
        assert len([r for r in topo.routers if r.name.startswith(f"{t}-")]) == hosts
        mine = [e for e in topo.endhosts if e.name.startswith(f"{t}-")]
        assert len(mine) == 3 * len(leaves) and {e.host for e in mine} == set(leaves)


def test_every_host_of_a_substrate_gets_its_share() -> None:
    topo = leaf_spine(12, tenants=1, endhosts=2)
    configs = host_configs(topo)
    assert set(configs) == {h.name for h in topo.hosts}
    assert all(len(hc.routers) == 1 for hc in configs.values())


@pytest.mark.parametrize(("hosts", "tenants"), [(3, 1), (2100, 1), (100, 32)])
def test_a_substrate_it_cannot_address_is_refused(hosts: int, tenants: int) -> None:
    with pytest.raises(ValueError, match=r"leaves|tenants"):
        leaf_spine(hosts, tenants=tenants)


# -- the plan and the steps ------------------------------------------------------------------
def test_the_simulated_plan_takes_its_sizes_and_latency() -> None:
    plan = make_plan(FULL, southbound="simulated")
    assert (plan.hosts, plan.connections, plan.rpc_latency_ms) == ((100, 1000), 10_000, 1.0)
    assert plan.databases == ("sqlite",)
    asked = make_plan(
        FULL,
        southbound="simulated",
        hosts="30,10",
        connections=500,
        rpc_latency=0.5,
        databases="postgresql",
        concurrency="4",
    )
    assert (asked.hosts, asked.connections, asked.rpc_latency_ms) == ((30, 10), 500, 0.5)
    assert asked.databases == ("postgresql",) and asked.concurrency == (4,)
    assert make_plan(QUICK, southbound="simulated").connections < 100


@pytest.mark.parametrize(
    ("options", "flag"),
    [
        ({"southbound": "simulated", "hosts": "3"}, "--hosts"),
        ({"southbound": "simulated", "connections": 70_000}, "--connections"),
        ({"hosts": "100"}, "--southbound"),
        ({"connections": 100}, "--southbound"),
    ],
)
def test_a_bad_simulated_option_names_its_flag(options: dict[str, object], flag: str) -> None:
    with pytest.raises(OptionError) as caught:
        make_plan(FULL, **options)  # type: ignore[arg-type]
    assert caught.value.option == flag


def test_steps_cover_the_run_in_thousands_or_tenths() -> None:
    assert steps(12_500)[:2] == [(0, 1000), (1000, 2000)] and steps(12_500)[-1] == (12_000, 12_500)
    assert steps(2500) == [(k, k + 250) for k in range(0, 2500, 250)]
    assert steps(60) == [(k, k + 6) for k in range(0, 60, 6)]
    assert steps(5) == [(k, k + 1) for k in range(5)]


# -- the goals -------------------------------------------------------------------------------
def _result(growth: float, path_ms: float, bad: int) -> BenchResult:
    result = BenchResult.start("controller", parameters={"southbound": "simulated"})
    declare(result)
    series = "sqlite 100 hosts"
    result.add(TIME, series, [10.0, 11.0], x=0)
    result.add(PATH, series, [path_ms] * 10, x=0)
    result.record(GROWTH, series, growth)
    result.record(VIOLATIONS, series, bad, x="after removes")
    return result


def test_the_simulated_goals_judge_path_flatness_and_integrity() -> None:
    good = simulated_goals(_result(1.1, 3.0, 0))
    assert [g.verdict for g in good] == ["met", "met", "met"]
    bad = _result(1.3, 80.0, 2)
    assert [g.verdict for g in simulated_goals(bad)] == ["MISSED", "MISSED", "MISSED"]
    assert violations(bad) == 2  # what fails the run


# -- the controller's configuration ----------------------------------------------------------
def test_simulated_hosts_take_an_inventory_and_no_agents(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="inventory"):
        ControllerConfig(state_dir=tmp_path, simulated=SimulatedAgents())
    ok = ControllerConfig(
        state_dir=tmp_path, inventory=tmp_path / "i.yaml", simulated=SimulatedAgents()
    )
    assert ok.simulated is not None and ok.simulated.rpc_latency == 0


def test_the_controller_builds_simulated_hosts_answering_after_the_latency(
    tmp_path: Path,
) -> None:
    topo = leaf_spine(6, tenants=1, endhosts=1)
    config = ControllerConfig(
        state_dir=tmp_path,
        inventory=tmp_path / "i.yaml",
        simulated=SimulatedAgents(rpc_latency=0.05),
    )
    agents = make_agents(config, topo)
    assert isinstance(agents, MemorySouthbound)
    assert set(agents.hosts) == {h.name for h in topo.hosts}

    async def one_read() -> float:
        began = time.monotonic()
        assert await agents.routers("h0") == ["t0-rh0"]
        return time.monotonic() - began

    assert asyncio.run(one_read()) >= 0.05
