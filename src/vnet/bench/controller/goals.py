"""Issue 12's goals for the controller, judged from the samples alone (per database).

- at 1 request at a time, create p50 <= 60 ms end to end (agents on two emulated hosts);
- at 100 simultaneous, >= 100 creates/s with p99 <= 1 s;
- the database's share of the controller's time <= 20 % (paper 001: 80-92 %);
- zero over-admission and zero leaked reservation in every round;
- and, the honesty rule: no run in which the latency grew as the run went on.
"""

from __future__ import annotations

from vnet.bench.contract import Goal
from vnet.bench.controller import record
from vnet.bench.controller.pace import GROWTH_LIMIT
from vnet.bench.results import BenchResult
from vnet.bench.stats import percentile, summarize

CREATE_P50_MS, CREATES_PER_S, CREATE_P99_MS, DB_SHARE_PERCENT = 60.0, 100.0, 1000.0, 20.0
SINGLE, MANY = 1, 100
SIM_PATH_P99_MS, FLAT_COST = 50.0, 1.2


def _samples(result: BenchResult, metric: str, series: str, x: int) -> list[float]:
    m = result.get(metric, series, x)
    return list(m.samples) if m is not None else []


def _single(result: BenchResult, db: str) -> Goal:
    name = f"{db}: create p50 <= {CREATE_P50_MS:g} ms at {SINGLE} request at a time"
    samples = _samples(result, record.time_metric("create"), db, SINGLE)
    if not samples:
        return Goal(name, None, "no samples")
    p50 = percentile(samples, 50)
    return Goal(name, p50 <= CREATE_P50_MS, f"{p50:.1f} ms (n = {len(samples)})")


def _many(result: BenchResult, db: str) -> list[Goal]:
    rate_name = f"{db}: >= {CREATES_PER_S:g} creates/s at {MANY} simultaneous"
    p99_name = f"{db}: create p99 <= {CREATE_P99_MS:g} ms at {MANY} simultaneous"
    rates = _samples(result, record.throughput_metric("create"), db, MANY)
    times = _samples(result, record.time_metric("create"), db, MANY)
    if not rates or not times:
        return [Goal(rate_name, None, "not measured"), Goal(p99_name, None, "not measured")]
    creates = result.parameters.get("creates") or 0
    # 100 creates at 100 simultaneous is one burst, not a sustained load: said, not hidden
    burst = " (one burst per round, not sustained)" if creates < 3 * MANY else ""
    rate = summarize(rates).mean
    p99 = percentile(times, 99)
    return [
        Goal(rate_name, rate >= CREATES_PER_S, f"{rate:.1f} creates/s mean{burst}"),
        Goal(p99_name, p99 <= CREATE_P99_MS, f"{p99:.0f} ms (n = {len(times)})"),
    ]


def _share(result: BenchResult, db: str) -> Goal:
    name = f"{db}: database share of the controller's time <= {DB_SHARE_PERCENT:g} %"
    worst: tuple[float, str] | None = None
    for op in ("create", "modify", "remove"):
        for m in result.measurements_of(record.share_metric(op)):
            if m.series == db and m.samples:
                mean = summarize(m.samples).mean
                if worst is None or mean > worst[0]:
                    worst = (mean, f"{op} at {m.x}")
    if worst is None:
        return Goal(name, None, "no samples")
    return Goal(name, worst[0] <= DB_SHARE_PERCENT, f"at most {worst[0]:.1f} % ({worst[1]})")


def _integrity(result: BenchResult, db: str) -> Goal:
    name = f"{db}: zero over-admission and zero leaked reservation in every round"
    rounds = [m for m in result.measurements_of(record.VIOLATIONS) if m.series == db]
    samples = [v for m in rounds for v in m.samples]
    if not samples:
        return Goal(name, None, "no round checked")
    bad = sum(samples)
    return Goal(name, bad == 0, f"{bad:g} violation(s) in {len(samples)} round(s)")


def _steady(result: BenchResult, db: str) -> Goal:
    name = f"{db}: latency steady through every run (the controller kept up)"
    grown = [
        (m.metric, m.x, max(m.samples))
        for op in ("create", "modify", "remove")
        for m in result.measurements_of(record.growth_metric(op))
        if m.series == db and m.samples
    ]
    if not grown:
        return Goal(name, None, "no run long enough to judge (bursts only)")
    behind = [g for g in grown if g[2] > GROWTH_LIMIT]
    if behind:
        where = ", ".join(f"{metric} at {x}: x{worst:.2f}" for metric, x, worst in behind)
        return Goal(name, False, f"fell behind: {where}")
    detail = f"last third within x{GROWTH_LIMIT:g} of the first in {len(grown)} run(s)"
    return Goal(name, True, detail)


def goals(result: BenchResult) -> list[Goal]:
    found: list[Goal] = []
    for db in result.parameters.get("databases") or []:
        found += [_single(result, db), *_many(result, db), _share(result, db)]
        found += [_integrity(result, db), _steady(result, db)]
    return found


def violations(result: BenchResult) -> int:
    """Over-admissions and leaks found in the whole run (any database, either southbound)."""
    from vnet.bench.controller.simulated import VIOLATIONS as SIM_VIOLATIONS

    return int(
        sum(
            v
            for metric in (record.VIOLATIONS, SIM_VIOLATIONS)
            for m in result.measurements_of(metric)
            for v in m.samples
        )
    )


def simulated_goals(result: BenchResult) -> list[Goal]:
    """Per series of `--southbound simulated`: path computation p99 <= 50 ms, the last step's
    creates within 1.2x of the first's, zero over-admission and leaked reservation."""
    from vnet.bench.controller import simulated as sim

    found: list[Goal] = []
    for series in sorted({m.series for m in result.measurements_of(sim.TIME)}):
        paths = [
            v for m in result.measurements_of(sim.PATH) if m.series == series for v in m.samples
        ]
        name = f"{series}: path computation p99 <= {SIM_PATH_P99_MS:g} ms"
        if paths:
            p99 = percentile(paths, 99)
            found.append(Goal(name, p99 <= SIM_PATH_P99_MS, f"{p99:.1f} ms (n = {len(paths)})"))
        else:
            found.append(Goal(name, None, "no samples"))
        growth = result.get(sim.GROWTH, series)
        name = f"{series}: last step of creates <= {FLAT_COST:g}x the first"
        if growth is None or not growth.samples:
            found.append(Goal(name, None, "one step only"))
        else:
            g = growth.samples[0]
            found.append(Goal(name, g <= FLAT_COST, f"x{g:.2f}"))
        bad = [
            v
            for m in result.measurements_of(sim.VIOLATIONS)
            if m.series == series
            for v in m.samples
        ]
        name = f"{series}: zero over-admission and zero leaked reservation"
        found.append(Goal(name, None if not bad else sum(bad) == 0, f"{sum(bad):g} violation(s)"))
    return found
