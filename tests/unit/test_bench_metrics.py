"""vnet bench metrics without root: one scrape's cost from the server's /proc readings,
the agent's configuration in batches, the headline, and the options."""

from __future__ import annotations

import pytest

from vnet.bench.contract import OptionError
from vnet.bench.metrics import MetricsBench, figures
from vnet.bench.metrics.agent_side import batches, check, vr
from vnet.bench.metrics.scrape import Scrape, scrape_cost
from vnet.bench.progress import BenchOptions
from vnet.bench.results import BenchResult
from vnet.tools.procfs import ProcessCpu


def test_a_scrape_costs_the_ticks_and_the_run_time_between_the_readings() -> None:
    before = ProcessCpu(user_ticks=100, system_ticks=20, runtime_ns=5_000_000_000)
    after = ProcessCpu(user_ticks=118, system_ticks=23, runtime_ns=5_212_500_000)
    s = scrape_cost(before, after, wall_s=0.3125, size=702_000, tick_ms=10.0)
    assert s == Scrape(wall_ms=312.5, cpu_ms=212.5, cpu_ticks_ms=210.0, size=702_000)


def test_a_thread_gone_between_the_readings_never_makes_the_run_time_negative() -> None:
    before = ProcessCpu(10, 0, 9_000_000)
    after = ProcessCpu(11, 0, 4_000_000)  # a thread that ran 6 ms ended
    assert scrape_cost(before, after, 0.01, 1, tick_ms=10.0).cpu_ms == 0.0


def test_ticks_going_backwards_are_refused() -> None:
    with pytest.raises(ValueError, match="backwards"):
        scrape_cost(ProcessCpu(10, 5, 0), ProcessCpu(9, 5, 0), 0.01, 1)


def test_the_vrs_come_in_batches_covering_each_once() -> None:
    parts = list(batches(250, 100))
    assert [(p.start, p.stop) for p in parts] == [(1, 101), (101, 201), (201, 251)]
    assert list(batches(0)) == []


def test_every_vr_has_its_own_address_in_its_network() -> None:
    addresses = {vr(k)["interface"][0]["ipv4"] for k in range(1, 5001)}
    assert len(addresses) == 5000
    assert all(a.startswith("10.64.") and a.endswith("/16") for a in addresses)
    assert not [a for a in addresses if a.split("/")[0].endswith((".0", ".255"))]


def _data(routers: int, connections: int) -> dict[str, object]:
    return {
        "ietf-restconf:data": {
            "vnet-router:routers": {"router": [{"name": f"v{k}"} for k in range(routers)]},
            "vnet-router:srv6": {"connection": [{"name": f"c{k}"} for k in range(connections)]},
        }
    }


def test_the_agent_must_hold_what_was_loaded() -> None:
    check(_data(22, 20), vrs=20, connections=20)
    with pytest.raises(Exception, match="holds 21 VRs and 20 connections, not 22 and 20"):
        check(_data(21, 20), vrs=20, connections=20)


def test_the_headline_gives_each_endpoints_medians() -> None:
    result = BenchResult.start("metrics")
    figures.declare(result)
    for wall in (300.0, 310.0, 900.0):
        figures.record(result, "agent /metrics", Scrape(wall, 200.0, 200.0, 702_000))
    assert figures.headline(result) == "median scrape: agent /metrics 310 ms, 200 ms CPU, 702 kB"


def test_quick_sizes_and_parts() -> None:
    bench = MetricsBench()
    quick = BenchOptions(True, 0.0, 3, None, None, True)
    plan = bench.plan(quick, parts="controller")
    assert (plan.vrs, plan.connections, plan.parts) == (20, 20, ("controller",))
    with pytest.raises(OptionError) as err:
        bench.plan(quick, parts="agent,snmp")
    assert err.value.option == "--parts"
