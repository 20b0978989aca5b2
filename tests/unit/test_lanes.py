"""How a plan is cut into runs and lanes (substrate/lanes.py): pure, no kernel."""

from __future__ import annotations

from vnet.substrate.address import AddAddress, Address
from vnet.substrate.lanes import MIN_RUN, runs, split
from vnet.substrate.route import AddRoute, DeleteRoute, Route


def addresses(n: int) -> list[AddAddress]:
    return [AddAddress(Address(f"ns{i}", "eth0", f"10.0.{i}.1/24")) for i in range(n)]


def test_a_run_ends_at_an_operation_that_runs_alone_or_of_another_kind() -> None:
    lone = DeleteRoute(Route("ns0", "10.9.0.0/24", "10.0.0.2"))
    route = AddRoute(Route("ns0", "10.8.0.0/24", "10.0.0.2"))
    ops = [*addresses(3), lone, *addresses(2), route]
    cut = [[op for _, op in run] for run in runs(ops)]
    assert cut == [ops[:3], [lone], ops[4:6], [route]]
    assert [i for run in runs(ops) for i, _ in run] == list(range(len(ops)))


def test_a_short_run_stays_in_one_lane_a_long_one_is_shared_evenly() -> None:
    short = list(enumerate(addresses(MIN_RUN - 1)))
    assert split(short, 2) == [short]
    long = list(enumerate(addresses(MIN_RUN * 2 + 1)))
    lanes = split(long, 2)
    assert sorted(len(lane) for lane in lanes) == [MIN_RUN, MIN_RUN + 1]
    assert sorted(step for lane in lanes for step in lane) == long


def test_the_routes_of_one_namespace_keep_their_order_in_one_lane() -> None:
    routes = [
        AddRoute(Route(f"ns{i % 3}", f"10.{i}.0.0/24", f"192.0.2.{i % 3}"))
        for i in range(MIN_RUN * 2)
    ]
    lanes = split(list(enumerate(routes)), 2)
    for lane in lanes:
        for ns in {op.route.ns for _, op in lane}:
            mine = [i for i, op in lane if op.route.ns == ns]
            assert mine == sorted(mine)
            assert len(mine) == sum(1 for op in routes if op.route.ns == ns), "split apart"
