"""`vnet bench dataplane` and `vnet bench forwarding` end to end, --quick on a few path kinds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from vnet.substrate import nsfs

from .conftest import require_tools, vnet


def bench_namespaces(prefix: str) -> set[str]:
    return set(nsfs.list_names(f"vnet-{prefix}"))


def series(results: dict[str, Any], metric: str) -> set[str]:
    return {m["series"] for m in results["measurements"] if m["metric"] == metric and m["samples"]}


def test_dataplane_quick(tmp_path: Path) -> None:
    require_tools("iperf3", "fping")
    before = bench_namespaces("dp")
    out = tmp_path / "dataplane"
    done = vnet(
        "bench",
        "dataplane",
        "--quick",
        "--kinds",
        "physical,bridge,vr1,srv6",
        "--out",
        str(out),
        "--json",
        "-",
        timeout=300,
    )
    assert bench_namespaces("dp") == before, "the bench left namespaces behind"
    results = json.loads(done.stdout)
    assert results["baseline"] == "physical"
    for metric in ("udp throughput", "udp loss", "rtt p50", "tcp throughput"):
        assert series(results, metric) == {"physical", "bridge", "vr1", "srv6"}, metric
    assert series(results, "tcp throughput per second") == {"physical", "bridge", "vr1", "srv6"}
    assert results["parameters"]["max_rate_packet_sizes"] == [100]
    report = (out / "report.md").read_text()
    assert report.index("## Against the physical baseline") < report.index("## udp throughput")
    assert "## Goals" in report and "RTT per VR hop" in report
    # every kind has a loss-bounded rate at 100 B, or a note saying why not
    found = series(results, "max rate at <= 0.1% loss, one way")
    for kind in {"physical", "bridge", "vr1", "srv6"} - found:
        noted = (f"{kind}, 100 B one way: no rate", f"{kind}: max rate at 100 B, one way")
        assert any(n in report for n in noted), kind
    assert (out / "udp-throughput.png").stat().st_size > 1000
    # 100 Mbit/s (the --quick load) passes a bridge on any machine.
    tput = {
        m["series"]: sum(m["samples"]) / len(m["samples"])
        for m in results["measurements"]
        if m["metric"] == "udp throughput"
    }
    assert all(v > 90 for v in tput.values()), tput


def test_forwarding_quick(tmp_path: Path) -> None:
    require_tools("trafgen")
    before = bench_namespaces("fw")
    out = tmp_path / "forwarding"
    done = vnet(
        "bench",
        "forwarding",
        "--quick",
        "--kinds",
        "physical,native,vr1",
        "--out",
        str(out),
        "--json",
        "-",
        timeout=300,
    )
    assert bench_namespaces("fw") == before, "the bench left namespaces behind"
    results = json.loads(done.stdout)
    assert results["baseline"] == "native"
    assert results["parameters"]["max_rate_packet_sizes"] == [100]
    rates = {
        (m["series"], m["x"]): min(m["samples"])
        for m in results["measurements"]
        if m["metric"] == "pps at 64 B"
    }
    assert set(rates) == {(k, c) for k in ("physical", "native", "vr1") for c in (1, 2)}
    # Every path forwards something.
    assert all(v > 1000 for v in rates.values()), rates
    report = (out / "report.md").read_text()
    assert report.index("## Forwarding rate at 64 B") < report.index("## pps at 64 B")
    assert (out / "pps-at-64-B.png").stat().st_size > 1000
