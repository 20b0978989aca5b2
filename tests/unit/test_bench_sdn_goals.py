"""`vnet bench sdn`'s goals, judged from samples alone: overloaded points are never judged
as if their latency were steady."""

from __future__ import annotations

from vnet.bench.results import BenchResult
from vnet.bench.sdn.goals import check_goals, keep_up_point
from vnet.bench.sdn.record import CPU_PER_10K, NOISY_DELIVERED, NOISY_P99


def _result() -> BenchResult:
    r = BenchResult(
        name="sdn",
        parameters={
            "ladder_tenants": 20,
            "ladder_rates": [10_000, 20_000],
            "packet_out_total_rate": 60_000,
            "noisy": {"rate_limit": 2000},
        },
    )
    return r


def _point(
    r: BenchResult, exp: str, x: float, series: str, p50: float, p99: float, over: bool
) -> None:
    r.record(f"{exp} p50 latency", series, p50, x=x)
    r.record(f"{exp} p99 latency", series, p99, x=x)
    r.record(f"{exp} overloaded", series, 1.0 if over else 0.0, x=x)


def _by_start(goals: list, start: str) -> list:
    return [g for g in goals if g.goal.startswith(start)]


def test_an_overloaded_switch_is_not_judged_and_the_keep_up_rate_is() -> None:
    r = _result()
    _point(r, "packet-out", 20, "ovs-ND", 900_000.0, 950_000.0, over=True)
    _point(r, "packet-out", 20, "hv-ND", 950_000.0, 990_000.0, over=True)
    _point(r, "packet-out-rate", 10_000, "ovs-ND", 80.0, 200.0, over=False)
    _point(r, "packet-out-rate", 10_000, "hv-ND", 95.0, 240.0, over=False)
    _point(r, "packet-out-rate", 20_000, "ovs-ND", 90.0, 300.0, over=False)
    _point(r, "packet-out-rate", 20_000, "hv-ND", 105.0, 330.0, over=False)
    assert keep_up_point(r) == ("packet-out-rate", 20_000)
    at_60k, at_20k = _by_start(check_goals(r), "added latency")
    assert at_60k.met is None and "switch alone OVERLOADED" in at_60k.detail
    assert "60k PACKET_OUT/s over 20 tenants" in at_60k.goal
    assert at_20k.met is True and "20k PACKET_OUT/s over 20 tenants" in at_20k.goal
    assert "(+15.0)" in at_20k.detail and "(+30.0)" in at_20k.detail


def test_added_latency_over_the_bound_is_missed() -> None:
    r = _result()
    _point(r, "packet-out", 20, "ovs-ND", 80.0, 200.0, over=False)
    _point(r, "packet-out", 20, "hv-ND", 130.0, 230.0, over=False)
    assert keep_up_point(r) == ("packet-out", 20)
    (goal,) = _by_start(check_goals(r), "added latency")  # 60k kept up: judged once
    assert goal.met is False


def test_repeats_are_judged_by_their_mean_and_shown_with_the_ci() -> None:
    r = _result()
    for ovs50, hv50 in ((80.0, 90.0), (100.0, 110.0), (90.0, 100.0)):
        _point(r, "packet-out", 20, "ovs-ND", ovs50, 200.0, over=False)
        _point(r, "packet-out", 20, "hv-ND", hv50, 230.0, over=False)
    (goal,) = _by_start(check_goals(r), "added latency")
    assert goal.met is True, goal.detail  # +10 µs p50, +30 µs p99 on average
    # 3 samples 90/100/110: mean 100, ci95 = t(0.975, 2) x 10 / sqrt(3) = 24.8
    assert "p50 100.0 ± 24.8 vs 90.0 ± 24.8 µs (+10.0)" in goal.detail, goal.detail
    assert "means of 3 repeats" in goal.detail


def test_a_hypervisor_that_falls_behind_a_switch_that_keeps_up_misses() -> None:
    r = _result()
    _point(r, "packet-out", 20, "ovs-ND", 80.0, 200.0, over=False)
    _point(r, "packet-out", 20, "hv-ND", 500_000.0, 900_000.0, over=True)
    r.record("packet-out Jain index", "hv-ND", 0.9999, x=20)
    goals = check_goals(r)
    (added,) = _by_start(goals, "added latency")
    assert added.met is False and "hypervisor OVERLOADED" in added.detail
    (jain,) = _by_start(goals, "Jain")
    assert jain.met is None and "OVERLOADED" in jain.detail


def test_jain_noisy_tenant_and_cpu() -> None:
    r = _result()
    _point(r, "packet-out", 20, "ovs-ND", 80.0, 200.0, over=False)
    _point(r, "packet-out", 20, "hv-ND", 90.0, 210.0, over=False)
    r.record("packet-out Jain index", "hv-ND", 0.985, x=20)
    for x, p99 in (("without", 1000.0), ("with noisy tenant", 1050.0)):
        r.record(NOISY_P99, "hv-ND", p99, x=x)
        r.record("noisy overloaded", "hv-ND", 0.0, x=x)
    r.record(NOISY_DELIVERED, "hv-ND", 1990.0, x="with noisy tenant")
    r.record(f"packet-out {CPU_PER_10K}", "hv-ND", 4.2, x=20)
    goals = check_goals(r)
    (jain,) = _by_start(goals, "Jain")
    assert jain.met is False and jain.detail == "0.9850"
    (noisy,) = _by_start(goals, "noisy tenant")
    assert noisy.met is True and "+5.0%" in noisy.detail and "1990/s" in noisy.detail
    (cpu,) = _by_start(goals, "hypervisor CPU")
    assert cpu.met is True and "hv-ND 20 tenants: 4.2 %" in cpu.detail


def test_nothing_measured_is_not_judged() -> None:
    goals = check_goals(_result())
    assert {g.met for g in goals if not g.goal.startswith("the switch alone")} == {None}
    (none,) = _by_start(goals, "the switch alone keeps up")
    assert none.met is False


def test_when_only_the_hypervisor_falls_behind_it_is_also_judged_where_both_keep_up() -> None:
    r = _result()
    _point(r, "packet-out", 20, "ovs-ND", 900_000.0, 950_000.0, over=True)
    _point(r, "packet-out", 20, "hv-ND", 950_000.0, 990_000.0, over=True)
    _point(r, "packet-out-rate", 10_000, "ovs-ND", 80.0, 200.0, over=False)
    _point(r, "packet-out-rate", 10_000, "hv-ND", 90.0, 240.0, over=False)
    _point(r, "packet-out-rate", 20_000, "ovs-ND", 90.0, 300.0, over=False)
    _point(r, "packet-out-rate", 20_000, "hv-ND", 800_000.0, 900_000.0, over=True)
    at_60k, at_20k, at_10k = _by_start(check_goals(r), "added latency")
    assert (at_60k.met, at_20k.met, at_10k.met) == (None, False, True)
    assert "10k PACKET_OUT/s" in at_10k.goal
