"""The links' running totals of what is held (db.ledger) stay equal to the sums of the
reservation rows through every ledger operation, and a release of the same rows twice, a
discard and a make-before-break's switch subtract exactly what they freed."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from tests.controller_db_support import add, populate
from vnet.controller.db import ReservationRole, make_engine, release, reserve
from vnet.controller.db.ledger import (
    discard,
    drift,
    held_by_direction,
    summed_by_direction,
    switch,
)

MBIT = 1_000_000


@pytest.fixture
def engine(tmp_path: Path, migrated: Callable[[Path], str]) -> Engine:
    engine = make_engine(migrated(tmp_path / "state"))
    yield engine
    engine.dispose()


def test_the_totals_follow_every_ledger_operation(engine: Engine) -> None:
    with Session(engine) as session, session.begin():
        net = populate(session, {"x": 1000 * MBIT, "y": 1000 * MBIT})
        one, two = add(session, net, 100 * MBIT), add(session, net, 50 * MBIT)
        reserve(session, one, {("x", True): 100 * MBIT, ("x", False): 10 * MBIT})
        reserve(session, two, {("x", True): 50 * MBIT, ("y", True): 50 * MBIT})
        assert held_by_direction(session) == {
            ("x", True): 150 * MBIT,
            ("x", False): 10 * MBIT,
            ("y", True): 50 * MBIT,
        }
        # make-before-break of `one` onto y: both generations count until the switch
        moved = {("y", True): 100 * MBIT}
        reserve(session, one, moved, generation=1, role=ReservationRole.NEXT, replacing=0)
        assert held_by_direction(session)[("y", True)] == 150 * MBIT
        switch(session, one, 1)
        assert held_by_direction(session) == {("x", True): 50 * MBIT, ("y", True): 150 * MBIT}
        # a move that failed: its rows are deleted and no longer counted
        reserve(session, two, {("x", False): 5 * MBIT}, generation=1, role=ReservationRole.NEXT)
        assert discard(session, two, 1) == 1
        assert drift(session) == {}
        # a release frees once: the second finds nothing to subtract
        assert release(session, two) == 2
        assert release(session, two) == 0
        assert held_by_direction(session) == {("y", True): 100 * MBIT}
        assert held_by_direction(session) == summed_by_direction(session)
        assert release(session, one) == 1
        assert held_by_direction(session) == {} and drift(session) == {}


def test_a_refused_reservation_changes_no_total(engine: Engine) -> None:
    with Session(engine) as session, session.begin():
        net = populate(session, {"x": 100 * MBIT})
        conn = add(session, net, 80 * MBIT)
        reserve(session, conn, {("x", True): 80 * MBIT})
        other = add(session, net, 30 * MBIT)
        with pytest.raises(Exception, match="lacks"):
            reserve(session, other, {("x", True): 30 * MBIT})
        assert held_by_direction(session) == {("x", True): 80 * MBIT}
        assert drift(session) == {}
