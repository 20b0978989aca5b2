"""Writes asked together share one transaction (Database.write_together): each in a
savepoint, so one that fails is undone alone and its caller hears why; the others commit."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from sqlalchemy import event, select
from sqlalchemy.orm import Session

from vnet.controller.db import Tenant, make_engine
from vnet.controller.service.database import Database


def add_tenant(name: str) -> Callable[[Session], str]:
    def work(session: Session) -> str:
        session.add(Tenant(name=name))
        session.flush()
        return name

    return work


def refuse(session: Session) -> str:
    session.add(Tenant(name="half"))
    session.flush()
    raise ValueError("no")


def test_writes_asked_together_share_one_transaction_and_fail_alone(
    tmp_path: Path, migrated: Callable[[Path], str]
) -> None:
    engine = make_engine(migrated(tmp_path / "state"))
    commits: list[int] = []
    event.listen(engine, "commit", lambda conn: commits.append(1))
    db = Database(engine)
    works = [add_tenant(f"t{k}") for k in range(10)]

    async def together() -> list[object]:
        calls = [db.write_together(w) for w in works[:5]]
        calls += [db.write_together(refuse)]
        calls += [db.write_together(w) for w in works[5:]]
        return await asyncio.gather(*calls, return_exceptions=True)

    answers = asyncio.run(together())
    assert answers[:5] + answers[6:] == [f"t{k}" for k in range(10)]
    assert isinstance(answers[5], ValueError)
    assert len(commits) == 1
    with Session(engine) as session:
        names = set(session.scalars(select(Tenant.name)))
    assert names == {f"t{k}" for k in range(10)}, "the refused write left a row"
    engine.dispose()
