"""Connection numbers: the piece id each live connection has on the agents (1..4095).

The number is the SID field and the tc class minor of the connection's pieces, so two live
connections must never share one, also when two controllers insert at the same moment. The
database guarantees it: a unique index on `number` over the live rows (state != released).
`add_connection` takes the smallest number no live connection holds (nor a connection of the
lab's own file, whose pieces share the VRs) and inserts the row in a
savepoint; if another controller committed the same number first, the insert fails on that
index (PostgreSQL makes the second insert wait for the first transaction, then refuses it),
the savepoint is rolled back and another free number is tried: one of the smallest few at
random, so that many requests that lost the same race do not all queue on the next number
again. On SQLite BEGIN IMMEDIATE already serialises writers, so the first choice holds.
"""

from __future__ import annotations

import random

from sqlalchemy import select, text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from vnet.controller.db.models import (
    LAB_NUMBERS,
    LIVE,
    NUMBER_MAX,
    Connection,
    TopologySettings,
)

ATTEMPTS = 16  # each failed attempt means another controller took a number meanwhile
SPREAD = 32  # a retry picks among this many of the smallest free numbers


class NumbersExhausted(Exception):
    """Every number 1..4095 belongs to a live connection."""

    def __init__(self) -> None:
        super().__init__(f"all {NUMBER_MAX} connection numbers are in use by live connections")


def live_numbers(session: Session) -> set[int]:
    # in the live-number index's own words (LIVE), so SQLite reads that index alone rather
    # than every connection ever made
    query = select(Connection.number).where(text(LIVE))
    return set(session.scalars(query))


def lab_numbers(session: Session) -> set[int]:
    """The ids of the lab's own connections (kept by `inventory.load`), never handed out."""
    settings = session.get(TopologySettings, 1)
    return set(settings.spec.get(LAB_NUMBERS, [])) if settings is not None else set()


def smallest_free(used: set[int], among: int = 1) -> int:
    """The smallest number not in `used`; with `among` > 1, one of the `among` smallest."""
    free = []
    for number in range(1, NUMBER_MAX + 1):
        if number not in used:
            free.append(number)
            if len(free) == among:
                break
    if not free:
        raise NumbersExhausted
    return random.choice(free)


def add_connection(session: Session, connection: Connection, attempts: int = ATTEMPTS) -> int:
    """Insert `connection` (not yet added) with the smallest free number; the number.

    Other integrity errors (a live connection of the tenant with the same name, a reused
    idempotency key) are raised as they are, with the session usable (only the savepoint
    was rolled back)."""
    session.flush()
    lab = lab_numbers(session)
    for attempt in range(attempts):
        used = live_numbers(session) | lab
        connection.number = smallest_free(used, 1 if attempt == 0 else SPREAD)
        try:
            with session.begin_nested():
                session.add(connection)
                session.flush()
            return connection.number
        except IntegrityError:
            if attempt == attempts - 1 or connection.number not in live_numbers(session):
                raise  # not the number's index (the caller's conflict), or lost every race
            # taken meanwhile by another controller: the rollback expunged the row, try again
    raise AssertionError("unreachable: the last attempt returns or raises")
