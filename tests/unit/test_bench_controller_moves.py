"""The moves series of vnet bench controller without a lab: the plan's counts, the other
path a path modify takes, the link directions a rearrangement is measured on."""

from __future__ import annotations

import pytest

from vnet.bench.contract import OptionError
from vnet.bench.controller.moves import alternative_path, path_moves, situations
from vnet.bench.controller.plan import OPERATIONS, make_plan
from vnet.bench.progress import BenchOptions
from vnet.model.controller_api import ConnectionView, EndHostView, LinkView

QUICK = BenchOptions(True, 1.0, 1, None, None, True)
FULL = BenchOptions(False, 1.0, 3, None, None, True)


def link(a: str, b: str) -> LinkView:
    return LinkView(name=f"{a}-{b}", a=a, b=b, capacity_bps=10**9)


# examples/controller-40.yaml: a square h1-h2-h3-h4 with the diagonal h1-h3
SQUARE = [link("h1", "h2"), link("h2", "h3"), link("h3", "h4"), link("h4", "h1"), link("h1", "h3")]


def endhost(name: str, tenant: str | None, host: str) -> EndHostView:
    return EndHostView.model_validate(
        {"name": name, "tenant": tenant, "host": host, "network": "n"}
    )


def view(name: str, path: list[str]) -> ConnectionView:
    return ConnectionView.model_construct(name=name, tenant="red", path=path)


def test_the_moves_come_between_the_modifies_and_the_removes_with_counts_of_their_own() -> None:
    assert OPERATIONS == ("create", "modify", "move", "rearrange", "remove")
    full, quick = make_plan(FULL), make_plan(QUICK)
    assert (full.moves, full.rearranges) == (50, 10)
    assert 0 < quick.moves <= quick.creates and 0 < quick.rearranges < full.rearranges
    assert make_plan(FULL, moves=0, rearranges=3).rearranges == 3


def test_more_moves_than_creates_is_named() -> None:
    with pytest.raises(OptionError) as err:
        make_plan(FULL, creates=10, modifies=0, moves=11)
    assert err.value.option == "--moves"


def test_the_other_path_is_the_shortest_that_differs() -> None:
    assert alternative_path(SQUARE, ["h1", "h3"]) == ["h1", "h2", "h3"]
    assert alternative_path(SQUARE, ["h1", "h2", "h3"]) == ["h1", "h3"]
    assert alternative_path(SQUARE, ["h1", "h2"]) == ["h1", "h3", "h2"]
    assert alternative_path(SQUARE, ["h2", "h3", "h4"]) == ["h2", "h1", "h4"]  # ties: by name
    assert alternative_path(SQUARE, ["h2", "h1", "h4"]) == ["h2", "h3", "h4"]
    assert alternative_path([link("h1", "h2")], ["h1", "h2"]) is None  # one way only
    assert alternative_path(SQUARE, ["h1"]) is None  # both ends on one host


def test_path_moves_take_the_first_connections_that_can_move() -> None:
    views = [view("one-host", ["h1"]), view("a", ["h1", "h3"]), view("b", ["h2", "h3"])]
    moves = path_moves(views, SQUARE, 1)
    assert [(m.name, m.body.path) for m in moves] == [("a", ["h1", "h2", "h3"])]
    assert len(path_moves(views, SQUARE, 5)) == 2


def test_a_rearrangement_is_measured_on_each_link_direction_with_a_tenant_at_both_ends() -> None:
    hosts = [endhost("r1", "red", "h1"), endhost("r3", "red", "h3"), endhost("x", None, "h2")]
    found = situations(hosts, [link("h1", "h2"), link("h1", "h3")])
    assert [(s.link.name, s.forward, s.a.name, s.b.name) for s in found] == [
        ("h1-h3", True, "r1", "r3"),
        ("h1-h3", False, "r3", "r1"),
    ]
