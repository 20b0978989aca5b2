"""The API over the real Service on a real PostgreSQL (Debian's server, started by
vnet.tools.postgres): the SQLite tests of test_controller_api_service.py again."""

from __future__ import annotations

import pytest

from tests.unit.test_controller_api_service import (  # noqa: F401  (collected again, on PostgreSQL)
    api,
    test_a_tenant_sees_only_its_own_objects,
    test_events_carry_the_links_the_caller_may_see,
    test_no_capacity_names_the_link_direction_in_json_and_xml,
    test_other_tenants_and_unknown_connections,
    test_refusals_before_any_agent_change_nothing,
)
from vnet.tools import postgres

from .world_support import unique_database


@pytest.fixture(scope="module")
def server(pg: postgres.Postgres) -> postgres.Postgres:
    """The session's server (conftest.py)."""
    return pg


@pytest.fixture
def url(server: postgres.Postgres) -> str:
    return server.create_database(unique_database("api"))
