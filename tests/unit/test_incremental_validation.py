"""The datastore's incremental checks (incremental.py) against the full ones: over a long
random history of edits, valid and not (a taken address, index or name, an unknown
network, a bad route), each candidate is accepted or refused exactly as the full checks
do it, with their message and path, and an accepted one has the same HostConfig and the
same desired kernel state (realised from the previous one) as realize_host gives."""

from __future__ import annotations

import random
import tempfile
from pathlib import Path
from typing import Any

import pytest

from vnet.agent.datastore import validation
from vnet.model.agent_config import AgentConfig, User
from vnet.model.yang.errors import RpcError
from vnet.model.yang.module import NETWORKS, ROUTERS
from vnet.substrate import Placement, realize_host

Tree = dict[str, Any]
NETS = {
    "network": [
        {"name": "n1", "tenant": "a", "vni": 10, "ipv4-prefix": "10.1.0.0/24"},
        {"name": "n2", "tenant": "a", "vni": 11, "ipv4-prefix": "10.2.0.0/24"},
    ]
}


def router(rng: random.Random, name: str) -> dict[str, Any]:
    net = rng.choice(["n1", "n2", "n1", "nx"] if rng.random() < 0.05 else ["n1", "n2"])
    prefix = "10.1.0" if net == "n1" else "10.2.0"
    entry: dict[str, Any] = {
        "name": name,
        "admin-state": rng.choice(["up", "down"]),
        "interface": [
            {"name": "eth0", "network": net, "ipv4": f"{prefix}.{rng.randint(1, 60)}/24"}
        ],
    }
    if rng.random() < 0.3:
        entry["index"] = rng.randint(1, 80)
    if rng.random() < 0.1:
        via = f"{prefix}.{rng.randint(1, 254)}" if rng.random() < 0.8 else "10.9.9.9"
        entry["route"] = [{"destination": "192.168.0.0/16", "next-hop": via}]
    return entry


def outcome(fn: Any) -> tuple[str, Any]:
    try:
        tree, hc = fn()[:2]
    except RpcError as err:
        return "refused", (err.tag, err.message, err.path)
    return "accepted", (tree, hc)


@pytest.mark.parametrize("seed", range(4))
def test_incremental_checks_answer_as_the_full_ones(seed: int) -> None:
    rng = random.Random(seed)
    config = AgentConfig(state_dir=Path(tempfile.mkdtemp()), users=[User(name="a", password="x")])
    place = Placement(scope="t", prefix="vnet-t-", own_host=config.host, endhosts=False)
    checker = validation.Validator(config, place)
    running: Tree = {NETWORKS: NETS}
    accepted = refused = incremental = 0
    for step in range(300):
        routers = list(running.get(ROUTERS, {}).get("router", []))
        action = rng.random()
        if action < 0.5 or not routers:
            routers.append(router(rng, f"r{step}" if rng.random() < 0.95 else "agent"))
        elif action < 0.7:
            k = rng.randrange(len(routers))
            routers[k] = router(rng, routers[k]["name"])
        elif action < 0.85:
            routers.pop(rng.randrange(len(routers)))
        elif action < 0.95:
            routers.append(dict(routers[rng.randrange(len(routers))]))  # a name twice
        else:
            routers = routers[1:] + routers[:1]
        candidate = {NETWORKS: NETS, ROUTERS: {"router": routers}}
        full = outcome(lambda c=candidate, r=running: validation.prepare(config, c, r))
        fast = outcome(lambda c=candidate, r=running: checker.prepare(c, r))
        assert fast[0] == full[0], (step, full, fast)
        if full[0] == "refused":
            assert fast[1] == full[1], step
            refused += 1
            continue
        tree, hc, change = checker.prepare(candidate, running)
        assert (tree, hc) == full[1], step
        desired = checker.realized(hc, change)
        assert desired == realize_host(hc, place), step
        checker.committed(tree, hc, change, desired)
        incremental += change.incremental
        running = tree
        accepted += 1
    assert accepted > 50 and refused > 50, (accepted, refused)
    assert incremental > accepted / 2, "most commits took the incremental checks"
