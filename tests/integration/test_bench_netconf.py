"""vnet bench netconf --quick, run as a user runs it: a real agent (and yuma123's
netconfd behind a private sshd) in a namespace the bench makes and removes."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from vnet.bench.netconf.netconfd import netconfd_missing
from vnet.substrate import nsfs

from .conftest import vnet


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("bench-netconf")
    out = tmp / "results.json"
    args = ["bench", "netconf", "--quick", "--json", str(out), "--out", str(tmp / "report")]
    missing = netconfd_missing()
    if missing:
        args.append("--no-netconfd")
    started = time.monotonic()
    vnet(*args, timeout=150)  # --quick stays well under 60 s on a quiet machine
    return {
        "data": json.loads(out.read_text()),
        "report": tmp / "report",
        "seconds": time.monotonic() - started,
        "netconfd_missing": missing,
    }


def samples(data: dict[str, Any], metric: str, series: str, x: Any) -> list[float]:
    for m in data["measurements"]:
        if (m["metric"], m["series"], m["x"]) == (metric, series, x):
            return list(m["samples"])
    return []


def test_agent_figures_are_recorded(run: dict[str, Any]) -> None:
    data = run["data"]
    p = data["parameters"]
    assert data["schema"] == "vnet.bench.result/1" and data["name"] == "netconf"
    assert p["quick"] and p["vrs"] == 100 and p["bulk"] == 100
    for op in ("create", "retrieve", "remove"):
        got = samples(data, "vr_op_latency", "vnet", op)
        assert len(got) == p["ops"], (op, data["notes"])
        assert all(v > 0 for v in got)
        summary = next(
            m["summary"]
            for m in data["measurements"]
            if (m["metric"], m["series"], m["x"]) == ("vr_op_latency", "vnet", op)
        )
        assert summary["p50"] <= summary["p90"] <= summary["p99"]
    assert len(samples(data, "bulk_edit", "vnet", "create 100 VRs")) == p["repeat"]
    assert len(samples(data, "get_config", "vnet", 100)) == p["repeat"]
    assert samples(data, "memory", "vnet", "VmHWM (peak of the run)")[0] > 10  # MiB
    assert "netconf" in p["agent_frontends"]
    assert not [n for n in data["notes"] if "failed" in n or "cleanup" in n], data["notes"]
    assert nsfs.list_names(f"vnet-{p['scope']}-") == []
    report: Path = run["report"]
    assert (report / "report.md").is_file() and (report / "results.json").is_file()
    assert (report / "vr_op_latency.png").is_file() and (report / "get_config.png").is_file()


def test_netconfd_comparison(run: dict[str, Any]) -> None:
    if run["netconfd_missing"]:
        pytest.skip(f"netconfd comparison not run: {run['netconfd_missing']}")
    data = run["data"]
    assert data["baseline"] == "netconfd"
    theirs = samples(data, "get_config", "netconfd", 100)
    ours = samples(data, "get_config", "vnet", 100)
    assert len(theirs) == len(ours) == data["parameters"]["repeat"]
    sizes = data["parameters"]["get_config_reply_bytes"]
    assert sizes["vnet"] > 0 and sizes["netconfd"] > 0
    assert samples(data, "vr_op_latency", "netconfd", "create")
    assert samples(data, "memory", "netconfd", "VmHWM (peak of the run)")
