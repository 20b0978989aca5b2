"""The SNMP front-end keeps the rows and values it made of each VR (rows.rows_of,
columns.config_columns, columns.state_columns) while the tree shares the VR's entry: over
a random history of trees that share unchanged entries, as the datastore's do, what it
serves is what it would make from nothing; the same of the tables it changes VR by VR
(tables.ConfigTables, tables.StateTables) and of its map of VRs by index."""

from __future__ import annotations

import random
from typing import Any

import pytest

from vnet.agent.datastore import journal
from vnet.agent.snmp import columns, rows, setplan, smi, tables
from vnet.agent.snmp import rowstatus as rs
from vnet.agent.snmp.view import Column
from vnet.model.mib import oids
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


def change_some(
    rng: random.Random, entries: dict[int, Any], states: dict[int, Any], among: range
) -> list[int]:
    """Three VRs of `among` changed, gone, new or back (the others' entries kept)."""
    changed = rng.sample(among, 3)
    for i in changed:
        if rng.random() < 0.2:
            entries.pop(i, None)
            states.pop(i, None)
        else:
            entries[i] = router(rng, i)
            states[i] = state_of(rng, entries[i])
    return changed


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
        change_some(rng, entries, states, range(1, 30))
        for i in rng.sample(sorted(states), min(2, len(states))):  # a few read again
            states[i] = state_of(rng, entries[i])
        tree = {ROUTERS: {"router": list(entries.values())}}
        state = {ROUTERS: {"router": list(states.values())}}
        made = rows.rows_of(tree)
        got = made, served(columns.config_columns(made)), served(columns.state_columns(state))
        assert got == from_nothing(tree, state)  # (what the next round finds kept)


def pending_rows(rng: random.Random, configured: set[int]) -> rows.Rows:
    """Rows a manager made with createAndWait: VRs not configured, and interfaces of some
    that are (and of some that are not, which the working rows leave out)."""
    made = rows.empty_rows()
    for i in rng.sample(range(1, 40), 4):
        if i not in configured and rng.random() < 0.5:
            made[rows.VR_TABLE][(i,)] = rows.Row(rs.NOT_READY, {oids.VR_NAME: f"p{i}"}, 1.0)
        made[rows.IF_TABLE][(i, 9)] = rows.Row(rs.NOT_IN_SERVICE, {oids.IF_NETWORK: "n1"}, 1.0)
    return made


def by_oid(cols: list[Column]) -> list[tuple[Any, ...]]:
    return sorted(served(cols))


@pytest.mark.parametrize("seed", range(3))
def test_tables_changed_vr_by_vr_serve_what_would_be_made(seed: int) -> None:
    """tables.ConfigTables and StateTables, changed for the VRs that changed, serve what the
    columns made from nothing serve, and say the counts of the hypervisor group they say."""
    rng = random.Random(seed)
    entries = {i: router(rng, i) for i in range(1, 30)}
    states = {i: state_of(rng, e) for i, e in entries.items()}
    config, state_tables, pending = tables.ConfigTables(), tables.StateTables(), rows.Pending()
    tree = {ROUTERS: {"router": list(entries.values())}}
    state_tables.remake({ROUTERS: {"router": list(states.values())}})
    for _ in range(60):
        changed = change_some(rng, entries, states, range(1, 40))
        if rng.random() < 0.3:
            pending.replace(pending_rows(rng, set(entries)))
        before, tree = tree, {ROUTERS: {"router": list(entries.values())}}
        config.refresh(tree, pending)
        listed = journal.router_change(before, tree)
        assert listed is not None
        gone = {int(r["index"]) for r in listed.superseded()}
        state_tables.change(gone, [states[i] for i in changed if i in states])
        working = rows.working_rows(tree, pending)
        state = {ROUTERS: {"router": list(states.values())}}
        assert by_oid(config.columns()) == by_oid(columns.config_columns(working))
        assert config.counts() == columns.row_counts(working)
        assert by_oid(state_tables.columns()) == by_oid(columns.state_columns(state))
        assert state_tables.running() == columns.running_count(state)


def test_a_set_of_one_vr_among_10000_looks_at_its_rows_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Planning a SET that creates, or destroys, one VR among 10,000, and the next request's
    tables, make the rows of that VR alone (the code before made every VR's rows, kept or
    not, twice a SET and once a request after it)."""
    rng = random.Random(1)
    tree = {ROUTERS: {"router": [router(rng, i) for i in range(1, 10_001)]}}
    config, pending = tables.ConfigTables(), rows.Pending()
    config.refresh(tree, pending)
    made: list[int] = []
    real = rows._router_rows
    monkeypatch.setattr(rows, "_router_rows", lambda r: made.append(r["index"]) or real(r))
    create = [
        ((*oids.VR_CONFIG_ENTRY, oids.VR_NAME, 10_001), smi.octets(b"new")),
        ((*oids.VR_CONFIG_ENTRY, oids.VR_STATUS, 10_001), smi.integer(rs.CREATE_AND_GO)),
    ]
    destroy = [((*oids.VR_CONFIG_ENTRY, oids.VR_STATUS, 5000), smi.integer(rs.DESTROY))]
    for varbinds, count in ((create, 10_001), (destroy, 10_000)):
        plan = setplan.plan_set(varbinds, tree, pending, now=1.0)
        assert plan.tree is not None
        tree = plan.tree
        assert len(rows.routers_of(tree)) == count
        config.refresh(tree, pending)
        assert config.counts() == (count, 5000 if count == 10_000 else 10_002)
    assert made == [10_001, 5000]  # the new VR in the next request's tables, the one planned


def test_the_map_by_index_follows_the_vr_list() -> None:
    """rows.routers_by_index, made from the last tree's by the VRs that changed, is the map
    made from nothing: over VRs that swap indexes, go, come back, or are replaced by an
    equal entry."""
    rng = random.Random(2)
    entries = {f"r{i}": router(rng, i) for i in range(1, 20)}
    for _ in range(200):
        a, b = rng.sample(sorted(entries), 2)
        move = rng.random()
        if move < 0.3:  # swap their indexes
            ia, ib = entries[a]["index"], entries[b]["index"]
            entries[a], entries[b] = {**entries[a], "index": ib}, {**entries[b], "index": ia}
        elif move < 0.5 and len(entries) > 2:
            gone = entries.pop(a)
            entries[f"x{gone['index']}"] = {**gone, "name": f"x{gone['index']}"}
        else:
            entries[a] = dict(entries[a])  # equal, not the same
        tree = {ROUTERS: {"router": list(entries.values())}}
        assert rows.routers_by_index(tree) == {r["index"]: r for r in entries.values()}


def test_each_state_table_holds_its_own_instances() -> None:
    """vnetVrTable's instances are keyed by a VR index, vnetVrIfStatsTable's by a VR index
    and an interface position (their columns share numbers; they were once merged)."""
    rng = random.Random(3)
    state = {ROUTERS: {"router": [state_of(rng, router(rng, i)) for i in range(1, 9)]}}
    tables_made = tables.StateTables()
    tables_made.remake(state)
    for made in (columns.state_columns(state), tables_made.columns()):
        lengths = {c.oid[:-1]: {len(k) for k in c.keys} for c in made if c.keys}
        assert lengths[oids.VR_ENTRY] == {1} and lengths[oids.IF_STATS_ENTRY] == {2}, lengths
