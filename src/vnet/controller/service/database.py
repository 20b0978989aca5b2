"""The service's way into SQL: synchronous SQLAlchemy sessions run in worker threads.

SQLAlchemy's ORM is synchronous; the service is asyncio. Every piece of database work is one
function of a session, run by `asyncio.to_thread` inside one short transaction (committed when
the function returns, rolled back when it raises), so no transaction ever spans an await on an
agent. The seconds each call takes (waiting for the write lock included) are added to the
request's "db" timing, less what the function itself reports as path computation.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TypeVar

from sqlalchemy import Engine
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlalchemy.orm import Session

from vnet.controller.db import session_factory

T = TypeVar("T")
Timings = dict[str, float]

# a transaction that lost a race on a unique number or a lock (two controllers allocating
# the same piece number, a deadlock the database broke) is redone this often
RETRIES = 3


def add_time(timings: Timings | None, phase: str, seconds: float) -> None:
    if timings is not None:
        timings[phase] = timings.get(phase, 0.0) + seconds


class Database:
    """One engine's sessions, used from asyncio."""

    def __init__(self, engine: Engine):
        self.engine = engine
        self.sessions = session_factory(engine)

    async def read(self, work: Callable[[Session], T], timings: Timings | None = None) -> T:
        return await asyncio.to_thread(self._run, work, timings)

    async def write(
        self, work: Callable[[Session], T], timings: Timings | None = None, *, retry: bool = False
    ) -> T:
        """`work` in one transaction; with `retry`, redone after an integrity or lock error
        (the work must then be safe to redo: it starts from what the database holds)."""
        attempts = RETRIES if retry else 1
        for attempt in range(1, attempts + 1):
            try:
                return await asyncio.to_thread(self._run, work, timings)
            except (IntegrityError, OperationalError):
                if attempt == attempts:
                    raise
        raise AssertionError("unreachable")

    def _run(self, work: Callable[[Session], T], timings: Timings | None) -> T:
        started = time.perf_counter()
        spent_planning = {"path": 0.0}
        try:
            with self.sessions() as session, session.begin():
                session.info["timings"] = spent_planning
                return work(session)
        finally:
            elapsed = time.perf_counter() - started
            add_time(timings, "path", spent_planning["path"])
            add_time(timings, "db", elapsed - spent_planning["path"])


def planning_clock(session: Session) -> dict[str, float]:
    """Where a function run by `Database` adds the seconds it spends computing paths, so
    they count as "path" and not as "db"."""
    return session.info.setdefault("timings", {"path": 0.0})
