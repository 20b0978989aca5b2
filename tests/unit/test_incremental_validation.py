"""The datastore's incremental checks (incremental.py) against the full ones: over a long
random history of edits, valid and not (a taken address, index or name, an unknown
network, a bad route), each candidate is accepted or refused exactly as the full checks
do it, with their message and path, and an accepted one has the same HostConfig and the
same desired kernel state (realised from the previous one) as realize_host gives, and the
same plan when only the objects the change may touch are compared."""

from __future__ import annotations

import random
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from vnet.agent.datastore import validation
from vnet.agent.datastore.incremental import Change
from vnet.model.agent_config import AgentConfig, User
from vnet.model.yang.errors import RpcError
from vnet.model.yang.guarantees import SRV6
from vnet.model.yang.module import NETWORKS, ROUTERS
from vnet.substrate import Placement, plan, realize_host

Tree = dict[str, Any]
NETS = {
    "network": [
        {"name": "n1", "tenant": "a", "vni": 10, "ipv4-prefix": "10.1.0.0/24"},
        {"name": "n2", "tenant": "a", "vni": 11, "ipv4-prefix": "10.2.0.0/24"},
    ]
}


def seeds(count: int) -> list[Any]:
    """`count` random histories: the first in `make check`'s fast loop, the others (about a
    second each: the full checks take longer the more a history holds) marked slow, for
    `make test`."""
    return [0, *(pytest.param(seed, marks=pytest.mark.slow) for seed in range(1, count))]


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


def fresh_validator() -> validation.Validator:
    config = AgentConfig(state_dir=Path(tempfile.mkdtemp()), users=[User(name="a", password="x")])
    place = Placement(scope="t", prefix="vnet-t-", own_host=config.host, endhosts=False)
    return validation.Validator(config, place)


def both_ways(checker: validation.Validator, candidate: Tree, running: Tree) -> Change | None:
    """`candidate` checked by `checker` and by the full checks: the same refusal (None),
    or the same tree and HostConfig, and the desired kernel state realize_host gives
    (then committed: its change)."""
    config, place = checker.config, checker.placement
    full = outcome(lambda: validation.prepare(config, candidate, running))
    fast = outcome(lambda: checker.prepare(candidate, running))
    assert fast[0] == full[0], (full, fast)
    if full[0] == "refused":
        assert fast[1] == full[1]
        return None
    tree, hc, change = checker.prepare(candidate, running)
    assert (tree, hc) == full[1]
    before = checker.realization[1] if checker.realization is not None else None
    desired = checker.realized(hc, change)
    assert desired == realize_host(hc, place)
    if before is not None:  # the plan of what may differ is the plan of everything
        scope = checker.plan_scope(desired, before)
        scoped, whole = plan(desired, before, scope), plan(desired, before)
        # the same steps, kinds in the same order (steps of one kind whose sort keys tie,
        # filters the kernel has not numbered here, come in either order)
        assert Counter(op.describe() for op in scoped) == Counter(op.describe() for op in whole)
        assert [type(op) for op in scoped] == [type(op) for op in whole]
    checker.committed(tree, hc, change, desired)
    return change


@pytest.mark.parametrize("seed", seeds(4))
def test_incremental_checks_answer_as_the_full_ones(seed: int) -> None:
    rng, checker = random.Random(seed), fresh_validator()
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
        change = both_ways(checker, candidate, running)
        if change is None:
            refused += 1
            continue
        incremental += change.incremental
        running = change.tree
        accepted += 1
    assert accepted > 50 and refused > 50, (accepted, refused)
    assert incremental > accepted / 2, "most commits took the incremental checks"


def connection(rng: random.Random, name: str, routers: list[dict[str, Any]]) -> dict[str, Any]:
    """An ingress piece on a VR there is (rarely one there is not), in its network; an id
    and a port from small ranges (so ids and steered 5-tuples clash now and then)."""
    vr = rng.choice(routers) if routers and rng.random() < 0.95 else {"name": "nobody"}
    net = vr["interface"][0]["network"] if "interface" in vr else "n1"
    ingress: dict[str, Any] = {
        "router": vr["name"],
        "destination": "10.3.0.1",
        "source": "10.1.0.1",
        "lan-network": net,
        "network": net,
        "segment": ["fc00:1:2:1::4"],
        "bandwidth": str(rng.choice([1, 2]) * 1_000_000),
    }
    if rng.random() < 0.9:
        ingress |= {"protocol": "udp", "destination-port": rng.randint(1, 12)}
    return {"name": name, "id": rng.randint(1, 30), "ingress": [ingress]}


def edit_connections(rng: random.Random, tree: Tree, step: int) -> None:
    """One change of the connections: one made, changed, deleted, or a name twice."""
    conns = list(tree.get(SRV6, {}).get("connection", []))
    routers = tree.get(ROUTERS, {}).get("router", [])
    action = rng.random()
    if action < 0.5 or not conns:
        conns.append(connection(rng, f"c{step}", routers))
    elif action < 0.75:
        k = rng.randrange(len(conns))
        conns[k] = connection(rng, conns[k]["name"], routers)
    elif action < 0.95:
        conns.pop(rng.randrange(len(conns)))
    else:
        conns.append(connection(rng, conns[0]["name"], routers))
    tree[SRV6] = {"connection": conns}


