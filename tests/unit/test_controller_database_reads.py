"""Reads beside a writer (Database.read on SQLite): a transaction that only reads takes no
write lock, so it is answered from the last committed state while another transaction
holds the lock, and never sees that transaction's uncommitted rows; one that may write
still waits for the lock (BEGIN IMMEDIATE), so a read-then-reserve cannot interleave."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session

from vnet.controller.db import Tenant, make_engine
from vnet.controller.service.database import Database


def test_a_read_is_answered_while_another_transaction_holds_the_write_lock(
    tmp_path: Path, migrated: Callable[[Path], str]
) -> None:
    engine = make_engine(migrated(tmp_path / "state"))
    db = Database(engine)
    asyncio.run(db.write(lambda s: s.add(Tenant(name="before"))))
    locked, release = threading.Event(), threading.Event()

    def writer() -> None:
        with Session(engine) as session, session.begin():  # BEGIN IMMEDIATE: the lock
            session.add(Tenant(name="uncommitted"))
            session.flush()
            locked.set()
            release.wait(30)

    holder = threading.Thread(target=writer)
    holder.start()
    try:
        assert locked.wait(10)

        async def beside() -> tuple[set[str], bool]:
            # the writer lets go only after this read: a read that needed the lock would
            # wait for SQLite's busy timeout (10 s) and fail
            names = await asyncio.wait_for(
                db.read(lambda s: set(s.scalars(select(Tenant.name)))), 5
            )
            wanting = asyncio.create_task(db.write(lambda s: s.add(Tenant(name="after"))))
            await asyncio.sleep(0.3)
            waited = not wanting.done()
            release.set()
            await asyncio.wait_for(wanting, 15)
            return names, waited

        names, waited = asyncio.run(beside())
    finally:
        release.set()
        holder.join()
    assert names == {"before"}
    assert waited, "a write went ahead while another transaction held the write lock"
    with Session(engine) as session:
        assert set(session.scalars(select(Tenant.name))) == {"before", "uncommitted", "after"}
    engine.dispose()
