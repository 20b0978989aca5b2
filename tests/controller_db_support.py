"""What the controller database tests do on SQLite (unit) and PostgreSQL (integration) alike."""

from __future__ import annotations

import json
import sys
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session

from vnet.controller.db import (
    Base,
    Connection,
    ConnectionState,
    Host,
    Link,
    Refused,
    Reservation,
    Tenant,
    make_engine,
    reserve,
)
from vnet.controller.db.numbers import add_connection


@dataclass
class Net:
    tenant_id: int


def schema_diff(engine: Engine) -> list[object]:
    """What autogenerate would change to make the database match the models; [] when equal."""
    with engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        return list(compare_metadata(context, Base.metadata))


def populate(session: Session, links: dict[str, int]) -> Net:
    """A tenant and two hosts, h1 and h2, joined by `links` ({name: capacity bit/s})."""
    tenant = Tenant(name="acme")
    h1 = Host(name="h1", agent_endpoint="10.0.0.1:830", credentials_ref="file:/etc/vnet/h1.key")
    h2 = Host(name="h2", agent_endpoint="10.0.0.2:830", credentials_ref="file:/etc/vnet/h2.key")
    session.add_all([tenant, h1, h2])
    session.flush()
    for name, capacity in links.items():
        session.add(Link(name=name, a_host_id=h1.id, b_host_id=h2.id, capacity_bps=capacity))
    session.flush()
    return Net(tenant.id)


def connection(net: Net, bps: int, key: str | None = None, name: str | None = None) -> Connection:
    """A connection from e1 to e2, not yet added (`numbers.add_connection` numbers it)."""
    return Connection(
        tenant_id=net.tenant_id,
        name=name or f"c{uuid.uuid4().hex[:12]}",
        a="e1",
        b="e2",
        bandwidth_bps=bps,
        idempotency_key=key,
    )


def add(session: Session, net: Net, bps: int, key: str | None = None, **kw: str) -> Connection:
    """A new connection, numbered and flushed."""
    conn = connection(net, bps, key, **kw)
    add_connection(session, conn)
    return conn


@dataclass
class Race:
    admitted: int = 0
    refusals: list[Refused] = field(default_factory=list)


def race(
    urls: list[str],
    net: Net,
    link: str,
    bps: int,
    requests: int,
    threads: int,
    mixed: bool = False,
) -> Race:
    """`requests` reservations of `bps` on `link`, spread over one engine per URL (separate
    connection pools, as separate controller processes have), `threads` at a time: all in
    the link's forward direction, or (`mixed`) forward, reverse and both in turn."""
    kinds = [(True,), (False,), (True, False)] if mixed else [(True,)]
    engines = [make_engine(url, pool_size=threads, max_overflow=0) for url in urls]
    outcome = Race()

    def one(index: int) -> Refused | None:
        try:
            with Session(engines[index % len(engines)]) as session, session.begin():
                conn = add(session, net, bps, key=str(uuid.uuid4()))
                demands = {(link, forward): bps for forward in kinds[index % len(kinds)]}
                reserve(session, conn, demands)  # a refusal rolls it all back
        except Refused as refused:
            return refused
        return None

    try:
        with ThreadPoolExecutor(threads) as pool:
            for refused in pool.map(one, range(requests)):
                if refused is None:
                    outcome.admitted += 1
                else:
                    outcome.refusals.append(refused)
    finally:
        for engine in engines:
            engine.dispose()
    return outcome


def committed_bps(engine: Engine, link: str, forward: bool | None = None) -> int:
    with Session(engine) as session:
        query = (
            select(func.coalesce(func.sum(Reservation.bps), 0))
            .join(Link, Link.id == Reservation.link_id)
            .where(Link.name == link, Reservation.released.is_(None))
        )
        if forward is not None:
            query = query.where(Reservation.forward == forward)
        return int(session.scalar(query) or 0)


def live_numbers_are_distinct(engine: Engine) -> int:
    """How many connections are live; fails if two of them share a number."""
    with Session(engine) as session:
        query = select(Connection.number).where(Connection.state != ConnectionState.RELEASED)
        numbers = list(session.scalars(query))
    assert len(set(numbers)) == len(numbers), f"a number is used twice: {sorted(numbers)}"
    return len(numbers)


def race_in_process() -> None:
    """A controller process's share of a race (`python -m tests.controller_db_support JSON`):
    says `ready` once imported, races when its stdin says go, prints the outcome as JSON."""
    ask = json.loads(sys.argv[1])
    print("ready", flush=True)
    sys.stdin.readline()
    outcome = race([ask["url"]], Net(**ask["net"]), ask["link"], ask["bps"], ask["requests"], 10)
    refusals = [(s.link, s.forward, s.missing_bps) for r in outcome.refusals for s in r.shortfalls]
    print(json.dumps({"admitted": outcome.admitted, "refusals": refusals}), flush=True)


if __name__ == "__main__":
    race_in_process()


def held_per_direction(engine: Engine) -> dict[tuple[str, bool], int]:
    with Session(engine) as session:
        query = (
            select(Link.name, Reservation.forward, func.sum(Reservation.bps))
            .join(Link, Link.id == Reservation.link_id)
            .where(Reservation.released.is_(None))
            .group_by(Link.name, Reservation.forward)
        )
        return {(n, bool(f)): int(t) for n, f, t in session.execute(query)}
