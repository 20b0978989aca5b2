"""vnet bench controller, its pure parts: the plan, Server-Timing, the request schedule,
the integrity checks, the falling-behind judgement, the metrics, goals and figures."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from vnet.bench.contract import OptionError
from vnet.bench.controller import ControllerBench, IntegrityError, checks, record
from vnet.bench.controller.driver import Answer
from vnet.bench.controller.figures import write_figures
from vnet.bench.controller.goals import goals, violations
from vnet.bench.controller.pace import pace
from vnet.bench.controller.plan import PAPER_CONCURRENCY, make_plan
from vnet.bench.controller.schedule import ScheduleError, make_round, peers
from vnet.bench.controller.timing import ServerTimingError, split
from vnet.bench.progress import BenchOptions
from vnet.bench.results import BenchResult
from vnet.cli.bench_cmds import make_command
from vnet.model.controller_api import ConnectionView, EndHostView, LinkDirection, LinkView

QUICK = BenchOptions(True, 1.0, 1, None, None, True)
FULL = BenchOptions(False, 1.0, 3, None, None, True)
HEADER = "db;dur=1.5, path;dur=0.5, devices;dur=40, api;dur=1"


# -- plan ------------------------------------------------------------------------------------
def test_the_full_plan_is_the_papers_and_quick_is_small_on_sqlite() -> None:
    full, quick = make_plan(FULL), make_plan(QUICK)
    assert (full.creates, full.modifies, full.concurrency) == (100, 50, PAPER_CONCURRENCY)
    assert full.databases == ("sqlite", "postgresql") and full.repeat == 3
    assert quick.databases == ("sqlite",) and quick.creates < 20 and max(quick.concurrency) < 10
    assert full.topology.name == "controller-40.yaml"


def test_options_are_parsed_and_sorted() -> None:
    plan = make_plan(FULL, databases="postgresql", concurrency="10,1", bandwidth="5mbit")
    assert plan.databases == ("postgresql",) and plan.concurrency == (1, 10)
    assert plan.bandwidth_bps == 5_000_000 and plan.modified_bps == 2_000_000


@pytest.mark.parametrize(
    ("options", "flag"),
    [
        ({"databases": "sqlite,oracle"}, "--databases"),
        ({"concurrency": "0"}, "--concurrency"),
        ({"concurrency": "ten"}, "--concurrency"),
        ({"creates": 10, "modifies": 11}, "--modifies"),
        ({"bandwidth": "fast"}, "--bandwidth"),
        ({"modified": "0mbit"}, "--modified"),
    ],
)
def test_a_bad_option_is_named(options: dict[str, Any], flag: str) -> None:
    with pytest.raises(OptionError) as err:
        make_plan(FULL, **options)
    assert err.value.option == flag


# -- Server-Timing ---------------------------------------------------------------------------
def test_the_split_adds_up_to_the_clients_time() -> None:
    s = split(HEADER, 50.0)
    assert (s.api, s.db, s.path, s.devices) == (1.0, 1.5, 0.5, 40.0)
    assert s.server == 43.0 and s.other == pytest.approx(7.0)
    assert sum(s.part(p) for p in ("api", "db", "path", "devices", "other")) == 50.0


def test_a_server_slower_than_the_client_clock_leaves_no_negative_rest() -> None:
    assert split(HEADER, 40.0).other == 0.0


@pytest.mark.parametrize("header", [None, "", "db;dur=1, path;dur=1, api;dur=1", "db, path"])
def test_a_header_without_every_part_is_an_error(header: str | None) -> None:
    with pytest.raises(ServerTimingError, match="lacks"):
        split(header, 10.0)


# -- schedule --------------------------------------------------------------------------------
def endhost(name: str, tenant: str, host: str) -> EndHostView:
    return EndHostView(tenant=tenant, name=name, host=host, network="n")


HOSTS = [
    endhost("a1", "acme", "h1"),
    endhost("a2", "acme", "h1"),
    endhost("a3", "acme", "h2"),
    endhost("b1", "beta", "h3"),
    endhost("b2", "beta", "h3"),
    endhost("c1", "solo", "h4"),
]


def test_peers_are_the_tenants_end_hosts_on_other_hosts_when_there_are_any() -> None:
    found = {a: sorted(b.name for b in bs) for a, bs in peers(HOSTS).items()}
    assert found == {"a1": ["a3"], "a2": ["a3"], "a3": ["a1", "a2"], "b1": ["b2"], "b2": ["b1"]}


def test_a_round_is_random_but_repeatable_and_stays_within_tenants() -> None:
    one = make_round(HOSTS, "s0c1", 30, 10, 1_000_000, 2_000_000, random.Random(7))
    two = make_round(HOSTS, "s0c1", 30, 10, 1_000_000, 2_000_000, random.Random(7))
    assert one == two
    tenant = {e.name: e.tenant for e in HOSTS}
    names = [c.body.name for c in one.creates]
    assert len(set(names)) == 30 and all(len(n) <= 32 for n in names)
    assert len({c.key for c in one.creates}) == 30
    for c in one.creates:
        assert tenant[c.body.a] == tenant[c.body.b] == c.tenant and c.body.a != c.body.b
        assert c.body.bandwidth == 1_000_000 and c.body.protocol == "udp"
    # a flow of its own each: two connections steering one 5-tuple would be refused
    assert len({(c.body.a, c.body.b, c.body.dst_port) for c in one.creates}) == 30
    assert len({c.body.dst_port for c in one.creates}) == 30
    assert [m.name for m in one.modifies] == names[:10]
    assert all(m.body.bandwidth == 2_000_000 for m in one.modifies)
    assert sorted(r.name for r in one.removes) == sorted(names)


def test_no_tenant_with_two_end_hosts_is_an_error() -> None:
    with pytest.raises(ScheduleError):
        make_round([endhost("c1", "solo", "h4")], "x", 3, 1, 1, 1, random.Random(1))


# -- integrity checks ------------------------------------------------------------------------
def link(name: str, capacity: int, *reserved: int) -> LinkView:
    directions = [
        LinkDirection(direction=f"d{i}", reserved_bps=r, free_bps=capacity - r)
        for i, r in enumerate(reserved)
    ]
    return LinkView(name=name, a="h1", b="h2", capacity_bps=capacity, directions=directions)


def test_over_admission_names_the_link_direction_and_the_excess() -> None:
    found = checks.over_admission([link("l1", 100, 100, 0), link("l2", 100, 101, 5)])
    assert [str(v) for v in found] == [
        "over-admission on link l2 (d0): 101 bit/s held on 100 (1 over)"
    ]


def test_negative_free_capacity_is_over_admission_too() -> None:
    bad = link("l1", 100, 50)
    bad.directions[0].free_bps = -1
    assert len(checks.over_admission([bad])) == 1


def connection(name: str, status: str = "established") -> ConnectionView:
    return ConnectionView(tenant="acme", name=name, status=status, a="a1", b="a3", bandwidth=1)  # type: ignore[arg-type]


def test_a_leak_is_a_reservation_held_or_one_of_our_connections_live() -> None:
    links = [link("l1", 100, 0, 0), link("l2", 100, 0, 7)]
    live = [connection("bench-1"), connection("theirs"), connection("bench-2", "released")]
    found = checks.leaks(links, live, ["bench-1", "bench-2"])
    assert [v.where for v in found] == ["link l2 (d1)", "connection acme/bench-1"]
    assert checks.leaks([link("l1", 100, 0, 0)], [connection("theirs")], ["bench-1"]) == []
    assert checks.held_bps(links) == 7


# -- falling behind --------------------------------------------------------------------------
def test_a_steady_run_is_steady() -> None:
    p = pace([(float(i), 10.0 + (i % 3)) for i in range(30)], concurrency=1)
    assert p.verdict == "steady" and not p.behind and p.growth == pytest.approx(1.0)


def test_latency_growing_through_the_run_is_falling_behind() -> None:
    sent = [(float(i), 10.0 + 2 * i) for i in range(30)]
    random.Random(3).shuffle(sent)  # judged by the time sent, not by the list's order
    p = pace(sent, concurrency=10)
    assert p.behind and p.growth > 3 and "falling behind" in p.describe()
    assert "one request in flight" not in p.describe()
    alone = pace(sent, concurrency=1)
    assert alone.behind and "with one request in flight: each cost more" in alone.describe()


def test_every_request_at_once_is_a_burst_not_a_steady_figure() -> None:
    p = pace([(0.0, float(ms)) for ms in range(1, 101)], concurrency=100)
    assert p.verdict == "burst" and not p.behind
    assert p.first_ms < 20 and p.last_ms > 80 and "place in the line" in p.describe()


def test_pace_needs_three_requests() -> None:
    with pytest.raises(ValueError):
        pace([(0.0, 1.0), (1.0, 1.0)], 1)


# -- metrics and goals -----------------------------------------------------------------------
def answers(ms: list[float], db: float = 1.0, start: float = 0.0, gap: float = 0.0) -> list[Answer]:
    made = []
    for i, e2e in enumerate(ms):
        sent = start + i * gap
        header = f"api;dur=1, db;dur={db}, path;dur=1, devices;dur=5"
        made.append(Answer(f"c{i}", sent, sent + e2e / 1000, 201, split(header, e2e)))
    return made


def measured(*, leak: int = 0, creates: int = 100) -> BenchResult:
    result = BenchResult.start(
        "controller", parameters={"databases": ["sqlite"], "creates": creates}
    )
    record.declare(result)
    for op in ("create", "modify", "remove"):
        record.add_answers(result, "sqlite", op, 1, answers([20.0] * 9, gap=0.02))
        burst = answers([100.0 + i for i in range(100)])
        refused = [Answer("x", 0.0, 0.1, 409, None, "no-capacity")]
        record.add_answers(result, "sqlite", op, 100, [*burst, *refused])
    record.add_violations(result, "sqlite", 1, leak)
    return result


def test_answers_become_times_splits_throughput_share_and_refusals() -> None:
    result = measured()
    create = result.get(record.time_metric("create"), "sqlite", 100)
    assert create is not None and len(create.samples) == 100  # the refusal is no time
    devices = result.get(record.split_metric("create"), "sqlite devices", 1)
    assert devices is not None and devices.samples == [5.0] * 9
    share = result.get(record.share_metric("create"), "sqlite", 1)
    assert share is not None and share.samples == [pytest.approx(12.5)]  # 1 of 8 ms
    refusals = result.get(record.REFUSALS, "sqlite create", 100)
    failed = result.get(record.FAILED, "sqlite create", 100)
    assert refusals is not None and refusals.samples == [1.0]
    assert failed is not None and failed.samples == [0.0]
    # the burst has no growth figure, the steady run has one
    assert result.get(record.growth_metric("create"), "sqlite", 100) is None
    assert result.get(record.growth_metric("create"), "sqlite", 1) is not None


def test_goals_are_judged_per_database_and_a_burst_is_said_to_be_one() -> None:
    judged = {g.goal: g for g in goals(measured())}
    assert judged["sqlite: create p50 <= 60 ms at 1 request at a time"].met is True
    rate = judged["sqlite: >= 100 creates/s at 100 simultaneous"]
    assert rate.met is True and "one burst" in rate.detail
    assert judged["sqlite: create p99 <= 1000 ms at 100 simultaneous"].met is True
    assert judged["sqlite: database share of the controller's time <= 20 %"].met is True
    integrity = judged["sqlite: zero over-admission and zero leaked reservation in every round"]
    assert integrity.met is True
    assert judged["sqlite: latency steady through every run (the controller kept up)"].met


def test_a_violation_misses_the_integrity_goal_and_is_counted() -> None:
    result = measured(leak=2)
    assert violations(result) == 2
    missed = [g for g in goals(result) if g.met is False]
    assert [g.goal for g in missed] == [
        "sqlite: zero over-admission and zero leaked reservation in every round"
    ]


def test_a_run_that_falls_behind_misses_the_steadiness_goal() -> None:
    result = BenchResult.start("controller", parameters={"databases": ["postgresql"]})
    grow = answers([10.0 + 5 * i for i in range(30)], gap=0.1)
    record.add_answers(result, "postgresql", "remove", 1, grow)
    (steady,) = [g for g in goals(result) if "steady" in g.goal]
    assert steady.met is False and "remove latency growth at 1" in steady.detail


def test_a_database_not_measured_is_not_judged() -> None:
    result = BenchResult.start("controller", parameters={"databases": ["postgresql"]})
    assert all(g.met is None for g in goals(result))


def test_the_figures_are_written_per_operation(tmp_path: Path) -> None:
    result = measured()
    result.parameters["concurrency"] = [1, 100]
    made = write_figures(result, tmp_path)
    assert [p.name for p in made] == ["split-create.png", "split-modify.png", "split-remove.png"]
    assert all(p.stat().st_size > 1000 for p in made)


# -- the command: a violation fails the run after the report is written ----------------------
class Recorded(ControllerBench):
    """The controller bench's reporting, on samples recorded without a lab."""

    needs_root = False
    leak = 0

    def plan(self, common: BenchOptions, **options: Any) -> Any:
        return None

    def run(self, plan: Any, common: BenchOptions) -> BenchResult:
        result = measured(leak=self.leak)
        result.parameters["concurrency"] = [1, 100]
        return result


