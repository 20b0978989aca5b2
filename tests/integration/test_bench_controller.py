"""vnet bench controller --quick, as a user runs it: a lab with its agents and controller,
rounds of creates, modifies, path modifies, rearrangements and removes over the controller's
API, every request's time split by its Server-Timing header, the links checked for
over-admission and leaks, and nothing of the lab left behind."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from vnet.bench.controller import record
from vnet.bench.controller.plan import OPERATIONS, QUICK_CONCURRENCY
from vnet.bench.controller.timing import SPLIT
from vnet.tools.netns import list_names

from .conftest import vnet


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("bench-controller")
    out = tmp / "results.json"
    before = set(list_names("vnet-cb"))
    vnet("bench", "controller", "--quick", "--json", str(out), "--out", str(tmp / "r"), timeout=300)
    return {"data": json.loads(out.read_text()), "report": tmp / "r", "before": before}


def samples(data: dict[str, Any], metric: str, series: str, x: Any) -> list[float]:
    for m in data["measurements"]:
        if (m["metric"], m["series"], m["x"]) == (metric, series, x):
            return list(m["samples"])
    return []


def test_every_request_was_answered_and_timed(run: dict[str, Any]) -> None:
    data = run["data"]
    creates, modifies = data["parameters"]["creates"], data["parameters"]["modifies"]
    moves = data["parameters"]["moves"]
    assert data["parameters"]["endhosts"] == 40
    assert not [n for n in data["notes"] if " failed" in n or "HTTP" in n], data["notes"]
    counts = (("create", creates), ("modify", modifies), ("move", moves), ("remove", creates))
    for c in QUICK_CONCURRENCY:
        assert samples(data, record.FAILED, "sqlite create", c) == [0.0]
        for op, count in counts:
            times = samples(data, record.time_metric(op), "sqlite", c)
            assert len(times) == count and all(t > 0 for t in times), (op, c)
            assert samples(data, record.throughput_metric(op), "sqlite", c)[0] > 0
    # the rearrangements, one at a time: each moved its filler (else a note says so)
    rearranged = samples(data, record.time_metric("rearrange"), "sqlite", 1)
    assert len(rearranged) == data["parameters"]["rearranges"], data["notes"]
    assert samples(data, record.FAILED, "sqlite rearrange", 1) == [0.0]


def test_the_parts_add_up_to_the_end_to_end_time(run: dict[str, Any]) -> None:
    data = run["data"]
    for op in OPERATIONS:
        total = samples(data, record.time_metric(op), "sqlite", 1)
        parts = [samples(data, record.split_metric(op), f"sqlite {p}", 1) for p in SPLIT]
        for i, end_to_end in enumerate(total):
            server = sum(p[i] for p in parts[:-1])  # api, db, path, devices
            # other is the rest of the client's time; a controller whose phases add up to a
            # hair more than the client's clock (overlap, 0.01 ms rounding) leaves none
            assert parts[-1][i] == pytest.approx(max(0.0, end_to_end - server), abs=1e-6), op
            assert server <= end_to_end * 1.05 + 1, (op, server, end_to_end)
    # the agents were configured: devices took time on every create
    assert all(ms > 0 for ms in samples(data, record.split_metric("create"), "sqlite devices", 1))


def test_no_over_admission_and_no_leak(run: dict[str, Any]) -> None:
    data = run["data"]
    for c in QUICK_CONCURRENCY:
        assert samples(data, record.VIOLATIONS, "sqlite", c) == [0.0]
    assert not [n for n in data["notes"] if n.startswith("VIOLATION")]


def test_the_report_has_the_papers_figures(run: dict[str, Any]) -> None:
    report: Path = run["report"]
    for op in OPERATIONS:
        assert (report / f"split-{op}.png").stat().st_size > 1000
    assert "goal sqlite: zero over-admission" in (report / "report.md").read_text()


def test_the_lab_is_gone(run: dict[str, Any]) -> None:
    assert set(list_names("vnet-cb")) <= run["before"]
