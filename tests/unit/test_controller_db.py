"""The controller's state on embedded SQLite: schema, migrations, ledger, concurrency."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import Engine, inspect, select, text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from tests.controller_db_support import (
    Net,
    add,
    committed_bps,
    live_numbers_are_distinct,
    populate,
    race,
    schema_diff,
)
from vnet.controller.db import (
    Base,
    Connection,
    ConnectionEvent,
    ConnectionState,
    Host,
    Link,
    Refused,
    RequestPhase,
    Reservation,
    ReservationRole,
    Tenant,
    UnknownLinks,
    VirtualRouter,
    default_url,
    journal,
    make_engine,
    release,
    reserve,
    upgrade,
)
from vnet.controller.db.ledger import discard, held_bps, held_by_direction, switch
from vnet.controller.db.numbers import NumbersExhausted, smallest_free

GBIT = 1_000_000_000


@pytest.fixture
def url(request: pytest.FixtureRequest, tmp_path: Path, migrated: Callable[[Path], str]) -> str:
    """A copy of the database migrated once for the session (conftest.py); migrated here for
    the tests of the migration and of a new database's settings (marked `migrates`)."""
    if request.node.get_closest_marker("migrates") is None:
        return migrated(tmp_path / "state")
    url = default_url(tmp_path / "state")
    upgrade(url)
    return url


@pytest.fixture
def engine(url: str) -> Engine:
    engine = make_engine(url)
    yield engine
    engine.dispose()


@pytest.mark.migrates
def test_default_database_is_a_wal_file_with_foreign_keys(tmp_path: Path, engine: Engine) -> None:
    assert (tmp_path / "state" / "controller.db").is_file()
    with engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
    with Session(engine) as session, pytest.raises(IntegrityError):
        session.add(VirtualRouter(tenant_id=99, host_id=99, name="orphan"))
        session.commit()


@pytest.mark.migrates
def test_migrations_produce_exactly_the_models(engine: Engine, url: str) -> None:
    assert schema_diff(engine) == []
    upgrade(url)  # a second run finds nothing to do
    assert schema_diff(engine) == []
    assert set(inspect(engine).get_table_names()) == set(Base.metadata.tables) | {"alembic_version"}


def test_unknown_database_kinds_are_refused() -> None:
    with pytest.raises(ValueError, match="SQLite or PostgreSQL"):
        make_engine("mysql://localhost/x")
    with pytest.raises(ValueError, match="psycopg 3") as refused:
        make_engine("postgresql+psycopg2://vnet:s3cret@localhost/x")
    assert "s3cret" not in str(refused.value)


def test_a_host_shows_no_credentials() -> None:
    host = Host(name="h1", agent_endpoint="10.0.0.1:830", credentials_ref="file:/secret")
    assert "secret" not in repr(host)


def test_reserve_release_and_refusal_naming_the_link_direction(engine: Engine) -> None:
    with Session(engine) as session, session.begin():
        net = populate(session, {"l1": GBIT, "l2": GBIT})
        first = add(session, net, 600_000_000)
        reserve(session, first, {("l1", True): 600_000_000, ("l2", True): 600_000_000})
    with Session(engine) as session, session.begin():
        second = add(session, net, 500_000_000)
        with pytest.raises(Refused) as refused:
            reserve(session, second, {("l1", True): 500_000_000, ("l2", True): 300_000_000})
        (shortfall,) = refused.value.shortfalls
        assert (shortfall.link, shortfall.forward, shortfall.direction) == ("l1", True, "h1 -> h2")
        assert shortfall.missing_bps == 100_000_000
        assert "link l1 (h1 -> h2) lacks 100000000 bit/s" in str(refused.value)
        with pytest.raises(UnknownLinks, match="no such link: nowhere"):
            reserve(session, second, {("nowhere", True): 1})
        with pytest.raises(ValueError, match="positive: l2 reverse"):
            reserve(session, second, {("l2", False): 0})
    assert committed_bps(engine, "l1") == 600_000_000
    with Session(engine) as session, session.begin():
        assert release(session, session.merge(first)) == 2
        assert release(session, session.merge(first)) == 0  # exactly once
    assert committed_bps(engine, "l1") == 0


