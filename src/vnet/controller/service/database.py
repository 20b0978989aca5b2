"""The service's way into SQL: synchronous SQLAlchemy sessions run in worker threads.

SQLAlchemy's ORM is synchronous; the service is asyncio. Every piece of database work is one
function of a session, run by `asyncio.to_thread` inside one short transaction (committed when
the function returns, rolled back when it raises), so no transaction ever spans an await on an
agent. The seconds each call takes (waiting for the write lock included) are added to the
request's "db" timing, less what the function itself reports as path computation.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import time
import weakref
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy import Engine
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlalchemy.orm import Session

from vnet.controller.db import session_factory
from vnet.controller.db.engine import READ_ONLY

T = TypeVar("T")
K = TypeVar("K")
Timings = dict[str, float]

# a transaction that lost a race on a unique number or a lock (two controllers allocating
# the same piece number, a deadlock the database broke) is redone this often
RETRIES = 3


def add_time(timings: Timings | None, phase: str, seconds: float) -> None:
    if timings is not None:
        timings[phase] = timings.get(phase, 0.0) + seconds


@dataclass
class _Queued:
    item: Any
    work: Callable[[Session, list[Any]], None]
    timings: Timings | None
    done: asyncio.Future[None]


Answer = tuple[bool, BaseException | None]  # (True, None) or (False, what the work raised)


def _batches(queued: list[_Queued], session: Session) -> list[Answer]:
    """Each work once for all its items, in a savepoint; a work that raises is done again
    for each item alone, each in a savepoint of its own."""
    answers: dict[int, Answer] = {}
    works: dict[Callable[[Session, list[Any]], None], list[int]] = {}
    for k, item in enumerate(queued):
        works.setdefault(item.work, []).append(k)
    for work, ks in works.items():
        if not _written(session, work, [queued[k].item for k in ks]):
            for k in ks:
                answers[k] = _written_alone(session, work, queued[k].item)
        else:
            answers.update((k, (True, None)) for k in ks)
    return [answers[k] for k in range(len(queued))]


def _written(
    session: Session, work: Callable[[Session, list[Any]], None], items: list[Any]
) -> bool:
    try:
        with session.begin_nested():
            work(session, items)
        return True
    except Exception:
        return False


def _written_alone(
    session: Session, work: Callable[[Session, list[Any]], None], item: Any
) -> Answer:
    try:
        with session.begin_nested():
            work(session, [item])
        return (True, None)
    except Exception as err:
        return (False, err)


def _answer(queued: list[_Queued], answers: list[Answer], timings: Timings) -> None:
    for item, (ok, err) in zip(queued, answers, strict=True):
        for phase, seconds in timings.items():
            add_time(item.timings, phase, seconds)
        if item.done.done():
            continue  # its caller went away
        if ok:
            item.done.set_result(None)
        else:
            item.done.set_exception(err or RuntimeError("write failed"))


class Database:
    """One engine's sessions, used from asyncio."""

    def __init__(self, engine: Engine):
        self.engine = engine
        self.sessions = session_factory(engine)
        self._together: list[_Queued] = []
        self._tasks: set[asyncio.Task[None]] = set()
        # SQLite takes one writer at a time. This process's writes queue for one thread, in
        # the order they were asked, instead of several threads polling its lock: its busy
        # handler is not fair, and at 10 creates in flight one writer lost to the others for
        # the whole busy timeout and its request was answered 503. The one thread takes the
        # next write as soon as the last one ends, with no turn of the event loop between
        # them. Another process's writer still meets the busy timeout. PostgreSQL's writers
        # lock rows, not the database.
        self._writer: ThreadPoolExecutor | None = None
        if engine.dialect.name == "sqlite":
            self._writer = ThreadPoolExecutor(1, thread_name_prefix="sqlite-writer")
            weakref.finalize(self, self._writer.shutdown, wait=False)

    async def write_together(
        self, item: K, work: Callable[[Session, list[K]], None], timings: Timings | None = None
    ) -> None:
        """`work(session, items)` once for the items asked with the same `work` in the same
        turn of the event loop, in one transaction with the other works asked then. If it
        raises, each of its items is written alone, in a savepoint of its own: what one
        raises undoes it alone and is raised to its caller. (The moves of one failure
        journal COMMITTED at once: 100 of them took 100 transactions, 0.45 s on SQLite, then
        100 UPDATEs in savepoints, 0.1-0.2 s; one UPDATE for all of them about 3 ms.)"""
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        if not self._together:
            asyncio.get_running_loop().call_soon(self._write_queued)
        self._together.append(_Queued(item, work, timings, done))
        await done

    def _write_queued(self) -> None:
        queued, self._together = self._together, []
        task = asyncio.get_running_loop().create_task(self._write_all(queued))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _write_all(self, queued: list[_Queued]) -> None:
        timings: Timings = {}
        try:
            answers = await self.write(lambda s: _batches(queued, s), timings)
        except Exception as err:  # the transaction itself failed: every caller hears it
            answers = [(False, err)] * len(queued)
        except BaseException:
            for item in queued:
                item.done.cancel()
            raise
        _answer(queued, answers, timings)

    async def read(self, work: Callable[[Session], T], timings: Timings | None = None) -> T:
        """`work` in one transaction that only reads: on SQLite without the write lock (a
        snapshot, read beside whoever writes)."""
        return await asyncio.to_thread(self._run, work, timings, True)

    async def write(
        self, work: Callable[[Session], T], timings: Timings | None = None, *, retry: bool = False
    ) -> T:
        """`work` in one transaction; with `retry`, redone after an integrity or lock error
        (the work must then be safe to redo: it starts from what the database holds)."""
        attempts = RETRIES if retry else 1
        for attempt in range(1, attempts + 1):
            try:
                return await self._write_once(work, timings)
            except (IntegrityError, OperationalError):
                if attempt == attempts:
                    raise
        raise AssertionError("unreachable")

    async def _write_once(self, work: Callable[[Session], T], timings: Timings | None) -> T:
        if self._writer is None:
            return await asyncio.to_thread(self._run, work, timings)
        asked = time.perf_counter()

        def in_turn() -> T:
            add_time(timings, "db", time.perf_counter() - asked)  # its wait is database time
            return self._run(work, timings)

        in_context = functools.partial(contextvars.copy_context().run, in_turn)
        return await asyncio.get_running_loop().run_in_executor(self._writer, in_context)

    def _run(self, work: Callable[[Session], T], timings: Timings | None, reads: bool = False) -> T:
        started = time.perf_counter()
        spent_planning = {"path": 0.0}
        try:
            with self.sessions() as session, session.begin():
                if reads:  # before the first statement: the transaction begins with it
                    session.connection(execution_options={READ_ONLY: True})
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
