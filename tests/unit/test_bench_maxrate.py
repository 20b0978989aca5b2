"""The loss-bounded maximum rate search (paper 001, Tables 1 and 2), without root: a path
that loses above a known capacity stands in for iperf3 runs."""

from __future__ import annotations

import pytest

from vnet.bench.dataplane import maxrate
from vnet.bench.dataplane import summary as dp_summary
from vnet.bench.results import BenchResult


def lossy_path(capacity: float, offered_unpaced: float, calls: list[float | None]):  # type: ignore[no-untyped-def]
    """trial(): everything above `capacity` Mbit/s is lost."""

    def trial(path, size, mbit, duration, both):  # type: ignore[no-untyped-def]
        calls.append(mbit)
        offered = offered_unpaced if mbit is None else mbit
        received = min(offered, capacity)
        return maxrate.Trial(mbit, received, 100 * (offered - received) / offered, None)

    return trial


def test_bisection_ends_within_the_bound_and_close_below_capacity(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[float | None] = []
    monkeypatch.setattr(maxrate, "trial", lossy_path(500.0, 900.0, calls))
    best, unpaced = maxrate.search(None, 1500, False, 1.0, steps=4)  # type: ignore[arg-type]
    assert calls[0] is None and len(calls) == 5
    assert best is not None and best.loss_percent <= maxrate.LOSS_BOUND
    assert 450 <= best.received_mbit <= 500
    assert unpaced.loss_percent > 40


def test_no_loss_unpaced_is_the_senders_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[float | None] = []
    monkeypatch.setattr(maxrate, "trial", lossy_path(1000.0, 800.0, calls))
    best, unpaced = maxrate.search(None, 100, True, 1.0, steps=4)  # type: ignore[arg-type]
    assert best is unpaced and calls == [None]


def test_ip_rate_counts_headers() -> None:
    assert maxrate.ip_mbit(72.0, 100) == pytest.approx(100.0)


def test_table_one_layout() -> None:
    r = BenchResult("forwarding", baseline="native")
    for kind, rate in (("native", 400.0), ("vr1", 380.0)):
        for mode in maxrate.MODES:
            r.add(maxrate.metric(mode), kind, [rate, rate], x=1500)
            r.add(maxrate.rtt_metric("p50", mode), kind, [40.0, 40.0], x=1500)
    text = "\n".join(dp_summary.max_rate_table(r))
    assert "| vr1 | 1500 | one way | 380.0 | 0.950" in text
    assert "| native | 1500 | both ways | 400.0 |" in text and "– / 40 / –" in text
