"""vnet bench failover --quick, as a user runs it: a link fails under a constant probe in
the OSPF triangle with BFD, the outage is what the loss says, and routing, not the link's
return, ends it; the lab is gone after."""

from __future__ import annotations

import json
from pathlib import Path

from vnet.bench.failover.run import OUTAGE, RATE_PPS
from vnet.bench.failover.scenario import LAB_NAMES
from vnet.tools import frr

from .conftest import lab_namespaces, require_tools, vnet


def test_ospf_with_bfd_heals_a_failed_link_before_it_returns(tmp_path: Path) -> None:
    require_tools("iperf3", "ping", "vtysh")
    out = tmp_path / "results.json"
    vnet(
        "bench", "failover", "--quick", "--variants", "bfd", "--duration", "8",
        "--json", str(out), "--out", str(tmp_path / "r"),
        timeout=300,
    )  # fmt: skip
    data = json.loads(out.read_text())
    [outage] = [m for m in data["measurements"] if m["metric"] == OUTAGE]
    [ms] = outage["samples"]
    # BFD notices, OSPF moves the traffic to r2: some datagrams are lost, and fewer than
    # while the link was down (how much fewer is the benchmark's figure, not a test's)
    assert 0 < ms < data["parameters"]["link_down_s"] * 1000, (ms, data["notes"])
    assert ms == next(m for m in data["measurements"] if m["metric"] == "lost")["samples"][0] * (
        1000 / RATE_PPS
    )
    assert data["parameters"]["failed_link"] == "h1-h3"
    assert "goal " in (tmp_path / "r" / "report.md").read_text().split("## Goals")[1]
    assert not lab_namespaces(LAB_NAMES["bfd"])
    assert not (frr.RUN_ROOT / f"{LAB_NAMES['bfd']}.h1").exists()
