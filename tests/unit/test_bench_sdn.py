"""`vnet bench sdn`'s pure parts: Jain's index, the noisy tenant's effect, overload, the plan."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from vnet.bench.sdn import analysis, plan
from vnet.bench.sdn.analysis import (
    Thirds,
    jain_index,
    noisy_rise,
    others_p99,
    overload_reasons,
    read_records,
    thirds_of,
)
from vnet.bench.sdn.hypervisor import last_json_line
from vnet.bench.sdn.perfbench import CONTROLLER_PORT, HV_PORT, PROXY_PORT, Setup

# -- Jain's index ------------------------------------------------------------------------


def test_jain_index_of_equal_values_is_one() -> None:
    assert jain_index([5.0] * 20) == pytest.approx(1.0)


def test_jain_index_when_one_has_everything_is_one_over_n() -> None:
    assert jain_index([10.0, 0.0, 0.0, 0.0]) == pytest.approx(0.25)


def test_jain_index_of_a_known_spread() -> None:
    # (1+2+3)^2 / (3 * (1+4+9)) = 36/42
    assert jain_index([1.0, 2.0, 3.0]) == pytest.approx(36 / 42)


def test_jain_index_is_scale_free_and_all_zero_is_fair() -> None:
    assert jain_index([1.0, 2.0]) == pytest.approx(jain_index([100.0, 200.0]))
    assert jain_index([0.0, 0.0]) == 1.0


@pytest.mark.parametrize("values", [[], [1.0, -1.0]])
def test_jain_index_refuses_empty_or_negative(values: list[float]) -> None:
    with pytest.raises(ValueError):
        jain_index(values)


# -- the noisy tenant --------------------------------------------------------------------


def test_noisy_rise_is_the_relative_change_of_the_mean_p99() -> None:
    assert noisy_rise([100.0, 300.0], [110.0, 330.0]) == pytest.approx(0.10)
    assert noisy_rise([200.0], [100.0]) == pytest.approx(-0.5)


def test_noisy_rise_needs_both_runs_and_a_positive_base() -> None:
    with pytest.raises(ValueError):
        noisy_rise([], [1.0])
    with pytest.raises(ValueError):
        noisy_rise([0.0], [1.0])


def _tenant(i: int, p99: float, count: int = 10) -> dict[str, Any]:
    return {"tenant": i, "latency": {"p99_us": p99, "count": count}}


def test_others_p99_leaves_out_the_noisy_tenant_and_silent_ones() -> None:
    tenants = [_tenant(0, 9e6), _tenant(1, 100.0), _tenant(2, 200.0), _tenant(3, 5.0, count=0)]
    assert others_p99(tenants, noisy=0) == [100.0, 200.0]


# -- overload ----------------------------------------------------------------------------


def _totals(**over: Any) -> dict[str, Any]:
    base = {
        "sent": 10_000,
        "lost": 0,
        "target_rate": 1000.0,
        "achieved_rate": 1000.0,
        "latency": {"p50_us": 80.0},
    }
    return {**base, **over}


STEADY = Thirds(p50_us=(80.0, 90.0, 85.0), lost=(0, 0, 0))


def test_a_run_that_keeps_up_has_no_reasons() -> None:
    assert overload_reasons(_totals(), STEADY, backlog=0) == []
    assert overload_reasons(_totals(lost=100), None, backlog=0) == []  # 1 %: allowed


def test_lost_messages_mark_overload() -> None:
    assert overload_reasons(_totals(lost=500), STEADY, 0) == ["5.0 % unanswered"]


def test_a_rate_not_reached_or_a_full_socket_marks_overload() -> None:
    assert overload_reasons(_totals(achieved_rate=900.0), STEADY, 0) == ["sent 900/s of 1000/s"]
    assert overload_reasons(_totals(), STEADY, 300 * 1024) == ["send backlog 300 KiB"]


def test_a_standing_queue_marks_overload() -> None:
    reasons = overload_reasons(_totals(latency={"p50_us": 600_000.0}), None, 0)
    assert reasons == ["p50 600 ms (a standing queue)"]


def test_latency_growing_through_the_window_marks_overload() -> None:
    growing = Thirds(p50_us=(1_000.0, 5_000.0, 9_000.0), lost=(0, 0, 0))
    assert overload_reasons(_totals(), growing, 0) == ["latency grew 9.0x from first to last third"]


def test_doubling_below_a_millisecond_is_jitter_not_overload() -> None:
    jitter = Thirds(p50_us=(40.0, 60.0, 120.0), lost=(0, 0, 0))
    assert overload_reasons(_totals(), jitter, 0) == []


def test_nothing_sent_is_overload() -> None:
    assert overload_reasons(_totals(sent=0), None, 0) == ["nothing sent"]


def test_thirds_split_the_window_and_count_losses() -> None:
    samples = [(t, float(t)) for t in range(0, 300)] + [(10, None), (250, None), (400, 1.0)]
    thirds = thirds_of(samples, start_ns=0, end_ns=300)
    assert thirds.p50_us == (49.5, 149.5, 249.5)
    assert thirds.lost == (1, 0, 1)
    assert thirds.growth == pytest.approx(249.5 / 49.5)


def test_thirds_of_an_empty_third_have_no_median_or_growth() -> None:
    thirds = thirds_of([(0, 5.0)], 0, 300)
    assert thirds.p50_us == (5.0, None, None) and thirds.growth is None


def test_records_are_read_from_perfbench_csv(tmp_path: Path) -> None:
    csv = tmp_path / "records.csv"
    csv.write_text(
        "xid,request_type,request_ts_ns,request_size,response_type,response_ts_ns,"
        "response_size,latency_us,connection_id\n"
        "0,OFPT_PACKET_OUT,1000,90,DATA_PACKET,3000,64,2.000,0\n"
        "1,OFPT_PACKET_OUT,2000,90,,,,,1\n"
        "2,OFPT_PACKET_OUT,2500,90,DATA_PACKET,3500,64,1.000,1\n"
    )
    assert list(read_records(csv)) == [(1000, 2.0), (2000, None), (2500, 1.0)]
    assert list(read_records(csv, skip_tenant=1)) == [(1000, 2.0)]


def test_overload_thresholds_are_what_the_docs_say() -> None:
    assert analysis.MAX_LOSS == 0.01 and analysis.STANDING_QUEUE_US == 100_000.0


# -- the plan and the setups -------------------------------------------------------------


def test_every_table1_setup_runs_switch_only_through_the_proxy_and_the_hypervisor() -> None:
    setups = plan.plan(quick=False, tenants=[2, 20])
    for via in plan.VIAS:
        mine = [s for s in setups if s.via == via and s.experiment in ("packet-in", "port-stats")]
        assert len(mine) == 4 + 1 + 4  # PACKET_IN rates, PACKET_IN ND, port stats rates
        assert {
            (s.tenants, s.nodelay) for s in setups if s.via == via and s.experiment == "packet-out"
        } == {(n, nd) for n in (2, 20) for nd in (False, True)}


def test_rate_steps_noisy_pair_and_flow_mod_compare_the_hypervisor_with_the_switch() -> None:
    setups = plan.plan(quick=False, tenants=[2, 20])
    ladder = [s for s in setups if s.experiment == "packet-out-rate"]
    assert {(s.via, s.rate) for s in ladder} == {
        (v, r) for v in ("ovs", "hv") for r in plan.LADDER_RATES
    }
    assert all(s.tenants == 20 and s.nodelay for s in ladder)
    quiet, loud = [s for s in setups if s.experiment == "noisy"]
    assert quiet.rates == (plan.NORMAL_RATE,) * plan.NOISY_TENANTS
    assert loud.rates[0] == plan.NOISY_FACTOR * plan.RATE_LIMIT
    assert loud.rates[1:] == quiet.rates[1:]
    assert quiet.rate_limit == loud.rate_limit == plan.RATE_LIMIT
    assert not plan.is_noisy(quiet) and plan.is_noisy(loud)
    assert {s.via for s in setups if s.experiment == "flow-mod"} == {"ovs", "hv"}


def test_quick_plan_is_small() -> None:
    assert len(plan.plan(quick=True, tenants=[4])) <= 26


def test_points_are_placed_by_tenants_rate_or_noise() -> None:
    assert plan.x_of(Setup("packet-out", "hv", True, 20, 60_000)) == 20
    assert plan.x_of(Setup("packet-out-rate", "hv", True, 20, 30_000)) == 30_000
    quiet, loud = plan.noisy(quick=True)
    assert (plan.x_of(quiet), plan.x_of(loud)) == ("without", "with noisy tenant")


def test_the_switch_connects_to_tenants_proxy_or_the_one_hypervisor_port() -> None:
    assert Setup("packet-out", "ovs", True, 3, 1).controller_ports() == [
        CONTROLLER_PORT + i for i in range(3)
    ]
    assert Setup("packet-out", "proxy", True, 3, 1).controller_ports() == [
        PROXY_PORT + i for i in range(3)
    ]
    assert Setup("packet-out", "hv", True, 3, 1).controller_ports() == [HV_PORT]
    assert Setup("noisy", "hv", True, 3, 1).kind == "packet-out"


def test_the_hypervisor_report_is_its_last_json_line() -> None:
    out = 'slice t0 -> 127.0.0.1:6653 ports=all\nlistening 127.0.0.1:6853\nready\n{"reloads": 0}\n'
    assert last_json_line(out) == {"reloads": 0}
    assert last_json_line("ready\n") == {}
