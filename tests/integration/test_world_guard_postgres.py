"""The shared PostgreSQL server's guard (world_support.check_connections) on the session's
real server: a client left connected fails the test naming its database; a client that hangs
up while the guard looks (its server process exits late on a loaded machine) is no leak."""

from __future__ import annotations

import threading

import pytest
from sqlalchemy import Engine, text

from vnet.controller.db import make_engine
from vnet.tools import postgres

from .world_support import check_connections, client_databases, unique_database


def connected_engine(server: postgres.Postgres, prefix: str) -> Engine:
    engine = make_engine(server.create_database(unique_database(prefix)))
    with engine.connect() as connection:  # back to the pool, still connected
        connection.execute(text("SELECT 1"))
    return engine


def test_a_client_left_connected_fails_naming_its_database(pg: postgres.Postgres) -> None:
    before = client_databases(pg)
    engine = connected_engine(pg, "guardleft")
    try:
        with pytest.raises(AssertionError, match=r"test x left clients .*guardleft_"):
            check_connections(pg, before, "test x", closing=0.5)
    finally:
        engine.dispose()


def test_a_client_hanging_up_while_the_guard_looks_is_no_leak(pg: postgres.Postgres) -> None:
    before = client_databases(pg)
    engine = connected_engine(pg, "guardlate")
    late = threading.Timer(1.0, engine.dispose)  # a server process exiting after the test
    late.start()
    try:
        check_connections(pg, before, "test y")
    finally:
        late.join(5)
        engine.dispose()
