"""The planner on the database's books, as the service uses them (SQLite here; PostgreSQL in
tests/integration/test_controller_inventory_postgres.py): what it plans, the SQL ledger holds,
and where it says no, the SQL ledger says no too, naming the same link direction."""

from __future__ import annotations

from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from tests.controller_topology_support import agents, topology
from tests.unit import test_controller_inventory as on_sqlite
from tests.unit.test_controller_planner import POLICY, ask
from vnet.controller.db import (
    Connection,
    ConnectionState,
    Refused,
    Tenant,
    add_connection,
    held_by_direction,
    reserve,
)
from vnet.controller.errors import Rejected
from vnet.controller.held import held_connections
from vnet.controller.inventory import load, read, usable_bps
from vnet.controller.planner import plan_connection, rearrange
from vnet.model.controller_api import ConnectionRequest

url, engine = on_sqlite.url, on_sqlite.engine  # the fixtures: a migrated SQLite file


def create(session: Session, request: ConnectionRequest) -> Connection:
    """What the service does in its database transaction for a create."""
    tenant = session.scalar(select(Tenant).where(Tenant.name == "acme"))
    assert tenant is not None
    conn = Connection(
        tenant_id=tenant.id, name=request.name, a=request.a, b=request.b,
        bandwidth_bps=request.bandwidth, path=request.path,
    )  # fmt: skip
    add_connection(session, conn)
    inv = read(session)
    plan = plan_connection(
        inv, held_by_direction(session), "acme", request, conn.id, conn.number, POLICY
    )
    reserve(session, conn, plan.demands, usable_bps)
    conn.hops = [hop.model_dump() for hop in plan.hops]
    conn.segments = plan.segments
    conn.state = ConnectionState.ESTABLISHED
    return conn


def test_the_planner_and_the_sql_ledger_agree_on_what_fits(engine: Engine) -> None:
    with Session(engine) as session, session.begin():
        load(session, topology(), agents())
    pinned = ask(bandwidth="30mbit", path=["h1", "h3"])  # 33.9 Mbit/s on the wire; 99 usable
    for k in range(2):
        with Session(engine) as session, session.begin():
            conn = create(session, pinned.model_copy(update={"name": f"c{k}"}))
            assert conn.number == k + 1 and conn.hops[0]["router"] == "r1"
    with Session(engine) as session, session.begin():
        try:
            create(session, pinned.model_copy(update={"name": "c2"}))
        except Rejected as refused:
            (planned,) = refused.shortfalls
        else:
            raise AssertionError("a third 30 Mbit/s connection fit into 99 Mbit/s")
        session.rollback()
    with Session(engine) as session, session.begin():
        third = Connection(
            tenant_id=session.scalar(select(Tenant.id).where(Tenant.name == "acme")),
            name="c2",
            a="pc1",
            b="pc3",
            bandwidth_bps=30_000_000,
        )  # the SQL ledger alone, without the planner's word
        add_connection(session, third)
        try:
            reserve(session, third, {("h1-h3", True): planned.requested_bps}, usable_bps)
        except Refused as refused:
            (sql,) = refused.shortfalls
        else:
            raise AssertionError("the SQL ledger admitted what the planner refused")
        session.rollback()
    assert (sql.link, sql.direction, sql.missing_bps) == (
        planned.link,
        planned.direction,
        planned.missing_bps,
    )


def test_rearrangement_on_the_databases_books(engine: Engine) -> None:
    with Session(engine) as session, session.begin():
        load(session, topology(), agents())
        create(session, ask(name="bulk", bandwidth="60mbit"))  # the controller's choice
    with Session(engine) as session:
        live = held_connections(session)
        inv = read(session)
    done = rearrange(inv, live, "acme", ask(bandwidth="60mbit", path=["h1", "h3"]), 9, 2, POLICY)
    (move,) = done.moves
    assert move.view().new_path == ["h1", "h2", "h3"] and done.plan.path == ("h1", "h3")