class Leaking(Recorded):
    leak = 1


@pytest.mark.slow  # a whole (small) bench run with its figures: not in `make check`
def test_a_clean_run_passes_and_writes_the_papers_figures(tmp_path: Path) -> None:
    done = CliRunner().invoke(make_command(Recorded), ["--out", str(tmp_path)])
    assert done.exit_code == 0, done.output
    assert (tmp_path / "split-create.png").exists() and (tmp_path / "report.md").exists()
    assert "controller goals: 6 met, 0 MISSED" in done.output


@pytest.mark.slow  # a whole (small) bench run with its figures: not in `make check`
def test_a_leak_fails_the_run_after_the_report_is_written(tmp_path: Path) -> None:
    done = CliRunner().invoke(make_command(Leaking), ["--out", str(tmp_path)])
    assert done.exit_code == 1
    assert "1 over-admission/leak violation(s)" in done.output
    assert (tmp_path / "results.json").exists() and (tmp_path / "split-remove.png").exists()
    assert issubclass(IntegrityError, Exception)


# -- the driver, against a stand-in for the controller's HTTP API ----------------------------
class StandIn:
    """Answers the connection routes after 20 ms, counts how many were in flight at once,
    refuses connection 7 for lack of capacity, and forgets the Server-Timing on `bare`."""

    def __init__(self) -> None:
        self.in_flight = self.most = 0
        self.seen: list[tuple[str, str, str | None]] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        import asyncio

        if scope["type"] != "http":
            return
        headers = dict(scope["headers"])
        key = headers.get(b"idempotency-key")
        self.seen.append((scope["method"], scope["path"], key.decode() if key else None))
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        await asyncio.sleep(0.02)
        self.in_flight -= 1
        status = 409 if scope["path"].endswith("-7") or b"-7-" in (key or b"") else 200
        extra = [] if "bare" in scope["path"] else [(b"server-timing", HEADER.encode())]
        await send({"type": "http.response.start", "status": status, "headers": extra})
        await send({"type": "http.response.body", "body": b"{}"})


