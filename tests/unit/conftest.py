"""Fixtures of the controller API's unit tests: a migrated SQLite database with tokens, the
in-memory service of tests/controller_api_support.py, and a TestClient of the app over both."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from tests.controller_api_support import FakeService, Tokens, make_tokens
from vnet.controller.api import make_app
from vnet.controller.db import default_url, make_engine, session_factory, upgrade


@pytest.fixture
def sessions(tmp_path: Path) -> Iterator[sessionmaker[Session]]:
    url = default_url(tmp_path)
    upgrade(url)
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
