"""vnet bench metrics --quick, as a user runs it: a real agent with 20 VRs and 20
connections' pieces and the real controller with 20 established connections, each
scraped 3 times; every figure real (time, the server's CPU, bytes that grow with what
the server holds), and no agent or controller left running."""

from __future__ import annotations

import json
from typing import Any

import pytest

from vnet.bench.metrics import figures
from vnet.tools import netns

from .conftest import vnet

SERIES = ("agent /metrics", "agent /restconf/data", "controller /metrics")


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("bench-metrics")
    out = tmp / "results.json"
    args = ("--quick", "--json", str(out), "--out", str(tmp / "r"))
    done = vnet("bench", "metrics", *args, timeout=300)
    report = (tmp / "r" / "report.md").read_text()
    return {"data": json.loads(out.read_text()), "stdout": done.stdout, "report": report}


def samples(data: dict[str, Any], metric: str, series: str) -> list[float]:
    return [
        v
        for m in data["measurements"]
        if m["metric"] == metric and m["series"] == series
        for v in m["samples"]
    ]


def test_each_endpoint_was_scraped_three_times_with_real_figures(run: dict[str, Any]) -> None:
    data = run["data"]
    assert (data["parameters"]["vrs"], data["parameters"]["connections"]) == (20, 20)
    for series in SERIES:
        walls = samples(data, figures.WALL, series)
        cpus = samples(data, figures.CPU, series)
        assert len(walls) == len(cpus) == 3, series
        assert all(0 < w < 10_000 for w in walls), (series, walls)
        # the server works to answer: its threads ran, and not longer than two CPUs could
        assert all(0 < c < 2 * w + 50 for c, w in zip(cpus, walls, strict=True)), (series, cpus)
        assert len(samples(data, figures.TICKS, series)) == 3


def test_the_answers_hold_what_the_servers_hold(run: dict[str, Any]) -> None:
    data = run["data"]
    # 22 VRs and 20 connections in the agent's answers, 20 connections in the controller's:
    # tens of kB, far more than an empty exposition's few
    for series in SERIES:
        sizes = samples(data, figures.SIZE, series)
        assert len(sizes) == 3 and min(sizes) > 10, (series, sizes)


def test_the_report_says_the_load_and_what_was_loaded(run: dict[str, Any]) -> None:
    notes = " ".join(run["data"]["notes"])
    assert "20 VRs and 20 connections loaded over NETCONF" in notes
    assert "20 connections established through its API" in notes
    assert "load average" in notes and "at the end" in notes
    assert "median scrape: agent /metrics" in run["stdout"]
    assert "## scrape cpu (ms)" in run["report"]


def test_the_agents_namespaces_are_gone(run: dict[str, Any]) -> None:
    scopes = run["data"]["parameters"]["scopes"]
    assert len(scopes) == 1
    assert not [n for n in netns.list_names() if scopes[0] in n]
