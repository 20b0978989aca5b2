"""Reads beside a writer (Database.read on SQLite): a transaction that only reads takes no
write lock, so it is answered from the last committed state while another transaction holds
the lock, and never sees that transaction's uncommitted rows; one that may write still waits
for the lock (BEGIN IMMEDIATE), so a read-then-reserve cannot interleave. This process's
writers wait for their turn in a queue, in the order they asked; the API's token lookup
reads beside them."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import Engine, event, select
from sqlalchemy.orm import Session

from vnet.controller.api.auth import Authenticator, register_token
from vnet.controller.db import Tenant, make_engine, session_factory
from vnet.controller.service.database import Database


@contextmanager
def write_lock_held(engine: Engine, row: str) -> Iterator[threading.Event]:
    """Another transaction holds SQLite's write lock, with a tenant `row` it has not
    committed, until the body ends or sets the event yielded; it commits then."""
    locked, release = threading.Event(), threading.Event()

    def writer() -> None:
        with Session(engine) as session, session.begin():  # BEGIN IMMEDIATE: the lock
            session.add(Tenant(name=row))
            session.flush()
            locked.set()
            release.wait(30)

    holder = threading.Thread(target=writer)
    holder.start()
    try:
        assert locked.wait(10)
        yield release
    finally:
        release.set()
        holder.join()


def test_a_read_is_answered_while_another_transaction_holds_the_write_lock(
    tmp_path: Path, migrated: Callable[[Path], str]
) -> None:
    engine = make_engine(migrated(tmp_path / "state"))
    db = Database(engine)
    asyncio.run(db.write(lambda s: s.add(Tenant(name="before"))))
    with write_lock_held(engine, "uncommitted") as release:

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
    assert names == {"before"}
    assert waited, "a write went ahead while another transaction held the write lock"
    with Session(engine) as session:
        assert set(session.scalars(select(Tenant.name))) == {"before", "uncommitted", "after"}
    engine.dispose()


def test_this_processs_writers_queue_in_the_order_they_asked_not_in_sqlites_busy_handler(
    tmp_path: Path, migrated: Callable[[Path], str]
) -> None:
    """Each write holds the lock 20 ms and SQLite lets a waiter wait 5 ms: writers that
    polled SQLite's lock from threads would fail "database is locked" (503 to a client)."""
    engine = make_engine(migrated(tmp_path / "state"))
    event.listen(engine, "connect", lambda conn, _: conn.execute("PRAGMA busy_timeout=5"))
    db = Database(engine)
    order: list[int] = []

    def holding(k: int) -> Callable[[Session], None]:
        def work(session: Session) -> None:
            session.add(Tenant(name=f"t{k}"))
            session.flush()
            time.sleep(0.02)
            order.append(k)

        return work

    async def many() -> list[object]:
        return await asyncio.gather(*(db.write(holding(k)) for k in range(12)))

    assert asyncio.run(many()) == [None] * 12
    assert order == list(range(12))
    with Session(engine) as session:
        assert set(session.scalars(select(Tenant.name))) == {f"t{k}" for k in range(12)}
    engine.dispose()


def test_a_token_is_looked_up_while_another_transaction_holds_the_write_lock(
    tmp_path: Path, migrated: Callable[[Path], str]
) -> None:
    engine = make_engine(migrated(tmp_path / "state"))
    event.listen(engine, "connect", lambda conn, _: conn.execute("PRAGMA busy_timeout=50"))
    with Session(engine) as session, session.begin():
        assert register_token(session, "tok-1")
    with write_lock_held(engine, "busy"):
        who = asyncio.run(Authenticator(session_factory(engine)).authenticate("tok-1"))
    assert who.role == "provider"
    engine.dispose()