@pytest.mark.parametrize("seed", seeds(3))
def test_with_connections_the_incremental_checks_answer_as_the_full_ones(seed: int) -> None:
    """VRs and connections changed in turn: a change of connections alone is checked
    incrementally too (their own checks over all of them, YANG over the changed ones and
    the VRs they name) and answers as the full checks do."""
    rng, checker = random.Random(seed), fresh_validator()
    running: Tree = {NETWORKS: NETS}
    accepted = refused = incremental = 0
    for step in range(240):
        candidate = dict(running)
        routers = list(running.get(ROUTERS, {}).get("router", []))
        if rng.random() < 0.4 or not routers:
            if rng.random() < 0.7 or not routers:
                routers.append(router(rng, f"r{step}"))
            else:
                routers.pop(rng.randrange(len(routers)))
            candidate[ROUTERS] = {"router": routers}
        else:
            edit_connections(rng, candidate, step)
        change = both_ways(checker, candidate, running)
        if change is None:
            refused += 1
            continue
        incremental += change.incremental and change.connections is not None
        running = change.tree
        accepted += 1
    assert accepted > 40 and refused > 40, (accepted, refused)
    assert incremental > accepted / 4, "changes of connections took the incremental checks"


def tunnel(rng: random.Random, name: str) -> dict[str, Any]:
    """A connection between r1 and r2 (vnet.bench.agent.connection's): ids, SIDs, sources
    and ports from small ranges, fields open or fixed, so that ids, SIDs and steered
    packets clash now and then; rarely a piece that is wrong on its own."""
    sid = f"fc00:1:2:{rng.randint(1, 12):x}::4" if rng.random() < 0.97 else "fc00:9::4"
    ingress: dict[str, Any] = {
        "router": "r1" if rng.random() < 0.97 else "r9",
        "destination": "10.3.0.1",
        "source": f"10.1.0.{rng.randint(1, 2)}",
        "lan-network": "n1",
        "network": "n2",
        "segment": [sid],
        "bandwidth": "10000000",
    }
    protocol = rng.choice([None, "udp", "udp", "tcp"])
    if protocol is not None:
        ingress["protocol"] = protocol
        for port in ("source-port", "destination-port"):
            if rng.random() < 0.6:
                ingress[port] = rng.randint(1, 6)
    conn = {"name": name, "id": rng.randint(1, 40), "ingress": [ingress]}
    conn["egress"] = [{"sid": sid, "router": "r2", "network": "n3", "next-hop": "10.3.0.1"}]
    if rng.random() < 0.2:
        transit = f"fc00:1:1:{rng.randint(1, 8):x}::1"
        conn["transit"] = [{"router": "r1", "sid": transit, "network": "n2"}]
    return conn


@pytest.mark.parametrize("seed", seeds(3))
def test_a_change_of_connections_alone_is_checked_against_the_index(seed: int) -> None:
    """Connections alone changed (one or two made, changed, deleted) on VRs and locators
    that stay: each change checked against what the others hold (ConnectionIndex: ids,
    SIDs, steered packets) answers as guarantee_problems over all of them does, and the
    index and the parse memo moved on by each commit are the ones made afresh from running."""
    from vnet.agent.datastore.incremental import ConnectionMemo
    from vnet.bench.agent.connection import base
    from vnet.model.host_guarantees_index import ConnectionIndex

    rng, checker = random.Random(seed), fresh_validator()
    running: Tree = {}
    candidate = base()
    accepted = refused = indexed = 0
    for step in range(260):
        change = both_ways(checker, candidate, running)
        if change is None:
            refused += 1
        else:
            running, accepted = change.tree, accepted + 1
            index, hc = checker.index.connection_index, checker.index.running
            assert hc is not None
            if index is not None:
                indexed += 1
                assert index == ConnectionIndex.of(hc.srv6.connections)
            memo = ConnectionMemo()
            memo.advance(running, hc)
            assert checker.connections == memo, "the memo moved on is the one made afresh"
        conns = list(running.get(SRV6, {}).get("connection", []))
        for _ in range(rng.choice([1, 1, 1, 2])):
            action = rng.random()
            if action < 0.45 or not conns:
                conns.append(tunnel(rng, f"c{step}-{len(conns)}"))
            elif action < 0.75:
                k = rng.randrange(len(conns))
                conns[k] = tunnel(rng, conns[k]["name"])
            else:
                conns.pop(rng.randrange(len(conns)))
        candidate = {**running, SRV6: {**running[SRV6], "connection": conns}}
    assert accepted > 60 and refused > 60, (accepted, refused)
    assert indexed > accepted / 2, "changes of connections were checked against the index"