def test_each_direction_of_a_link_has_its_own_capacity(engine: Engine) -> None:
    with Session(engine) as session, session.begin():
        net = populate(session, {"l1": GBIT})
        there = add(session, net, GBIT)
        reserve(session, there, {("l1", True): GBIT})
        back = add(session, net, GBIT)
        assert reserve(session, back, {("l1", False): GBIT}) == 1  # the other direction is free
        assert [(r.forward, r.bps) for r in _rows(session, back)] == [(False, GBIT)]
        assert held_bps(session, "l1", True) == held_bps(session, "l1", False) == GBIT
        assert held_by_direction(session) == {("l1", True): GBIT, ("l1", False): GBIT}
        third = add(session, net, 1)
        with pytest.raises(Refused) as refused:
            reserve(session, third, {("l1", True): 1, ("l1", False): 1})
        assert [(s.forward, s.direction, s.missing_bps) for s in refused.value.shortfalls] == [
            (True, "h1 -> h2", 1),
            (False, "h2 -> h1", 1),
        ]


def test_usable_capacity_is_the_callers_rule(engine: Engine) -> None:
    with Session(engine) as session, session.begin():
        net = populate(session, {"l1": GBIT})
        conn = add(session, net, GBIT)
        with pytest.raises(Refused, match="free 950000000 of 950000000"):
            reserve(session, conn, {("l1", True): GBIT}, lambda link: link.capacity_bps * 95 // 100)


def test_a_removed_link_or_host_carries_no_new_reservation(engine: Engine) -> None:
    """A request planned on an inventory read before a removal is refused under the row
    locks: the removed link (or a link of a removed host) has nothing free."""
    with Session(engine) as session, session.begin():
        net = populate(session, {"l1": GBIT, "l2": GBIT})
        conn = add(session, net, 1000)
        session.scalars(select(Link).where(Link.name == "l1")).one().removed = datetime.now(UTC)
        with pytest.raises(Refused, match=r"link l1 \(h1 -> h2\) lacks 1000 bit/s .*free 0 of 0"):
            reserve(session, conn, {("l1", True): 1000})
        session.scalars(select(Host).where(Host.name == "h2")).one().removed = datetime.now(UTC)
        with pytest.raises(Refused, match="link l2"):
            reserve(session, conn, {("l2", True): 1000})


def test_make_before_break_counts_both_paths_and_releases_once(engine: Engine) -> None:
    with Session(engine) as session, session.begin():
        net = populate(session, {"old": GBIT, "new": GBIT})
        conn = add(session, net, 400_000_000)
        reserve(session, conn, {("old", True): 400_000_000})
        (before,) = _rows(session, conn)
        reserve(
            session,
            conn,
            {("old", True): 400_000_000, ("new", True): 400_000_000},
            generation=1,
            role=ReservationRole.NEXT,
        )
        after = [r for r in _rows(session, conn) if r.generation == 1]
        assert held_bps(session, "old") == 800_000_000  # both generations carry traffic
        assert switch(session, conn, 1) == 1
        assert switch(session, conn, 1) == 0
        assert conn.generation == 1
        assert held_bps(session, "old") == 400_000_000
        assert held_bps(session, "new") == 400_000_000
        assert before.released is not None  # the session's own objects see the switch
        assert [(r.role, r.released) for r in after] == [(ReservationRole.CURRENT, None)] * 2


def test_a_failed_move_leaves_no_rows_and_its_retry_reserves_again(engine: Engine) -> None:
    """A refused make-before-break deletes its generation's rows: released rows kept the
    unique key (connection, link, generation, direction) and the retry was an IntegrityError."""
    moved = {("old", True): 300_000_000, ("new", True): 300_000_000}
    with Session(engine) as session, session.begin():
        net = populate(session, {"old": GBIT, "new": GBIT})
        conn = add(session, net, 300_000_000)
        reserve(session, conn, {("old", True): 300_000_000})
        reserve(session, conn, moved, generation=1, role=ReservationRole.NEXT, replacing=0)
        assert discard(session, conn, 1) == 2
        rows = session.scalars(select(Reservation).where(Reservation.connection_id == conn.id))
        assert [(r.generation, r.released) for r in rows] == [(0, None)]  # g untouched
        assert held_bps(session, "new") == 0
        again = reserve(session, conn, moved, generation=1, role=ReservationRole.NEXT, replacing=0)
        assert again == 2
        switch(session, conn, 1)
        with pytest.raises(ValueError, match="not a next one"):
            discard(session, conn, 1)  # a generation that carries traffic is released, never lost


def test_a_move_is_not_counted_twice_where_both_paths_run(engine: Engine) -> None:
    with Session(engine) as session, session.begin():
        net = populate(session, {"shared": GBIT, "new": GBIT})
        conn = add(session, net, 600_000_000)
        reserve(session, conn, {("shared", True): 600_000_000})
        grown = {("shared", True): 700_000_000, ("new", True): 700_000_000}
        with pytest.raises(Refused, match="shared"):  # counted twice, 1.3 Gbit/s would not fit
            reserve(session, conn, grown, generation=1, role=ReservationRole.NEXT)
        reserve(session, conn, grown, generation=1, role=ReservationRole.NEXT, replacing=0)
        other = add(session, net, 1)
        with pytest.raises(Refused, match="lacks 300000001"):  # everyone else sees both
            reserve(session, other, {("shared", True): 1})
        switch(session, conn, 1)
        assert held_bps(session, "shared") == 700_000_000


def test_idempotency_key_is_unique_per_tenant(engine: Engine) -> None:
    with Session(engine) as session, session.begin():
        net = populate(session, {"l1": GBIT})
        add(session, net, 1, key=None)
        add(session, net, 1, key=None)
        add(session, net, 1, key="retry-me")
    with Session(engine) as session, pytest.raises(IntegrityError):
        add(session, net, 1, key="retry-me")
        session.commit()


def test_numbers_are_the_smallest_free_among_live_connections(engine: Engine) -> None:
    with Session(engine) as session, session.begin():
        net = populate(session, {"l1": GBIT})
        first, second, third = (add(session, net, 1) for _ in range(3))
        assert [first.number, second.number, third.number] == [1, 2, 3]
        second.state = ConnectionState.RELEASED
        assert add(session, net, 1).number == 2  # a released connection's number is free
        assert add(session, net, 1).number == 4
    with Session(engine) as session, session.begin():
        session.add(
            Connection(tenant_id=net.tenant_id, name="x", number=1, a="e1", b="e2", bandwidth_bps=1)
        )
        with pytest.raises(IntegrityError, match="number"):
            session.flush()  # the database refuses a live number twice, whoever inserts it
    with Session(engine) as session, session.begin(), pytest.raises(IntegrityError):
        session.add(
            Connection(
                tenant_id=net.tenant_id, name="x", number=4096, a="e1", b="e2", bandwidth_bps=1
            )
        )
        session.flush()


def test_a_name_is_unique_per_tenant_among_live_connections(engine: Engine) -> None:
    with Session(engine) as session, session.begin():
        net = populate(session, {"l1": GBIT})
        old = add(session, net, 1, name="video")
        with pytest.raises(IntegrityError):
            add(session, net, 1, name="video")  # the savepoint only: the session goes on
        old.state = ConnectionState.RELEASED
        again = add(session, net, 1, name="video")  # once released, the name is free again
        assert again.number == 1
        other = Tenant(name="other")
        session.add(other)
        session.flush()
        theirs = add(session, Net(other.id), 1, name="video")
        session.add(ConnectionEvent(connection_id=theirs.id, kind="created", detail="h1 -> h2"))
        session.flush()
        assert [e.kind for e in session.scalars(select(ConnectionEvent))] == ["created"]


def test_numbers_run_out_with_a_precise_error() -> None:
    with pytest.raises(NumbersExhausted, match="all 4095 connection numbers"):
        smallest_free(set(range(1, 4096)))
    assert smallest_free({1, 2, 4}) == 3
    assert smallest_free({1, 2, 4}, among=3) in {3, 5, 6}


def test_two_engines_never_over_admit_a_link(engine: Engine, url: str) -> None:
    capacity, bps = GBIT, GBIT // 30
    with Session(engine) as session, session.begin():
        net = populate(session, {"hot": capacity})
    outcome = race([url, url], net, "hot", bps, requests=100, threads=10)
    assert outcome.admitted == 30
    assert committed_bps(engine, "hot") == 30 * bps <= capacity
    assert len(outcome.refusals) == 70
    for refused in outcome.refusals:
        (shortfall,) = refused.shortfalls
        assert shortfall.link == "hot" and shortfall.forward and shortfall.missing_bps > 0
    assert live_numbers_are_distinct(engine) == 30


def test_two_engines_never_over_admit_either_direction(engine: Engine, url: str) -> None:
    """Requests for one direction, the other, and both, in turn: each direction fills to
    exactly what fits (34 and 33 one-way requests each want more than its 30 places)."""
    capacity, bps = GBIT, GBIT // 30
    with Session(engine) as session, session.begin():
        net = populate(session, {"hot": capacity})
    outcome = race([url, url], net, "hot", bps, requests=100, threads=10, mixed=True)
    assert committed_bps(engine, "hot", True) == 30 * bps <= capacity
    assert committed_bps(engine, "hot", False) == 30 * bps <= capacity
    assert outcome.admitted + len(outcome.refusals) == 100
    for refused in outcome.refusals:
        assert refused.shortfalls and all(s.missing_bps > 0 for s in refused.shortfalls)
    assert live_numbers_are_distinct(engine) == outcome.admitted


def test_begin_immediate_takes_the_write_lock_at_the_start(engine: Engine) -> None:
    with engine.connect() as first:
        first.execute(text("SELECT 1"))  # a read, but BEGIN IMMEDIATE took the write lock
        other = sqlite3.connect(str(engine.url.database), timeout=0.05)
        try:
            with pytest.raises(sqlite3.OperationalError, match="locked"):
                other.execute("BEGIN IMMEDIATE")
        finally:
            other.close()


def test_the_journal_finds_what_was_in_flight(engine: Engine) -> None:
    with Session(engine) as session, session.begin():
        net = populate(session, {"l1": GBIT})
        done = journal.open_request(session, "create", tenant_id=net.tenant_id, hosts=["h1"])
        stuck = journal.open_request(session, "release", request_id="r-stuck", hosts=["h1", "h2"])
        for phase in (RequestPhase.RESERVED, RequestPhase.PREPARED, RequestPhase.DONE):
            journal.advance(session, done.request_id, phase)
        journal.advance(session, stuck.request_id, RequestPhase.COMMITTED)
        done_id = done.request_id
    with Session(engine) as session, session.begin():  # as a restarted controller sees it
        (pending,) = journal.in_flight(session)
        assert (pending.request_id, pending.phase, pending.hosts) == (
            "r-stuck",
            RequestPhase.COMMITTED,
            ["h1", "h2"],
        )
        with pytest.raises(ValueError, match="from committed to reserved"):
            journal.advance(session, "r-stuck", RequestPhase.RESERVED)
        with pytest.raises(ValueError, match="from done"):
            journal.advance(session, done_id, RequestPhase.FAILED)
        with pytest.raises(LookupError, match="r-none: not in the journal"):
            journal.advance(session, "r-none", RequestPhase.DONE)
        journal.advance(session, "r-stuck", RequestPhase.FAILED, error="h2 refused")
        assert journal.in_flight(session) == []


def test_the_same_idempotency_key_in_another_tenant_is_another_request(engine: Engine) -> None:
    with Session(engine) as session, session.begin():
        net = populate(session, {"l1": GBIT})
        other = Tenant(name="other")
        session.add(other)
        session.flush()
        first = add(session, net, 1, key="k")
        second = add(session, Net(other.id), 1, key="k")  # no IntegrityError: another tenant
        assert first.id != second.id
        assert (first.tenant_id, second.tenant_id) == (net.tenant_id, other.id)
        keyed = select(Connection).where(Connection.idempotency_key == "k")
        assert len(session.scalars(keyed).all()) == 2


def _rows(session: Session, conn: Connection) -> list[Reservation]:
    """The connection's reservation rows, as the session holds them (in insertion order)."""
    query = select(Reservation).where(Reservation.connection_id == conn.id)
    return list(session.scalars(query.order_by(Reservation.id)))