@pytest.fixture
def stand_in() -> Any:
    import socket
    import threading

    import uvicorn

    app = StandIn()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="error", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        threading.Event().wait(0.01)
    try:
        yield app, f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


def test_the_driver_keeps_c_requests_in_flight_and_times_each(stand_in: Any) -> None:
    from vnet.bench.controller.driver import Access, drive, span

    app, url = stand_in
    round_ = make_round(HOSTS, "t", 20, 5, 1_000_000, 2_000_000, random.Random(1))
    found = drive(Access(url, "token", None), round_.creates, 5)
    assert app.most == 5 and len(found) == 20
    assert {a.name for a in found} == {c.body.name for c in round_.creates}
    refused = [a for a in found if a.status == 409]
    assert [a.name for a in refused] == ["bench-t-7"] and refused[0].split is None
    ok = [a for a in found if a.split is not None]
    assert all(a.split.end_to_end >= 20 and a.split.devices == 40 for a in ok if a.split)
    assert 0.08 <= span(found) < 2  # 20 requests of 20 ms, 5 at a time: 4 rounds at least
    posts = [s for s in app.seen if s[0] == "POST"]
    tenants = {c.tenant for c in round_.creates}
    assert {path for _, path, _ in posts} == {f"/api/v1/tenants/{t}/connections" for t in tenants}
    assert len({key for _, _, key in posts}) == 20


def test_the_driver_says_which_answer_had_no_timing(stand_in: Any) -> None:
    from vnet.bench.controller.driver import Access, drive
    from vnet.bench.controller.schedule import Remove

    app, url = stand_in
    found = drive(Access(url, "token", None), [Remove("acme", "bare")] * 3, 1)
    assert app.most == 1 and [a.status for a in found] == [200] * 3
    assert all(a.split is None and "lacks" in (a.error or "") for a in found)
