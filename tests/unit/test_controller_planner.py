"""The controller's planner (issue 12, parts 4-5): requests to paths, demands and pieces.

Pure: an Inventory built in memory from tests/controller_topology_support.py (h1, h2, h3 in
a triangle; h1-h3 is the narrow 100 Mbit/s link), no database, no agent.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from tests.controller_topology_support import MBIT, data
from vnet.controller.admission.admit import Policy
from vnet.controller.admission.cost import Encapsulation, link_cost
from vnet.controller.db.models import ConnectionState
from vnet.controller.errors import BadRequest, Conflict, NotFound, Rejected
from vnet.controller.held import Held
from vnet.controller.inventory import Inventory, link_info, link_name
from vnet.controller.planner import Plan, plan_connection, plan_move, rearrange
from vnet.model import build_topology
from vnet.model.controller_api import ConnectionRequest, ModifyRequest
from vnet.model.host_pieces import connection_pieces

POLICY = Policy(margin=Fraction(5, 100), encapsulation=Encapsulation(vxlan="ipv4"))
NARROW = 99 * MBIT  # h1-h3: 100 Mbit/s less 1 % for management


def inventory(change: Any = None) -> Inventory:
    d = data()
    if change is not None:
        change(d)
    topo = build_topology(d)
    return Inventory(topo, {link_name(x): link_info(x) for x in topo.links})


INV = inventory()


def ask(**kw: Any) -> ConnectionRequest:
    fields = {"name": "video", "a": "pc1", "b": "pc3", "bandwidth": "10mbit", **kw}
    return ConnectionRequest(**fields)


def plan(request: ConnectionRequest, held: dict | None = None, inv: Inventory = INV) -> Plan:  # type: ignore[type-arg]
    return plan_connection(inv, held or {}, "acme", request, 7, 3, POLICY)


def cost(bandwidth: int, segments: int) -> int:
    return link_cost(bandwidth, 1500, POLICY.encapsulation, segments, POLICY.margin)


def held(request: ConnectionRequest, the_plan: Plan, ident: int, **kw: Any) -> Held:
    fields = {"state": ConnectionState.ESTABLISHED, "generation": 0, **kw}
    return Held(
        ident, ident, "acme", request, path=the_plan.path, demands=the_plan.demands, **fields
    )


def test_the_fewest_hops_path_with_the_models_own_pieces() -> None:
    request = ask(protocol="udp", dst_port=5004)
    got = plan(request)
    assert (got.path, got.routers) == (("h1", "h3"), ("r1", "r3"))
    assert got.demands == {("h1-h3", True): cost(10 * MBIT, 1)}
    lab = build_topology(
        {
            **data(),
            "connections": [
                {"name": "vc7", "id": 3, "a": "pc1", "b": "pc3", "protocol": "udp",
                 "dst_port": 5004, "bandwidth": "10mbit", "path": ["r1", "r3"]},
            ],
        }
    )  # fmt: skip
    theirs = connection_pieces(lab)
    assert [c.host for c in got.changes] == ["h1", "h3"]
    for change in got.changes:
        assert list(change.put) == theirs[change.host].connections
        assert set(change.locators) <= set(theirs[change.host].locators)
    assert got.hops[0].sid is None and got.hops[1].sid == got.segments[-1]


def test_an_explicit_path_gets_transit_pieces_and_two_segments() -> None:
    got = plan(ask(path=["h1", "h2", "h3"]))
    assert got.routers == ("r1", "r2", "r3")
    assert got.demands == {("h1-h2", True): cost(10 * MBIT, 2), ("h2-h3", True): cost(10 * MBIT, 2)}
    (transit,) = got.changes[1].put
    assert [t.router for t in transit.transit] == ["r2"] and not transit.ingress
    assert len(got.segments) == 2 and got.hops[1].sid == got.segments[0]
    assert all(piece.name == "vc7" and piece.id == 3 for c in got.changes for piece in c.put)


def test_a_two_way_connection_holds_both_directions() -> None:
    got = plan(ask(bidirectional=True))
    assert got.demands == {
        ("h1-h3", True): cost(10 * MBIT, 1),
        ("h1-h3", False): cost(10 * MBIT, 1),
    }
    for change in got.changes:
        (pieces,) = change.put
        assert pieces.ingress and pieces.egress  # each end starts one tunnel and ends the other


def test_a_full_link_sends_the_search_around_it() -> None:
    got = plan(ask(), held={("h1-h3", True): NARROW - 1})
    assert got.path == ("h1", "h2", "h3")
    back = plan(ask(), held={("h1-h3", False): NARROW})  # the other direction does not matter
    assert back.path == ("h1", "h3")
    two_way = plan(ask(bidirectional=True), held={("h1-h3", False): NARROW})
    assert two_way.path == ("h1", "h2", "h3")


def test_a_rejection_names_each_lacking_direction_and_by_how_much() -> None:
    need = cost(10 * MBIT, 1)
    with pytest.raises(Rejected) as refused:
        plan(ask(path=["h1", "h3"], bidirectional=True), held={("h1-h3", False): NARROW - 1000})
    (short,) = refused.value.shortfalls
    assert (short.link, short.direction, short.free_bps, short.missing_bps) == (
        "h1-h3",
        "h3 -> h1",
        1000,
        need - 1000,
    )
    assert refused.value.field == "path" and "h1-h3 (h3 -> h1) lacks" in refused.value.reason
    full = {("h1-h2", True): 980 * MBIT, ("h1-h3", True): NARROW, ("h2-h3", True): 0}
    with pytest.raises(Rejected) as nowhere:
        plan(ask(), held=full)
    assert [(s.link, s.direction) for s in nowhere.value.shortfalls] == [("h1-h3", "h1 -> h3")]
    assert nowhere.value.body().code == "no-capacity"


@pytest.mark.parametrize(
    ("request_", "error", "field", "message"),
    [
        (ask(a="nobody"), NotFound, "a", "tenant 'acme' has no end host 'nobody'"),
        (ask(b="opc"), NotFound, "b", "tenant 'acme' has no end host 'opc'"),  # other's
        (ask(b="pc1"), BadRequest, "b", "is a too"),
        (ask().model_copy(update={"bandwidth": 0}), BadRequest, "bandwidth", "must be positive"),
        (ask(bandwidth="2gbit"), BadRequest, "bandwidth", "more than any link can carry"),
        (ask(path=["h2", "h3"]), BadRequest, "path", "path\\[0\\] is 'h2', but 'pc1' is on"),
        (ask(path=["h1", "h2"]), BadRequest, "path", "path\\[-1\\] is 'h2', but 'pc3'"),
        (ask(path=["h1", "h9", "h3"]), NotFound, "path", "path\\[1\\]: unknown host 'h9'"),
        (ask(path=["h1", "h2", "h1", "h3"]), BadRequest, "path", "visits a host twice"),
    ],
)
def test_bad_requests_are_refused_precisely(
    request_: ConnectionRequest, error: type, field: str, message: str
) -> None:
    with pytest.raises(error, match=message) as refused:
        plan(request_)
    assert refused.value.field == field


def test_a_path_that_is_not_adjacent_or_lacks_vrs_is_refused() -> None:
    no_shortcut = inventory(lambda d: d["links"].pop(2))  # no h1-h3 link
    with pytest.raises(BadRequest, match="path\\[0\\] 'h1' and path\\[1\\] 'h3' share no link"):
        plan(ask(path=["h1", "h3"]), inv=no_shortcut)

    def no_r2(d: dict) -> None:  # type: ignore[type-arg]
        d["routers"].pop(1)
        d["endhosts"].pop(1)
        d["networks"].pop(2)

    without = inventory(no_r2)
    with pytest.raises(BadRequest, match="path\\[1\\] 'h2': tenant 'acme' has no VR there") as e:
        plan(ask(path=["h1", "h2", "h3"]), inv=without)
    assert e.value.field == "path"
    assert plan(ask(), held={("h1-h3", True): NARROW}, inv=inventory()).path == ("h1", "h2", "h3")
    with pytest.raises(Rejected):  # the search never goes through h2 without a VR of acme
        plan(ask(), held={("h1-h3", True): NARROW}, inv=without)
    with pytest.raises(BadRequest, match="no VR there"):  # what cannot be, before what is full
        plan(ask(path=["h1", "h2", "h3"]), held={("h1-h2", True): 990 * MBIT}, inv=without)


def test_a_modify_keeps_its_path_when_it_fits_there_counting_itself_once() -> None:
    first = ask(bandwidth="50mbit")
    current = held(first, plan(first), 1)
    grown = plan_move(INV, current.demands, current, ModifyRequest(bandwidth="70mbit"), POLICY)
    assert grown.path == ("h1", "h3")  # 50 + 70 would not fit; 70 alone does
    assert grown.demands == {("h1-h3", True): cost(70 * MBIT, 1)}
    too_big = plan_move(INV, current.demands, current, ModifyRequest(bandwidth="95mbit"), POLICY)
    assert too_big.path == ("h1", "h2", "h3")
    moved = plan_move(INV, current.demands, current, ModifyRequest(path=["h1", "h2", "h3"]), POLICY)
    assert moved.routers == ("r1", "r2", "r3") and moved.changes[0].put[0].name == "vc1"


def test_a_modify_that_changes_nothing_or_of_a_moving_connection_is_refused() -> None:
    current = held(ask(), plan(ask()), 1)
    with pytest.raises(BadRequest, match="gave neither"):  # the API refuses it first (422)
        plan_move(INV, {}, current, ModifyRequest.model_construct(), POLICY)
    for same in (ModifyRequest(bandwidth="10mbit"), ModifyRequest(bandwidth="10000000")):
        with pytest.raises(BadRequest, match="already has bandwidth 10000000 bit/s") as info:
            plan_move(INV, {}, current, same, POLICY)
        assert (info.value.status, info.value.code, info.value.field) == (
            400,
            "no-change",
            "bandwidth",
        )
    pinned = held(ask(path=["h1", "h3"]), plan(ask(path=["h1", "h3"])), 1)
    with pytest.raises(BadRequest, match="and path h1 -> h3") as info:
        plan_move(INV, {}, pinned, ModifyRequest(bandwidth="10mbit", path=["h1", "h3"]), POLICY)
    assert info.value.field == "bandwidth"
    # the same bandwidth with a path of its own, or a path pinned for the first time, changes
    assert plan_move(INV, {}, pinned, ModifyRequest(path=["h1", "h2", "h3"]), POLICY).path == (
        "h1",
        "h2",
        "h3",
    )
    assert plan_move(INV, {}, current, ModifyRequest(path=["h1", "h3"]), POLICY).path == (
        "h1",
        "h3",
    )
    moving = held(ask(), plan(ask()), 1, state=ConnectionState.MODIFYING)
    with pytest.raises(Conflict, match="is modifying"):
        plan_move(INV, {}, moving, ModifyRequest(bandwidth="1mbit"), POLICY)


def test_rearrangement_moves_a_connection_to_let_a_pinned_one_in() -> None:
    other = ask(name="bulk", a="pc1", b="pc3", bandwidth="60mbit")
    there = held(other, plan(other), 11)
    pinned = ask(bandwidth="60mbit", path=["h1", "h3"])
    done = rearrange(INV, [there], "acme", pinned, 12, 2, POLICY)
    (move,) = done.moves
    assert move.held is there and move.plan.path == ("h1", "h2", "h3")
    assert move.view().model_dump() == {
        "connection": "bulk",
        "tenant": "acme",
        "old_path": ["h1", "h3"],
        "new_path": ["h1", "h2", "h3"],
    }
    assert done.plan.path == ("h1", "h3") and done.plan.changes[0].put[0].name == "vc12"
    assert not rearrange(INV, [], "acme", pinned, 12, 2, POLICY).moves  # fits: no move


def test_rearrangement_never_moves_a_pinned_connection() -> None:
    other = ask(name="bulk", bandwidth="60mbit", path=["h1", "h3"])
    there = held(other, plan(other), 11)
    with pytest.raises(Rejected, match="rearrangement") as refused:
        rearrange(INV, [there], "acme", ask(bandwidth="60mbit", path=["h1", "h3"]), 12, 2, POLICY)
    assert [s.link for s in refused.value.shortfalls] == ["h1-h3"]
