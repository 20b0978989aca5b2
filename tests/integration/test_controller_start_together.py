"""Controllers sharing one database start together: one migrates and loads at a time."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from sqlalchemy import func, select

from tests.controller_topology_support import topology
from vnet.controller.db import Host, session_factory
from vnet.controller.server import prepare_database
from vnet.model.controller_config import ControllerConfig
from vnet.tools import postgres

from .world_support import unique_database


def _first_starts(url: str, tmp_path: Path, count: int) -> list[int]:
    """`count` controllers' first start at once on an empty database: hosts seen by each."""
    configs = [ControllerConfig(state_dir=tmp_path / f"c{i}", database=url) for i in range(count)]

    def start(config: ControllerConfig) -> int:
        engine = prepare_database(config, topology())
        try:
            with session_factory(engine)() as session:
                return int(session.scalar(select(func.count(Host.id))) or 0)
        finally:
            engine.dispose()

    pool = ThreadPoolExecutor(count)
    try:  # bounded: without one start at a time, PostgreSQL's first starts deadlocked
        return list(pool.map(start, configs, timeout=120))
    finally:  # a stuck start ends when the test's server is stopped
        pool.shutdown(wait=False, cancel_futures=True)


def test_first_starts_at_once_on_postgresql(tmp_path: Path, pg: postgres.Postgres) -> None:
    url = pg.create_database(unique_database("together"))
    assert _first_starts(url, tmp_path, 4) == [3, 3, 3, 3]


def test_first_starts_at_once_on_sqlite(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    assert _first_starts(url, tmp_path, 4) == [3, 3, 3, 3]
