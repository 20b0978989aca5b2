"""A keyed list's change (journal.ListChange) costs what changed, not the list's length, and
says what a plain walk over both lists says."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Any

import pytest
from lxml import etree

from tests.datastore_support import USER, commit_as
from vnet.agent.datastore import RUNNING, Datastore, journal
from vnet.agent.netconf.edit import apply_edit
from vnet.model.agent_config import AgentConfig, User
from vnet.model.yang.module import NAMESPACE as VR
from vnet.model.yang.module import NETCONF_NS as NC
from vnet.model.yang.module import NETWORKS, ROUTERS

Entry = dict[str, Any]


class Counted(dict):  # type: ignore[type-arg]
    """An entry that counts how often code in Python reads or compares it."""

    reads = 0

    def __getitem__(self, key: str) -> Any:
        Counted.reads += 1
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:
        Counted.reads += 1
        return super().get(key, default)

    def __eq__(self, other: object) -> bool:
        Counted.reads += 1
        return super().__eq__(other)


def entry(name: str, value: int = 0) -> Entry:
    return {"name": name, "value": value}


def naive(old: list[Entry], new: list[Entry]) -> tuple[list[Entry], list[str], set[str]]:
    """put, delete, and the names replaced, by comparing every entry by name."""
    before = {r["name"]: r for r in old}
    after = {r["name"] for r in new}
    put = [r for r in new if r["name"] not in before or before[r["name"]] != r]
    delete = [name for name in before if name not in after]
    replaced = {r["name"] for r in put if r["name"] in before}
    return put, delete, replaced


def edited(rng: random.Random, old: list[Entry], step: int) -> list[Entry]:
    new = list(old)
    for _ in range(rng.choice([1, 1, 2, 5])):
        what = rng.random()
        if what < 0.3 or not new:
            at = rng.randrange(len(new) + 1) if rng.random() < 0.2 else len(new)
            new.insert(at, entry(f"n{step}-{rng.random()}"))
        elif what < 0.5:
            k = rng.randrange(len(new))
            new[k] = entry(new[k]["name"], rng.choice([new[k]["value"], step]))  # maybe equal
        elif what < 0.7:
            new.pop(rng.randrange(len(new)))
        elif what < 0.8:
            k, j = rng.randrange(len(new)), rng.randrange(len(new))
            new.insert(j, new.pop(k))  # moved
        elif what < 0.9:
            new.append(dict(new[rng.randrange(len(new))]))  # a name twice
        else:
            new.append(new[rng.randrange(len(new))])  # the same entry twice
    return new


@pytest.mark.parametrize("seed", range(6))
def test_a_list_change_says_what_comparing_every_entry_says(seed: int) -> None:
    rng = random.Random(seed)
    old = [entry(f"r{i}") for i in range(40)]
    for step in range(300):
        new = edited(rng, old, step)
        found = journal.list_change({"router": old}, {"router": new}, "router")
        assert found is not None
        names = [r["name"] for r in new]
        if len(set(names)) != len(names):
            kept = {r["name"] for r in old} - found.was.keys()
            assert len(set(found.fresh)) != len(found.fresh) or kept & set(found.fresh)
            continue  # (refused before anything is recorded: names are keys)
        put, delete, replaced = naive(old, new)
        assert (found.put, found.delete, found.replaced()) == (put, delete, replaced)
        assert [new[q] for q in found.put_at] == put
        assert journal.replay({ROUTERS: {"router": old}}, found.record()) == {
            ROUTERS: {"router": new}
        }
        aligned = found.aligned(old, new.__getitem__)
        assert aligned is None if found.order is not None else aligned == new
        old = new


def test_a_change_of_one_entry_among_ten_thousand_reads_a_handful() -> None:
    many = [Counted(name=f"r{i}", value=i) for i in range(10_000)]
    cases = {
        "one added": [*many, Counted(name="new", value=1)],
        "one changed": [*many[:5000], Counted(name="r5000", value=-1), *many[5001:]],
        "one deleted": [*many[:5000], *many[5001:]],
    }
    for what, new in cases.items():
        Counted.reads = 0
        found = journal.list_change({"router": many}, {"router": new}, "router")
        assert found is not None and found.order is None, what
        assert len(found.put) + len(found.delete) == 1, what
        # (the halving that finds the common head and tail compares the changed entry
        # once a step: about log2(10,000) = 14 times; a walk would read 10,000 entries)
        assert Counted.reads < 50, f"{what}: {Counted.reads} reads of entries"


def test_a_commit_of_one_vr_among_ten_thousand_reads_a_handful_of_the_others(
    tmp_path: Path,
) -> None:
    """Through the datastore's commit path (edit, NACM, checks, events, journal; no
    kernel): the VRs present are read a bounded number of times, not once each."""
    nets = [
        {"name": f"a{k}", "tenant": "t", "vni": 100 + k, "ipv4-prefix": f"10.{k}.0.0/16"}
        for k in range(10)
    ]
    present = [
        Counted(
            name=f"r{i}",
            index=i + 1,
            interface=[{"name": "eth0", "network": f"a{i // 1000}", "ipv4": address(i)}],
        )
        for i in range(10_000)
    ]
    tree = {NETWORKS: {"network": nets}, ROUTERS: {"router": present}}
    edits = {
        # (the first edit of a list builds its key index, kept for the next ones)
        "first": "<router><name>r1</name><admin-state>up</admin-state></router>",
        "create": '<router nc:operation="create"><name>x</name><index>20000</index>'
        "<interface><name>eth0</name><network>a0</network><ipv4>10.0.200.1/16</ipv4>"
        "</interface></router>",
        "modify": "<router><name>r5000</name><admin-state>up</admin-state></router>",
        "delete": '<router nc:operation="delete"><name>r7000</name></router>',
    }
    reads: dict[str, int] = {}

    async def main() -> None:
        config = AgentConfig(state_dir=tmp_path, users=[User(name=USER, password="x")])
        ds = Datastore(config, apply_to_kernel=False)
        await ds.start()
        try:
            await commit_as(ds, tree)
            for what, xml in edits.items():
                config_el = etree.fromstring(
                    f'<config xmlns="{NC}" xmlns:nc="{NC}"><routers xmlns="{VR}">{xml}'
                    "</routers></config>"
                )
                Counted.reads = 0
                await ds.update(RUNNING, edit(config_el), user=USER, in_place=False)
                reads[what] = Counted.reads
        finally:
            await ds.close()

    asyncio.run(main())
    del reads["first"]
    assert all(n < 100 for n in reads.values()), reads


def edit(config: etree._Element) -> Any:
    return lambda tree: (apply_edit(tree, config), None)


def address(i: int) -> str:
    return f"10.{i // 1000}.{i % 1000 // 250}.{i % 250 + 1}/16"
