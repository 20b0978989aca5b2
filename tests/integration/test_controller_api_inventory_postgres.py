"""POST /tenants/{t}/networks and /routers over the real Service on a real PostgreSQL
(Debian's server, started by vnet.tools.postgres): the SQLite tests of
test_controller_api_inventory.py again."""

from __future__ import annotations

import pytest

from tests.unit.test_controller_api_inventory import (  # noqa: F401  (collected again, on PostgreSQL)
    api,
    test_real_service_network_without_carriers_is_held_and_listed,
    test_real_service_refusals_are_precise_and_change_nothing,
)
from vnet.tools import postgres

from .world_support import unique_database


@pytest.fixture(scope="module")
def server(pg: postgres.Postgres) -> postgres.Postgres:
    """The session's server (conftest.py)."""
    return pg


@pytest.fixture
def url(server: postgres.Postgres) -> str:
    return server.create_database(unique_database("apiinv"))
