"""A commit's events name the VRs whose connection pieces changed: when only some
connections changed, only theirs are compared (routers_with_other_pieces), and the answer
is the one comparing every VR's pieces gives, over a random history of changes."""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest

from tests.unit.test_incremental_validation import tunnel
from vnet.agent.datastore.events import router_pieces, routers_with_other_pieces
from vnet.bench.agent.connection import P, base

SRV6 = f"{P}srv6"


def every_vr(old: dict[str, Any], new: dict[str, Any]) -> set[str]:
    before, after = router_pieces(old), router_pieces(new)
    return {vr for vr in before.keys() | after.keys() if before.get(vr) != after.get(vr)}


def changed(rng: random.Random, tree: dict[str, Any], step: int) -> dict[str, Any]:
    """`tree` with one or two connections made, changed (or put again as they were),
    deleted; now and then the connections reordered or a locator changed."""
    srv6 = dict(tree[SRV6])
    conns = list(srv6.get("connection", []))
    for _ in range(rng.choice([1, 1, 2])):
        action = rng.random()
        if action < 0.35 or not conns:
            conns.append(tunnel(rng, f"c{step}-{len(conns)}"))
        elif action < 0.55:
            k = rng.randrange(len(conns))
            conns[k] = tunnel(rng, conns[k]["name"])
        elif action < 0.65:
            k = rng.randrange(len(conns))
            conns[k] = copy.deepcopy(conns[k])  # equal, not shared
        elif action < 0.7:  # only the egress changes: the ingress VR's pieces stay
            k = rng.randrange(len(conns))
            egress = [{**conns[k]["egress"][0], "next-hop": "10.3.0.9"}]
            conns[k] = {**conns[k], "egress": egress}
        elif action < 0.9:
            conns.pop(rng.randrange(len(conns)))
        elif action < 0.95:
            rng.shuffle(conns)
        else:
            srv6["locator"] = list(reversed(srv6["locator"]))
    srv6["connection"] = conns
    return {**tree, SRV6: srv6}


@pytest.mark.parametrize("seed", range(3))
def test_the_vrs_with_other_pieces_are_those_comparing_every_vr_gives(seed: int) -> None:
    rng = random.Random(seed)
    tree = base()
    tree[SRV6] = {**tree[SRV6], "connection": [tunnel(rng, f"c{k}") for k in range(30)]}
    kinds: set[int] = set()
    for step in range(400):
        new = changed(rng, tree, step)
        found = routers_with_other_pieces(tree, new)
        assert found == every_vr(tree, new), step
        kinds.add(len(found))
        tree = new
    assert kinds >= {0, 1, 2}, "some changes moved no VR's pieces, some one, some both"
