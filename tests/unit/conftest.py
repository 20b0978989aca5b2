"""Fixtures of the controller API's unit tests: a migrated SQLite database with tokens, the
in-memory service of tests/controller_api_support.py, and a TestClient of the app over both."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from tests.controller_api_support import FakeService, Tokens, make_tokens
from vnet.controller.api import make_app
from vnet.controller.db import default_url, make_engine, session_factory, upgrade
from vnet.controller.db.engine import DB_FILE


@pytest.fixture(scope="session")
def migrated_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The controller's SQLite database migrated once per session (Alembic takes a while)."""
    directory = tmp_path_factory.mktemp("migrated")
    upgrade(default_url(directory))  # its engine is disposed: the file holds everything
    return directory / DB_FILE


@pytest.fixture
def migrated(migrated_template: Path) -> Callable[[Path], str]:
    """A fresh copy of the migrated database in a state directory; its URL."""

    def copy(state_dir: Path) -> str:
        state_dir.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(migrated_template, state_dir / DB_FILE)
        return default_url(state_dir)

    return copy


@pytest.fixture
def sessions(tmp_path: Path, migrated: Callable[[Path], str]) -> Iterator[sessionmaker[Session]]:
    url = migrated(tmp_path)
    engine = make_engine(url)
    yield session_factory(engine)
    engine.dispose()


@pytest.fixture
def tokens(sessions: sessionmaker[Session]) -> Tokens:
    return make_tokens(sessions)


@pytest.fixture
def service() -> FakeService:
    return FakeService()


@pytest.fixture
def client(service: FakeService, sessions: sessionmaker[Session]) -> Iterator[TestClient]:
    app = make_app(service, sessions)
    with TestClient(app, raise_server_exceptions=False) as client:
        yield client
