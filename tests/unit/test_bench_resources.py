"""vnet bench resources: its goal is judged from the samples alone (issue 14, part 2)."""

from __future__ import annotations

import pytest

from vnet.bench.contract import OptionError
from vnet.bench.resources import ResourcesBench
from vnet.bench.results import BenchResult


def _result(ratio: float, free_cpu: float) -> BenchResult:
    result = BenchResult.start("resources", parameters={"cpu": 0.5})
    for metric, unit in (("ratio", ""), ("sender CPU", "cores"), ("send rate", "Mbit/s")):
        result.declare(metric, unit)
    result.record("ratio", "limited/unlimited", ratio)
    result.record("sender CPU", "unlimited", free_cpu)
    result.record("sender CPU", "limited", 0.5)
    result.record("send rate", "unlimited", 100.0)
    result.record("send rate", "limited", 100.0 * ratio)
    return result


@pytest.mark.parametrize(
    ("ratio", "free_cpu", "met"),
    [(0.52, 1.0, True), (0.45, 0.95, True), (0.6, 1.0, False), (0.44, 0.99, False)],
)
def test_the_goal_is_half_the_rate_within_five_percent(
    ratio: float, free_cpu: float, met: bool
) -> None:
    (goal,) = ResourcesBench().goals(_result(ratio, free_cpu))
    assert goal.met is met, goal


def test_a_machine_too_loaded_to_give_a_full_core_is_not_judged() -> None:
    (goal,) = ResourcesBench().goals(_result(1.0, 0.22))
    assert goal.met is None and "too loaded" in goal.detail and "0.22 cores" in goal.detail
    assert ResourcesBench().headline(_result(1.0, 0.22)).endswith("; ratio 1")


def test_a_bad_cpuset_names_the_option() -> None:
    with pytest.raises(OptionError) as info:
        ResourcesBench().plan(None, cpu=0.5, cpuset="9-1", protocol="udp")  # type: ignore[arg-type]
    assert info.value.option == "--cpuset"


def test_the_verdict_goes_into_the_report(tmp_path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "report.md").write_text("# vnet bench resources\n")
    shown = ResourcesBench().finish(_result(0.5, 1.0), {}, tmp_path)
    assert shown.startswith("goal met: limited to 0.5 core sends 0.5x")
    assert "## Goal\n\n- goal met" in (tmp_path / "report.md").read_text()
