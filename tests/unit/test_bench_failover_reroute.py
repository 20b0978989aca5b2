"""vnet bench failover's reroute variants without a lab: the controller's answers (link
states, connection histories, the ledger per link) into times and counts, those into the
goals' verdicts, and the options refused before anything starts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from vnet.bench.contract import OptionError
from vnet.bench.failover import CONTROLLER_EXAMPLE, FailoverBench
from vnet.bench.failover import timeline as tl
from vnet.bench.failover.goals import reroute_goals
from vnet.bench.failover.reroute import (
    FLAPPED,
    HANDLED_LAST,
    HOST,
    LEAKED,
    LINK,
    MOVE_LAST,
    OVER,
    STALE,
    Scene,
    scene_of,
)
from vnet.bench.failover.scenario import load
from vnet.bench.progress import BenchOptions
from vnet.bench.results import BenchResult
from vnet.model.controller_api import ConnectionEvent, ElementStatus, LinkDirection, LinkView

T0 = datetime(2026, 11, 27, 3, 0, 0, tzinfo=UTC)
QUICK = BenchOptions(True, 9.0, 1, None, None, True)


def at(ms: float) -> datetime:
    return T0 + timedelta(milliseconds=ms)


def link(name: str, state: str, since: datetime | None, reserved: tuple[int, int] = (0, 0)):
    a, b = name.split("-")
    return LinkView(
        name=name, a=a, b=b, capacity_bps=95_000_000,
        directions=[
            LinkDirection(direction=f"{a} -> {b}", reserved_bps=reserved[0], free_bps=0),
            LinkDirection(direction=f"{b} -> {a}", reserved_bps=reserved[1], free_bps=0),
        ],
        status=ElementStatus(state=state, since=since),
    )  # fmt: skip


def event(kind: str, ms: float, naive: bool = False, why: str = "") -> ConnectionEvent:
    moment = at(ms)
    return ConnectionEvent(
        at=moment.replace(tzinfo=None) if naive else moment, kind=kind, detail=why
    )


def test_the_controller_learns_of_the_failure_when_it_records_the_link_down() -> None:
    links = [
        link("h1-h2", "down", at(-5000)),  # down before this failure: not this one's news
        link("h1-h3", "down", at(120)),
        link("h2-h3", "up", at(-9000)),
    ]
    assert tl.learned_at(links, ["h1-h3"], T0) == at(120)
    # a host's failure: the first of its links the controller saw go down
    links[0] = link("h1-h2", "down", at(300))
    assert tl.learned_at(links, ["h1-h2", "h1-h3"], T0) == at(120)
    with pytest.raises(tl.NotLearned, match="h2-h3"):
        tl.learned_at(links, ["h2-h3"], T0)
    with pytest.raises(tl.NotLearned):  # down before the failure: not learned of it yet
        tl.learned_at([link("h1-h3", "down", at(-1))], ["h1-h3"], T0)


def test_each_connection_is_timed_from_learning_to_its_reroute_and_the_last_one_counts() -> None:
    histories = {
        "fo0": [event("created", -3000), event("rerouted", 150)],
        # SQLite hands back moments without a zone: they are UTC
        "fo1": [event("created", -2000, naive=True), event("rerouted", 420, naive=True)],
        "fo2": [event("created", -1000), event("degraded", 200, why="no room")],
        "fo3": [event("rerouted", -800)],  # an earlier run's move: not this failure's
        "fo4": [event("degraded", 180, why="h2 refused"), event("rerouted", 900)],  # moved later
    }
    found = tl.outcomes(histories, T0)
    figures = tl.figures(found, T0, learned=at(100))
    assert sorted(figures.moves) == pytest.approx([50.0, 320.0, 800.0])
    assert figures.handled_last == pytest.approx(420.0)  # fo4 was handled (degraded) at 180
    assert figures.degraded == 1  # fo2; fo4 was moved after
    assert figures.degraded_then_moved == 1  # fo4
    assert figures.reasons == ["h2 refused", "no room"]
    assert figures.unhandled == ["fo3"]
    assert found["fo4"].handled_at == at(180)


def test_a_path_change_after_the_return_is_a_flap_and_the_ledger_is_read_per_link() -> None:
    histories = {
        "fo0": [event("rerouted", 100)],
        "fo1": [event("rerouted", 100), event("moved", 2500)],
        "fo2": [event("rerouted", 100), event("rerouted", 2600)],
        "fo3": [event("degraded", 100), event("restored", 2600)],  # back where it was
    }
    assert tl.flapped(histories, at(2000)) == ["fo1", "fo2"]
    assert tl.flapped(histories, at(3000)) == []
    links = [
        link("h1-h3", "down", at(1), reserved=(0, 0)),
        link("h1-h2", "up", None, reserved=(95_000_001, 5)),
        link("h2-h3", "up", None, reserved=(40_000_000, 0)),
    ]
    assert tl.over_admitted_bps(links) == 1
    assert tl.reserved_bps(links, ["h1-h3"]) == 0
    assert tl.reserved_bps(links) == 135_000_006
    assert tl.over_admitted_bps(links[2:]) == 0
    assert tl.crosses(["h1", "h3"], [("h3", "h1")])
    assert not tl.crosses(["h1", "h2", "h3"], [("h1", "h3")])


def test_goals_judge_the_worst_run_at_each_size_and_any_leak() -> None:
    result = BenchResult.start("failover")
    for n, last in ((1, [40.0, 60.0]), (100, [300.0, 700.0])):
        result.add(MOVE_LAST, LINK, last, x=n)
        result.add(OVER, LINK, [0, 0], x=n)
        result.add(FLAPPED, LINK, [0, 0], x=n)
    result.add(LEAKED, LINK, [0, 0], x=1)
    result.add(STALE, HOST, [0], x=10)
    result.add(LEAKED, LINK, [0, 8000], x=100)
    result.add(HANDLED_LAST, HOST, [1500.0], x=10)
    goals = {g.goal: g for g in reroute_goals(result)}
    by_size = [g for name, g in goals.items() if name.startswith("every connection on the")]
    assert [(g.met, g.detail) for g in by_size] == [(True, "60 ms"), (False, "700 ms")]
    host = next(g for name, g in goals.items() if "powered off" in name)
    assert (host.met, host.detail) == (True, "1500 ms")
    assert goals["zero over-admission (every run)"].met is True
    stale = "zero reservation left on the failed element after the moves (every run)"
    assert goals[stale].met is True
    assert goals["zero leaked reservation (every run)"].met is False
    assert "8000" in goals["zero leaked reservation (every run)"].detail
    assert goals["zero connections moving back when the element returns (every run)"].met


def test_the_controller_lab_is_read_for_its_ends_failed_link_and_transit_host() -> None:
    scene = scene_of(load(CONTROLLER_EXAMPLE))
    assert scene == Scene("acme", "h1-h3", ("h1", "h3"), "h2", ("h1-h2", "h2-h3"))


def test_bad_options_are_refused_before_anything_starts(tmp_path: Path) -> None:
    bench = FailoverBench()
    plan = bench.plan(QUICK, variants="reroute-link", connections="1,10,100")
    assert (plan["routing"], plan["rerouting"], plan["sizes"]) == (
        [],
        ["reroute-link"],
        [1, 10, 100],
    )
    for connections in ("0", "1,x", "", "151"):
        with pytest.raises(OptionError) as err:
            bench.plan(QUICK, variants="reroute-link", connections=connections)
        assert err.value.option == "--connections"
    with pytest.raises(OptionError) as err:
        bench.plan(QUICK, variants="reroute-lnk")
    assert err.value.option == "--variants" and "reroute-link" in str(err.value)
    two_hosts = tmp_path / "two.yaml"
    two_hosts.write_text(
        "name: t\nhosts: [{name: h1}, {name: h3}]\nlinks: [{a: h1, b: h3}]\n"
        "networks: [{name: n, tenant: acme}]\n"
        "endhosts: [{name: pc1, host: h1, network: n}, {name: pc3, host: h3, network: n}]\n"
    )
    with pytest.raises(OptionError) as err:
        bench.plan(QUICK, variants="reroute-host", controller_file=two_hosts)
    assert err.value.option == "--controller-file"
