"""The controller's inventory, and the planner on its books, on a real PostgreSQL: the SQLite
suites' tests again."""

from __future__ import annotations

import pytest

from tests.integration.test_controller_db_postgres import engine, url  # noqa: F401
from tests.unit.test_controller_inventory import (  # noqa: F401  (collected again, on PostgreSQL)
    test_a_conflicting_file_is_refused_and_changes_nothing,
    test_a_loaded_topology_comes_back_exactly,
    test_a_longer_file_adds_at_the_end,
    test_a_second_load_of_the_same_file_changes_nothing,
    test_agents_may_move_without_a_conflict,
    test_an_undeclared_tenant_keeps_its_place,
    test_bad_inventories_are_refused_precisely,
    test_connection_numbers_avoid_the_labs_own_connections,
    test_live_connections_come_back_as_planning_sees_them,
    test_network_guarantees_are_recorded_per_link,
    test_the_pieces_from_the_database_are_the_labs,
)
from tests.unit.test_controller_planner_db import (  # noqa: F401
    test_rearrangement_on_the_databases_books,
    test_the_planner_and_the_sql_ledger_agree_on_what_fits,
)
from vnet.tools import postgres


@pytest.fixture(scope="module")
def server(pg: postgres.Postgres) -> postgres.Postgres:
    """The session's server (conftest.py); test_controller_db_postgres.py starts its own, as
    its tests are about the server's life."""
    return pg
