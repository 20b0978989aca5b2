"""The README's main job and the build benchmark, run as a user runs them."""

from __future__ import annotations

import json
from pathlib import Path

from vnet.lab import lab as labmod

from .conftest import lab_namespaces, require_tools, vnet


def test_demo_prints_its_tables_and_cleans_up() -> None:
    require_tools("fping", "iperf3", "ping")
    if "demo" in labmod.running_labs():
        labmod.down("demo")  # the demo's own lab, left by an earlier `vnet demo --keep`
    done = vnet("demo", "--seconds", "1", timeout=180)
    for heading in ("1. Who receives a probe", "2. Each tenant's path", "3. What vnet created"):
        assert heading in done.stdout
    assert "all results as expected" in done.stdout
    assert lab_namespaces("demo") == []


def test_bench_build_writes_the_promised_json(tmp_path: Path) -> None:
    out = tmp_path / "build.json"
    report = tmp_path / "report"  # every bench writes a report; keep it out of the cwd
    args = ["--vrs", "20", "--hosts", "2", "--json", str(out), "--out", str(report)]
    vnet("bench", "build", *args, timeout=180)
    data = json.loads(out.read_text())
    for key in (
        "vrs",
        "up_seconds",
        "down_seconds",
        "per_vr_p50_ms",
        "per_vr_p99_ms",
        "peak_rss_mb",
    ):
        assert key in data, key
    assert data["vrs"] == 20 and data["reapply_ops"] == 0
    assert 0 < data["per_vr_p50_ms"] <= data["per_vr_p99_ms"]
    assert lab_namespaces("bench") == []
    assert (report / "results.json").is_file()
