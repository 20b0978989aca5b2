"""A reconcile reads vnet's own routes from their headers (rtquery.py) and asks pyroute2
to decode routes and rules only in namespaces that hold vnet's SRv6 routes or rules."""

from __future__ import annotations

from vnet.lab import lab as labmod
from vnet.lab.topology_file import load_topology
from vnet.substrate import Kernel, lab_placement, observe, realize

from .conftest import Labs


def test_routes_are_read_from_headers_and_match_the_lab(labs: Labs) -> None:
    name, path = labs.file("two-tenants.yaml")
    labmod.up(path)
    where = lab_placement(name)
    desired = realize(load_topology(path), where)
    assert desired.routes, "the example should hold gateway routes"
    with Kernel() as kernel:
        seen = observe(kernel, where.scope, where.prefix).state
        asked = dict(kernel.requests)
    assert seen.routes == desired.routes
    assert seen.rules == desired.rules and seen.steers == desired.steers == {}
    assert asked.get("routes", 0) == 0 and asked.get("rules", 0) == 0, asked
    assert asked["proto_routes"] > 0


def test_namespaces_read_by_a_worker_process_come_back_as_read_here(labs: Labs) -> None:
    """A large observation is shared with worker processes (observe.SHARE_FROM); here from
    the first namespace on: the same state, with fewer of this process's own requests."""
    name, path = labs.file("two-tenants.yaml")
    labmod.up(path)
    where = lab_placement(name)
    with Kernel() as kernel:
        alone = observe(kernel, where.scope, where.prefix, share_from=None)
        asked_alone = sum(kernel.requests.values())
    with Kernel() as kernel:
        shared = observe(kernel, where.scope, where.prefix, share_from=1)
        asked_shared = sum(kernel.requests.values())
    assert alone.state.links and alone.state.addresses and alone.state.routes
    assert shared.state == alone.state
    assert shared.remnants == alone.remnants
    assert asked_shared < asked_alone  # a share of the namespaces was read elsewhere
