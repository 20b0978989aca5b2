"""vnet bench controller --southbound simulated, as a user runs it at a tiny size: the real
`vnet controller run` process on SQLite over a generated substrate of simulated hosts,
creates in steps then removes, every figure recorded, nothing left over-admitted or leaked,
and the controller process gone afterwards."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from vnet.bench.controller import simulated as sim

from .conftest import vnet

HOSTS, CONNECTIONS = 8, 30


def _controllers(tmp: Path) -> set[int]:
    """PIDs of `vnet controller run` processes on simulated hosts' temporary configuration
    under `tmp` (the bench's TMPDIR here: other workers' benches are not this one's)."""
    mine = str(tmp).encode()
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                argv = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if any(b"vnet-simctl-" in a and a.startswith(mine) for a in argv):
                found.add(int(entry.name))
    return found


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("bench-controller-sim")
    out = tmp / "results.json"
    scratch = tmp / "tmpdir"
    scratch.mkdir()
    before = _controllers(scratch)
    done = vnet(
        "bench", "controller", "--southbound", "simulated", "--hosts", str(HOSTS),
        "--connections", str(CONNECTIONS), "--rpc-latency", "0.5", "--concurrency", "3",
        "--json", str(out), "--out", str(tmp / "r"), "-q",
        env={"TMPDIR": str(scratch)}, timeout=180,
    )  # fmt: skip
    return {
        "data": json.loads(out.read_text()),
        "stdout": done.stdout,
        "before": before,
        "scratch": scratch,
    }


def samples(data: dict[str, Any], metric: str, series: str, x: Any = None) -> list[float]:
    return [
        v
        for m in data["measurements"]
        if m["metric"] == metric and m["series"] == series and (x is None or m["x"] == x)
        for v in m["samples"]
    ]


SERIES = f"sqlite {HOSTS} hosts"


def test_every_create_and_remove_was_answered_and_timed(run: dict[str, Any]) -> None:
    data = run["data"]
    assert data["parameters"]["southbound"] == "simulated", data["parameters"]
    assert not [n for n in data["notes"] if "failed" in n or "HTTP" in n], data["notes"]
    creates = samples(data, sim.TIME, SERIES)
    removes = samples(data, sim.REMOVE_TIME, SERIES)
    assert len(creates) == len(removes) == CONNECTIONS
    assert all(t > 0 for t in creates + removes)
    # each create's path computation is part of its time; every step has a rate
    paths = samples(data, sim.PATH, SERIES)
    assert len(paths) == CONNECTIONS and 0 < sum(paths) < sum(creates)
    assert len(samples(data, sim.RATE, SERIES)) == len(sim.steps(CONNECTIONS))
    assert sum(samples(data, sim.FAILED, f"{SERIES} create")) == 0


def test_the_database_and_the_controller_are_measured(run: dict[str, Any]) -> None:
    data = run["data"]
    sizes = samples(data, sim.DB_SIZE, SERIES)
    assert len(sizes) == len(sim.steps(CONNECTIONS)) + 1
    assert sizes[-1] >= sizes[0] > 0
    assert samples(data, sim.DB_GROWTH, SERIES)[0] > 0
    assert all(m > 10 for m in samples(data, sim.MEMORY, SERIES))  # a Python process, in MB
    assert len(samples(data, sim.GROWTH, SERIES)) == 1


def test_nothing_was_over_admitted_or_leaked(run: dict[str, Any]) -> None:
    data = run["data"]
    assert samples(data, sim.VIOLATIONS, SERIES, "after creates") == [0.0]
    assert samples(data, sim.VIOLATIONS, SERIES, "after removes") == [0.0]
    assert "controller goals:" in run["stdout"]


def test_the_controller_process_is_gone(run: dict[str, Any]) -> None:
    left = _controllers(run["scratch"]) - run["before"]
    assert not [pid for pid in left if os.path.exists(f"/proc/{pid}")], left
