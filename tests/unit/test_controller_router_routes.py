"""A VR created through the API gets routes to its tenant's other VRs' SRv6 locators, and
they to its, in the same transaction: without them a connection between VRs made by the
API had segments that led nowhere (its flow was dropped at the first hop)."""

from __future__ import annotations

from typing import Any

from vnet.controller.service.inventory import _router_edits
from vnet.controller.southbound import AddRoutes, CreateRouter, InventoryEdit
from vnet.model.topology import Topology


def seen_of(edits: list[InventoryEdit]) -> list[tuple[str, Any, Any]]:
    """Each edit as (kind, VR, the routes' destinations)."""
    out: list[tuple[str, Any, Any]] = []
    for edit in edits:
        if isinstance(edit, CreateRouter):
            routes = edit.router.routes
            out.append(("create", edit.router.name, sorted(str(r.destination) for r in routes)))
        elif isinstance(edit, AddRoutes):
            out.append(("add", edit.router, sorted(str(r.destination) for r in edit.routes)))
    return out


def topology(routers: list[dict[str, Any]]) -> Topology:
    return Topology.model_validate(
        {
            "name": "t",
            "hosts": [{"name": h} for h in ("r1", "r2", "r3")],
            "networks": [
                {
                    "name": "core",
                    "tenant": "acme",
                    "vni": 500,
                    "ipv4": "10.50.0.0/24",
                    "ipv6": "fd00:50::/64",
                }
            ],
            "routers": routers,
        }
    )


def vr(k: int) -> dict[str, Any]:
    itf = {"network": "core", "ipv4": f"10.50.0.{k}/24", "ipv6": f"fd00:50::{k}/64"}
    return {"name": f"v{k}", "host": f"r{k}", "interfaces": [itf]}


def test_the_new_vr_and_its_neighbours_get_routes_to_each_others_locators() -> None:
    topo = topology([vr(1), vr(2), vr(3)])
    edits = _router_edits(topo, topo.routers[2])
    assert sorted(edits) == ["r1", "r2", "r3"]
    seen = {host: seen_of(host_edits) for host, host_edits in edits.items()}
    # static routing: each to its direct neighbours on core (fc00:1:<n>::/48 per VR)
    assert seen["r3"] == [("create", "v3", ["fc00:1:1::/48", "fc00:1:2::/48"])]
    assert seen["r1"] == [("add", "v1", ["fc00:1:2::/48", "fc00:1:3::/48"])]
    assert seen["r2"] == [("add", "v2", ["fc00:1:1::/48", "fc00:1:3::/48"])]


def test_a_tenant_without_ipv6_gets_the_vr_alone() -> None:
    topo = topology([vr(1)])
    bare = topo.routers[0].model_copy(
        update={"interfaces": [topo.routers[0].interfaces[0].model_copy(update={"ipv6": None})]}
    )
    topo = topo.model_copy(update={"routers": [bare]})
    edits = _router_edits(topo, bare)
    assert list(edits) == ["r1"] and seen_of(edits["r1"]) == [("create", "v1", [])]
