"""vnet bench failover --quick with the reroute variants, as a user runs it: a controller
lab, one guaranteed connection on the link that fails (reroute-link) and one through the
host that fails (reroute-host); the figures are the controller's own, every one a real
measurement, the ledger holds nothing over capacity nor after the release, nothing moves
back when the element returns, and the lab is gone after."""

from __future__ import annotations

import json
from pathlib import Path

from vnet.bench.failover.reroute import (
    DEGRADED,
    DETECT,
    FLAPPED,
    HANDLED_LAST,
    HOST,
    LEAKED,
    LINK,
    MOVE,
    MOVE_LAST,
    OVER,
    STALE,
)

from .conftest import lab_namespaces, vnet

BOUND_MS = 60_000  # the run's own bound (reroute.SETTLE is 120 s): a figure, not a goal


def _samples(data: dict, metric: str, series: str) -> list[float]:
    found = [
        m for m in data["measurements"] if (m["metric"], m["series"], m["x"]) == (metric, series, 1)
    ]
    assert found, (metric, series, data["notes"])
    return found[0]["samples"]


def test_one_connection_is_rerouted_off_a_failed_link_and_off_a_failed_host(
    tmp_path: Path,
) -> None:
    out = tmp_path / "results.json"
    vnet(
        "bench", "failover", "--quick", "--variants", "reroute-link,reroute-host",
        "--connections", "1", "--json", str(out), "--out", str(tmp_path / "r"),
        timeout=900,
    )  # fmt: skip
    data = json.loads(out.read_text())
    # notes other than why a connection was degraded on its way are runs that failed
    assert [n for n in data["notes"] if "degraded because" not in n] == []
    for series in (LINK, HOST):
        [detect] = _samples(data, DETECT, series)
        [move] = _samples(data, MOVE, series)
        [last] = _samples(data, MOVE_LAST, series)
        [handled] = _samples(data, HANDLED_LAST, series)
        # the controller learns after the failure, moves after it learns: times on one clock
        assert 0 < detect < BOUND_MS and 0 < move == last < BOUND_MS, (series, detect, move)
        if series == LINK:  # handled when moved
            assert abs(detect + move - handled) < 1, (detect, move, handled)
        else:  # handled when moved, or degraded first (the host's agent cannot answer)
            assert handled < detect + move + 1, (detect, move, handled)
        assert _samples(data, DEGRADED, series) == [0]  # moved in the end
        assert _samples(data, OVER, series) == [0]
        assert _samples(data, STALE, series) == [0]
        assert _samples(data, LEAKED, series) == [0]
        assert _samples(data, FLAPPED, series) == [0]
    report = (tmp_path / "r" / "report.md").read_text().split("## Goals")[1]
    assert "zero leaked reservation" in report and "goal " in report
    assert not lab_namespaces(data["parameters"]["controller_lab"])
