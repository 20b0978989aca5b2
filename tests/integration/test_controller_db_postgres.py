"""The controller's state on a real PostgreSQL (Debian's server, started by vnet.tools.postgres):
the SQLite suite's database-independent tests again, plus what only PostgreSQL shows."""

from __future__ import annotations

import itertools
import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from subprocess import PIPE

import psycopg
import pytest
from sqlalchemy import Engine, text
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session

from tests.controller_db_support import (
    add,
    committed_bps,
    connection,
    live_numbers_are_distinct,
    populate,
)
from tests.unit.test_controller_db import (  # noqa: F401  (collected again, on PostgreSQL)
    GBIT,
    test_a_move_is_not_counted_twice_where_both_paths_run,
    test_a_name_is_unique_per_tenant_among_live_connections,
    test_each_direction_of_a_link_has_its_own_capacity,
    test_idempotency_key_is_unique_per_tenant,
    test_make_before_break_counts_both_paths_and_releases_once,
    test_migrations_produce_exactly_the_models,
    test_numbers_are_the_smallest_free_among_live_connections,
    test_reserve_release_and_refusal_naming_the_link_direction,
    test_the_journal_finds_what_was_in_flight,
    test_the_same_idempotency_key_in_another_tenant_is_another_request,
    test_two_engines_never_over_admit_a_link,
    test_two_engines_never_over_admit_either_direction,
    test_usable_capacity_is_the_callers_rule,
)
from vnet.controller.db import make_engine, reserve, upgrade
from vnet.tools import postgres
from vnet.tools.errors import ToolError
from vnet.tools.processes import is_running, stop_child

ROOT = Path(__file__).resolve().parents[2]

_names = itertools.count()


@pytest.fixture(scope="module")
def server() -> Iterator[postgres.Postgres]:
    with postgres.running() as pg:
        yield pg
    assert not is_running(pg.process)
    assert not pg.directory.exists()


@pytest.fixture
def url(server: postgres.Postgres) -> str:
    url = server.create_database(f"t{next(_names)}")
    upgrade(url)
    return url


@pytest.fixture
def engine(url: str) -> Iterator[Engine]:
    engine = make_engine(url)
    yield engine
    engine.dispose()


def test_a_reservation_locks_its_links_and_only_those(engine: Engine) -> None:
    with Session(engine) as session, session.begin():
        net = populate(session, {"l1": GBIT, "l2": GBIT})
    with Session(engine) as holder, holder.begin():
        first = add(holder, net, 1000)
        reserve(holder, first, {("l1", True): 1000})  # l1's row stays locked until commit
        with Session(engine) as other, other.begin():
            other.execute(text("SET LOCAL lock_timeout = '100ms'"))
            second = connection(net, 1000)
            second.number = 2  # add_connection would wait on the holder's new number row
            other.add(second)
            reserve(other, second, {("l2", True): 1000})  # a disjoint link: no waiting
            with pytest.raises(OperationalError) as waited:
                reserve(other, second, {("l1", False): 1000})  # l1's other direction: same row
            assert isinstance(waited.value.orig, psycopg.errors.LockNotAvailable)
            other.rollback()


def test_two_controller_processes_never_over_admit_a_link(engine: Engine, url: str) -> None:
    capacity, bps = GBIT, GBIT // 30
    with Session(engine) as session, session.begin():
        net = populate(session, {"hot": capacity})
    ask = json.dumps({"url": url, "net": asdict(net), "link": "hot", "bps": bps, "requests": 50})
    argv = [sys.executable, "-m", "tests.controller_db_support", ask]
    workers = [
        subprocess.Popen(argv, cwd=ROOT, stdin=PIPE, stdout=PIPE, text=True) for _ in range(2)
    ]
    try:
        for worker in workers:  # both imported and connected-ready before either starts
            assert worker.stdout is not None and worker.stdout.readline() == "ready\n"
        outcomes = [json.loads(worker.communicate("go\n", timeout=120)[0]) for worker in workers]
    finally:
        for worker in workers:
            stop_child(worker)
    assert sum(outcome["admitted"] for outcome in outcomes) == 30
    assert committed_bps(engine, "hot") == 30 * bps <= capacity
    refusals = [refusal for outcome in outcomes for refusal in outcome["refusals"]]
    assert len(refusals) == 70
    assert all(link == "hot" and fwd and missing > 0 for link, fwd, missing in refusals)
    assert live_numbers_are_distinct(engine) == 30


def test_the_server_runs_unprivileged_on_a_private_socket(server: postgres.Postgres) -> None:
    status = Path(f"/proc/{server.process.pid}/status").read_text()
    uid = next(line.split()[1] for line in status.splitlines() if line.startswith("Uid:"))
    assert int(uid) != 0
    assert (server.socket_dir / f".s.PGSQL.{postgres.PORT}").is_socket()
    with psycopg.connect(host=str(server.socket_dir), user="vnet", dbname="postgres") as conn:
        assert conn.execute("SHOW listen_addresses").fetchone() == ("",)


def test_a_server_that_fails_to_start_leaves_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(postgres.SETTINGS, "max_connections", "not-a-number")
    # its directory goes into a parent of this test's own: other servers in /tmp (tests
    # run side by side, benchmarks) come and go meanwhile and made a comparison of /tmp
    # fail now and then. The parent is 0755 so the server's user reaches its directory.
    parent = Path(tempfile.mkdtemp(prefix="vnet-pgtest-"))
    parent.chmod(0o755)
    monkeypatch.setattr(tempfile, "tempdir", str(parent))
    try:
        with pytest.raises(ToolError, match="postgres exited"), postgres.running():
            pass
        assert list(parent.iterdir()) == []
    finally:
        shutil.rmtree(parent, ignore_errors=True)
