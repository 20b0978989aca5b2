"""Writes asked together share one transaction (Database.write_together): a work asked for
many items runs once for all of them; if it raises, once for each item in a savepoint of its
own, so the item that fails is undone alone and its caller hears why; the others commit."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from sqlalchemy import event, select
from sqlalchemy.orm import Session

from vnet.controller.db import Tenant, make_engine
from vnet.controller.service.database import Database


def tenants_in(engine) -> set[str]:  # type: ignore[no-untyped-def]
    with Session(engine) as session:
        return set(session.scalars(select(Tenant.name)))


def test_items_asked_together_are_written_by_one_call_in_one_transaction(
    tmp_path: Path, migrated: Callable[[Path], str]
) -> None:
    engine = make_engine(migrated(tmp_path / "state"))
    commits: list[int] = []
    event.listen(engine, "commit", lambda conn: commits.append(1))
    db = Database(engine)
    batches: list[list[str]] = []

    def add(session: Session, names: list[str]) -> None:
        batches.append(names)
        session.add_all(Tenant(name=n) for n in names)

    async def together() -> list[object]:
        return await asyncio.gather(*(db.write_together(f"t{k}", add) for k in range(10)))

    assert asyncio.run(together()) == [None] * 10
    assert batches == [[f"t{k}" for k in range(10)]] and len(commits) == 1
    assert tenants_in(engine) == {f"t{k}" for k in range(10)}
    engine.dispose()


def test_an_item_that_fails_fails_alone(tmp_path: Path, migrated: Callable[[Path], str]) -> None:
    engine = make_engine(migrated(tmp_path / "state"))
    commits: list[int] = []
    event.listen(engine, "commit", lambda conn: commits.append(1))
    db = Database(engine)

    def add(session: Session, names: list[str]) -> None:
        session.add_all(Tenant(name=n) for n in names)
        session.flush()
        if "half" in names:
            raise ValueError("no")

    def other(session: Session, names: list[str]) -> None:
        session.add_all(Tenant(name=f"other-{n}") for n in names)

    async def together() -> list[object]:
        calls = [db.write_together(f"t{k}", add) for k in range(5)]
        calls += [db.write_together("half", add), db.write_together("x", other)]
        calls += [db.write_together(f"t{k}", add) for k in range(5, 10)]
        return await asyncio.gather(*calls, return_exceptions=True)

    answers = asyncio.run(together())
    assert answers[:5] + answers[6:] == [None] * 11
    assert isinstance(answers[5], ValueError)
    assert len(commits) == 1
    assert tenants_in(engine) == {f"t{k}" for k in range(10)} | {"other-x"}, "half stayed"
    engine.dispose()
