"""`vnet bench resources --quick` end to end: both senders measured, the verdict in the
report, and nothing left behind (no namespace, no cgroup) (issue 14, part 2)."""

from __future__ import annotations

import json
from pathlib import Path

from vnet.substrate import nsfs
from vnet.tools import cgroupfs

from .conftest import require_tools, vnet


def _leftovers() -> tuple[list[str], list[Path]]:
    groups = [d for h in cgroupfs.layout().values() for d in h.parent.glob("vnet-benchres-*@*")]
    return nsfs.list_names("vnet-benchres-"), groups


def test_resources_quick(tmp_path: Path) -> None:
    require_tools("iperf3")
    out = tmp_path / "resources"
    done = vnet("bench", "resources", "--quick", "--cpu", "0.3", "--out", str(out), "--json", "-")
    results = json.loads(done.stdout)
    got = {(m["metric"], m["series"]): m["samples"] for m in results["measurements"]}
    for sender in ("unlimited", "limited"):
        assert got[("send rate", sender)][0] > 0, got
        assert got[("sender CPU", sender)][0] > 0, got
    # the quota binds: the limited sender never gets more than its 0.3 of a core
    assert got[("sender CPU", "limited")][0] <= 0.3 * 1.1, got
    report = (out / "report.md").read_text()
    assert "## Goal" in report and "limited to 0.3 core sends 0.3x" in report, report
    assert _leftovers() == ([], []), "the bench left its lab behind"
