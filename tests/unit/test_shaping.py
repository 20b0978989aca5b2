"""The steady part of a measured flow is found from the shaper's own counter."""

from __future__ import annotations

from vnet.lab.shaping import ClassSample, steady_window


def samples(start: float, stop: float, rate: float, until: float) -> list[ClassSample]:
    """A counter read every 50 ms; bytes flow at `rate` between `start` and `stop`."""
    out = []
    t = 0.0
    while t <= until + 1e-9:
        moved = max(0.0, min(t, stop) - start) * rate
        out.append(ClassSample(t, int(moved), 0, 0))
        t = round(t + 0.05, 3)
    return out


def test_a_late_start_does_not_dilute_the_rate() -> None:
    # iperf3 needed 0.6 s to start: a window fixed to the launch would see 0 bytes first
    window = steady_window(samples(0.6, 2.0, 1000.0, 2.5), warm=0.3, tail=0.2)
    assert window is not None
    a, b = window
    assert a.t >= 0.9 and b.t <= 1.8
    assert (b.bytes - a.bytes) / (b.t - a.t) == 1000.0


def test_no_traffic_or_too_short_gives_no_window() -> None:
    assert steady_window(samples(5.0, 6.0, 1.0, 2.0), warm=0.3, tail=0.2) is None
    assert steady_window(samples(0.0, 0.4, 1000.0, 1.0), warm=0.3, tail=0.2) is None
