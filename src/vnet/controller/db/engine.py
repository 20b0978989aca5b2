"""Engines and sessions: SQLite embedded by default, PostgreSQL (psycopg 3) by URL.

SQLite: one file in the controller's state directory, WAL (readers do not block the writer),
foreign keys enforced (SQLite's default is off), and every transaction that may write opened
with BEGIN IMMEDIATE: it takes the database's single write lock at its start, so a
transaction that reads a link's free capacity and then reserves it cannot interleave with
another writer. A transaction that only reads (the execution option READ_ONLY) opens with a
plain BEGIN and reads a snapshot beside the writer: a listing of every connection taken
while a failure's hundred moves were being booked waited for them (and they for it).
PostgreSQL: READ COMMITTED, so each statement sees what the previous holder of a link's row
lock committed (see ledger.py); psycopg 3 through `postgresql+psycopg://`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

DB_FILE = "controller.db"
SQLITE_BUSY_MS = 10_000  # how long a writer waits for the write lock before failing
READ_ONLY = "vnet_read_only"  # an execution option: this connection's transaction only reads


def default_url(state_dir: Path) -> str:
    """The embedded database: a file in the controller's state directory."""
    return f"sqlite:///{(state_dir / DB_FILE).resolve()}"


def make_engine(url: str, **options: Any) -> Engine:
    """An engine for `url`, set up as above; unknown database kinds are refused."""
    parsed = make_url(url)
    shown = parsed.render_as_string(hide_password=True)  # errors never carry a password
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        return _sqlite(url, **options)
    if backend == "postgresql":
        if parsed.get_driver_name() != "psycopg":
            raise ValueError(
                f"{shown}: PostgreSQL is reached through psycopg 3 (postgresql+psycopg://)"
            )
        return create_engine(url, isolation_level="READ COMMITTED", **options)
    raise ValueError(f"{shown}: the controller's database is SQLite or PostgreSQL, not {backend}")


def session_factory(engine: Engine) -> sessionmaker[Session]:
    # objects stay readable after commit: the API answers from them
    return sessionmaker(engine, expire_on_commit=False)


def _sqlite(url: str, **options: Any) -> Engine:
    database = make_url(url).database
    if database and database != ":memory:":
        Path(database).parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(url, connect_args={"timeout": SQLITE_BUSY_MS / 1000}, **options)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # the driver's own implicit BEGIN would be deferred; we issue BEGIN IMMEDIATE below
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_MS}")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        reads = connection.get_execution_options().get(READ_ONLY, False)
        connection.exec_driver_sql("BEGIN" if reads else "BEGIN IMMEDIATE")

    return engine
