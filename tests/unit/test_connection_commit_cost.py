"""A commit that adds or deletes one SRv6 connection on an agent holding many costs what it
changes: its desired kernel state is made from running's by that connection's pieces alone,
and the plan compares only those pieces' tunnel objects (SIDs, steering, tc), not every
connection's. Counted, not timed: the ingress pieces realised, the objects planned."""

from __future__ import annotations

import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from vnet.agent.datastore import validation
from vnet.bench.agent.connection import P, base, connection
from vnet.model import host_guarantees_check
from vnet.model.agent_config import AgentConfig, User
from vnet.substrate import KernelState, Placement, mbb, realize_guarantees, realize_host
from vnet.substrate.plan import plan

MANY = 300
SRV6 = f"{P}srv6"


class Counts:
    """Connections checked (the model's guarantee checks), ingress pieces realised, and
    the tunnel objects the plan compared (SIDs, steering routes and rules, tc filters)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.seen: Counter[str] = Counter()
        ingress, classes = realize_guarantees._ingress, mbb._class_changes
        surviving = mbb._Surviving.of.__func__  # type: ignore[attr-defined]

        def counted_ingress(*args: Any) -> None:
            self.seen["ingress"] += 1
            ingress(*args)

        def counted_surviving(cls: type, actual: KernelState, *rest: Any) -> Any:
            self.planned(actual)
            return surviving(cls, actual, *rest)

        def counted_classes(desired: KernelState, have: Any) -> Any:
            self.planned(desired)
            return classes(desired, have)

        def counted_check(checker: Any, i: int, conn: Any) -> None:
            self.seen["checked"] += 1
            check(checker, i, conn)

        check = host_guarantees_check._Checker.connection
        monkeypatch.setattr(host_guarantees_check._Checker, "connection", counted_check)
        monkeypatch.setattr(realize_guarantees, "_ingress", counted_ingress)
        monkeypatch.setattr(mbb._Surviving, "of", classmethod(counted_surviving))
        monkeypatch.setattr(mbb, "_class_changes", counted_classes)

    def planned(self, state: KernelState) -> None:
        kinds = ("sids", "steers", "rules", "tc_filters")
        self.seen["planned"] += sum(len(getattr(state, kind)) for kind in kinds)


@pytest.fixture
def counts(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counts]:
    yield Counts(monkeypatch)


def with_connections(tree: dict[str, Any], numbers: list[int]) -> dict[str, Any]:
    srv6 = {**tree[SRV6], "connection": [connection(k) for k in numbers]}
    return {**tree, SRV6: srv6}


class Agent:
    """An agent's validator, and what its last commit left in the kernel."""

    def __init__(self, counts: Counts) -> None:
        config = AgentConfig(
            state_dir=Path(tempfile.mkdtemp()), users=[User(name="a", password="x")]
        )
        place = Placement(scope="t", prefix="vnet-t-", own_host=config.host, endhosts=False)
        self.checker = validation.Validator(config, place)
        self.counts = counts
        self.running: dict[str, Any] = {}
        self.actual = KernelState()

    def commit(self, numbers: list[int]) -> Counter[str]:
        """Connections `numbers` checked, realised and planned as the agent's commit does
        (the same desired state as realize_host's, the same plan as comparing everything);
        what it counted on the way."""
        self.counts.seen.clear()
        checker, running = self.checker, self.running
        tree, hc, change = checker.prepare(with_connections(running or base(), numbers), running)
        desired = checker.realized(hc, change)
        ops = plan(desired, self.actual, checker.plan_scope(desired, self.actual))
        seen = +self.counts.seen  # (without zeros)
        assert desired == realize_host(hc, checker.placement)
        assert ops == plan(desired, self.actual), "the same plan as comparing everything"
        assert ops, "the commit changes the kernel"
        checker.committed(tree, hc, change, desired)
        self.running, self.actual = tree, desired
        return seen


def test_one_connection_of_many_is_realised_and_planned_alone(counts: Counts) -> None:
    agent, many = Agent(counts), list(range(1, MANY + 1))
    first = agent.commit(many)
    assert first["ingress"] == first["checked"] == MANY  # (the first commit: all of them)
    # adding one: it is checked, its ingress piece realised, its SID, steering route, rule
    # and filter compared (with nothing in the kernel)
    assert agent.commit([*many, MANY + 1]) == {"checked": 1, "ingress": 1, "planned": 4}
    # deleting one: its pieces realised to be taken out, and compared (with nothing wanted)
    assert agent.commit([*many[1:], MANY + 1]) == {"ingress": 1, "planned": 4}
    # one deleted and one added in one commit: both
    both = {"checked": 1, "ingress": 2, "planned": 8}
    assert agent.commit([*many[2:], MANY + 1, MANY + 2]) == both
