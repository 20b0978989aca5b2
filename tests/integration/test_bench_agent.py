"""vnet bench agent --quick, as a user runs it: every part measured against real agents
in namespaces the bench makes and removes, its goals in the report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from vnet.bench.agent import confirmed, connection, largemsg, nacm, restart, topology
from vnet.bench.agent.plan import PARTS
from vnet.substrate import nsfs

from .conftest import vnet


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("bench-agent")
    out = tmp / "results.json"
    vnet("bench", "agent", "--quick", "--json", str(out), "--out", str(tmp / "r"), timeout=300)
    return {"data": json.loads(out.read_text()), "report": tmp / "r"}


def samples(data: dict[str, Any], metric: str, series: str, x: Any) -> list[float]:
    for m in data["measurements"]:
        if (m["metric"], m["series"], m["x"]) == (metric, series, x):
            return list(m["samples"])
    return []


def test_no_part_failed(run: dict[str, Any]) -> None:
    data = run["data"]
    assert data["parameters"]["parts"] == list(PARTS)
    assert not [n for n in data["notes"] if n.startswith("part ")], data["notes"]


def test_every_edit_and_commit_is_a_sample(run: dict[str, Any]) -> None:
    data = run["data"]
    repeat = data["parameters"]["repeat"]
    for x in (connection.ADD, connection.REMOVE, connection.VR):
        times = samples(data, connection.METRIC, "vnet", x)
        assert len(times) == repeat and all(t > 0 for t in times), x
    for kind in confirmed.KINDS:
        assert len(samples(data, confirmed.METRIC, "vnet", kind)) == repeat, kind
    for series in (nacm.NO_NACM, nacm.RULES):
        for x in (nacm.FIRST, nacm.CACHED):
            assert len(samples(data, nacm.METRIC, series, x)) == repeat, (series, x)
    sizes = data["parameters"]["nacm_reply_bytes"]  # the rules hide nothing: same data
    assert sizes[nacm.NO_NACM] == sizes[nacm.RULES] > 0


def test_the_restart_passes_its_stages_in_order(run: dict[str, Any]) -> None:
    data = run["data"]
    stages = [samples(data, restart.METRIC, "vnet", x) for x in restart.STAGES]
    assert all(len(s) == data["parameters"]["rounds"] for s in stages)
    for listening, answer, reconciled in zip(*stages, strict=True):
        assert 0 < listening <= answer and reconciled > 0


def test_the_large_edit_is_refused_while_the_other_session_is_served(
    run: dict[str, Any],
) -> None:
    data = run["data"]
    assert samples(data, largemsg.GET_METRIC, "vnet", largemsg.BEFORE)
    assert samples(data, largemsg.GET_METRIC, "vnet", largemsg.DURING)
    assert not [n for n in data["notes"] if "not refused" in n]
    for x in (topology.PARSE, topology.CHECK, topology.FILE):
        assert samples(data, topology.METRIC, "vnet", x), x


def test_the_report_carries_every_goal(run: dict[str, Any]) -> None:
    text = (Path(run["report"]) / "report.md").read_text()
    for goal in (
        "one connection's pieces",
        "confirmed commit over",
        "NACM with 100 rules",
        "restart with 10000 VRs",
        "another session's <get>",
        "parse and check a topology of 10000",
        "read a topology file of 10000",
    ):
        assert f"- goal {goal}" in text, goal


def test_nothing_is_left_behind(run: dict[str, Any]) -> None:
    for scope in run["data"]["parameters"]["scopes"]:
        assert nsfs.list_names(f"vnet-{scope}-") == []
