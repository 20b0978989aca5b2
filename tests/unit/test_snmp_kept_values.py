"""The SNMP front-end keeps the rows and values it made of each VR (rows.rows_of,
columns.config_columns, columns.state_columns) while the tree shares the VR's entry: over
a random history of trees that share unchanged entries, as the datastore's do, what it
serves is what it would make from nothing."""

from __future__ import annotations

import random
from typing import Any

import pytest

from vnet.agent.snmp import columns, rows
from vnet.agent.snmp.view import Column
from vnet.model.yang.module import ROUTERS


def router(rng: random.Random, index: int) -> dict[str, Any]:
    itfs = [
        {"name": f"eth{k}", "network": rng.choice(["n1", "n2"]), "ipv4": f"10.{k}.0.{index}/24"}
        for k in range(rng.randint(0, 2))
    ]
    entry: dict[str, Any] = {"name": f"r{index}", "index": index, "interface": itfs}
    entry["admin-state"] = rng.choice(["up", "down"])
    if rng.random() < 0.3:
        entry["route"] = [{"destination": "192.168.0.0/16", "next-hop": f"10.0.0.{index}"}]
    return entry


def state_of(rng: random.Random, entry: dict[str, Any]) -> dict[str, Any]:
    itfs = [
        {**itf, "oper-status": rng.choice(["up", "down"]), "statistics": {"in-octets": "7"}}
        for itf in entry["interface"]
    ]
    return {**entry, "interface": itfs, "oper-state": "running", "route-count": rng.randint(0, 9)}


def served(cols: list[Column]) -> list[tuple[Any, ...]]:
    return [(c.oid, c.keys, c.values) for c in cols]


def from_nothing(tree: dict[str, Any], state: dict[str, Any]) -> tuple[Any, ...]:
    """What is made of the trees by a front-end that kept nothing (it keeps nothing after)."""
    for kept in (rows.KEPT_ROWS, columns.KEPT_CELLS, columns.KEPT_STATE):
        kept.forget()
    made = rows.rows_of(tree)
    return made, served(columns.config_columns(made)), served(columns.state_columns(state))


@pytest.mark.parametrize("seed", range(3))
def test_what_is_kept_is_what_would_be_made(seed: int) -> None:
    rng = random.Random(seed)
    entries = {i: router(rng, i) for i in range(1, 30)}
    states = {i: state_of(rng, e) for i, e in entries.items()}
    for _ in range(60):
        for i in rng.sample(range(1, 30), 3):  # a few changed, gone, or back
            if rng.random() < 0.2:
                entries.pop(i, None)
                states.pop(i, None)
            else:
                entries[i] = router(rng, i)
                states[i] = state_of(rng, entries[i])
        for i in rng.sample(sorted(states), min(2, len(states))):  # a few read again
            states[i] = state_of(rng, entries[i])
        tree = {ROUTERS: {"router": list(entries.values())}}
        state = {ROUTERS: {"router": list(states.values())}}
        made = rows.rows_of(tree)
        got = made, served(columns.config_columns(made)), served(columns.state_columns(state))
        assert got == from_nothing(tree, state)  # (what the next round finds kept)
