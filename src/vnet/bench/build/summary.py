"""The build benchmark's figures, from its samples alone."""

from __future__ import annotations

from typing import Any

from vnet.bench.build import FLOOR, SERIES
from vnet.bench.results import BenchResult
from vnet.bench.stats import percentile


def _samples(result: BenchResult, metric: str, series: str = SERIES) -> list[float]:
    m = result.get(metric, series)
    return list(m.samples) if m is not None else []


def summarize(result: BenchResult) -> dict[str, Any]:
    """Best-of-runs times, per-VR percentiles and counts (the headline's figures)."""
    up, down = _samples(result, "up"), _samples(result, "down")
    floor = _samples(result, "up", FLOOR)
    per_vr = _samples(result, "per VR")
    return {
        "vrs": result.parameters["vrs"],
        "hosts": result.parameters["hosts"],
        "repeat": len(up),
        "up_seconds": min(up),
        "down_seconds": min(down),
        "up_seconds_runs": up,
        "floor_up_seconds": min(floor) if floor else None,
        "down_seconds_runs": down,
        "per_vr_p50_ms": percentile(per_vr, 50) if per_vr else None,
        "per_vr_p99_ms": percentile(per_vr, 99) if per_vr else None,
        "peak_rss_mb": max(_samples(result, "peak RSS")),
        "ops_up": int(_samples(result, "operations up")[0]),
        "ops_down": int(_samples(result, "operations down")[0]),
        "reapply_ops": int(max(_samples(result, "re-apply operations"))),
        # after `down` returns, the kernel keeps destroying namespaces for this long
        "kernel_settle_seconds": max(_samples(result, "kernel settle")),
    }


def headline(result: BenchResult) -> str:
    s = summarize(result)
    p50, p99 = s["per_vr_p50_ms"], s["per_vr_p99_ms"]
    floor = s["floor_up_seconds"]
    versus = f" = {s['up_seconds'] / floor:.2f}x ip -batch {floor:.3f} s" if floor else ""
    return (
        f"{s['vrs']} VRs: up {s['up_seconds']:.3f} s{versus} ({s['ops_up']} operations), "
        f"down {s['down_seconds']:.3f} s "
        f"(kernel busy {s['kernel_settle_seconds']:.1f} s more); "
        f"per VR p50 {p50 or 0:.2f} ms, p99 {p99 or 0:.2f} ms; "
        f"peak RSS {s['peak_rss_mb']:.0f} MB; "
        f"re-apply planned {s['reapply_ops']} operation(s)"
    )
