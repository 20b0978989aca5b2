"""The transaction loop: a failure at step k undoes steps k-1..1 in reverse order.

The operations here are data that record what they do; the loop is the one
every kernel change goes through (integration tests run it on real namespaces).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from vnet.substrate import ApplyError, apply


@dataclass
class Journal:
    lines: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Step:
    name: str
    journal: Journal
    fails: bool = False

    def run(self, k: Any) -> None:
        if self.fails:
            raise OSError(f"{self.name} refused")
        self.journal.lines.append(f"do {self.name}")

    def inverse(self) -> Step:
        return Step(f"undo {self.name}", self.journal)

    def describe(self) -> str:
        return self.name


def steps(journal: Journal, n: int, failing: int | None = None) -> list[Step]:
    return [Step(f"s{i}", journal, fails=i == failing) for i in range(n)]


def test_a_failing_step_undoes_the_done_ones_in_reverse_order() -> None:
    journal = Journal()
    with pytest.raises(ApplyError) as info:
        apply(steps(journal, 4, failing=2), kernel=None)  # type: ignore[arg-type]
    assert info.value.step == 2
    assert journal.lines == ["do s0", "do s1", "do undo s1", "do undo s0"]
    assert "step 3 failed: s2" in str(info.value) and "undone" in str(info.value)


def test_without_undo_the_done_steps_stay() -> None:
    journal = Journal()
    with pytest.raises(ApplyError):
        apply(steps(journal, 4, failing=2), kernel=None, undo=False)  # type: ignore[arg-type]
    assert journal.lines == ["do s0", "do s1"]


def test_a_fault_hook_fails_the_step_it_names_before_it_runs() -> None:
    journal = Journal()
    seen: list[int] = []

    def fault(i: int, op: object) -> None:
        seen.append(i)
        if i == 1:
            raise RuntimeError("injected")

    with pytest.raises(ApplyError) as info:
        apply(steps(journal, 3), kernel=None, fault=fault)  # type: ignore[arg-type]
    assert seen == [0, 1]
    assert str(info.value.cause) == "injected"
    assert journal.lines == ["do s0", "do undo s0"]


def test_progress_follows_each_done_step() -> None:
    journal = Journal()
    ticks: list[tuple[int, str]] = []
    apply(steps(journal, 3), kernel=None, progress=lambda i, op: ticks.append((i, op.describe())))  # type: ignore[arg-type]
    assert ticks == [(0, "s0"), (1, "s1"), (2, "s2")]
