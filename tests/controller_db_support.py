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
    Host,
    Link,
    Refused,
    Reservation,
    Tenant,
    VirtualRouter,
    make_engine,
    reserve,
)


@dataclass
class Net:
    tenant_id: int
    src_vr_id: int
    dst_vr_id: int


def schema_diff(engine: Engine) -> list[object]:
    """What autogenerate would change to make the database match the models; [] when equal."""
    with engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        return list(compare_metadata(context, Base.metadata))


def populate(session: Session, links: dict[str, int]) -> Net:
    """A tenant, two hosts joined by `links` ({name: capacity bit/s}) and a VR on each."""
    tenant = Tenant(name="acme")
    h1 = Host(name="h1", agent_endpoint="10.0.0.1:830", credentials_ref="file:/etc/vnet/h1.key")
    h2 = Host(name="h2", agent_endpoint="10.0.0.2:830", credentials_ref="file:/etc/vnet/h2.key")
    session.add_all([tenant, h1, h2])
    session.flush()
    for name, capacity in links.items():
        session.add(Link(name=name, a_host_id=h1.id, b_host_id=h2.id, capacity_bps=capacity))
    vr1 = VirtualRouter(tenant_id=tenant.id, host_id=h1.id, name="vr1")
    vr2 = VirtualRouter(tenant_id=tenant.id, host_id=h2.id, name="vr2")
    session.add_all([vr1, vr2])
    session.flush()
    return Net(tenant.id, vr1.id, vr2.id)


def connection(net: Net, bps: int, key: str | None = None) -> Connection:
    return Connection(
        tenant_id=net.tenant_id,
        src_vr_id=net.src_vr_id,
        dst_vr_id=net.dst_vr_id,
        bandwidth_bps=bps,
        idempotency_key=key,
    )


@dataclass
class Race:
    admitted: int = 0
    refusals: list[Refused] = field(default_factory=list)


def race(urls: list[str], net: Net, link: str, bps: int, requests: int, threads: int) -> Race:
    """`requests` reservations of `bps` on `link`, spread over one engine per URL (separate
    connection pools, as separate controller processes have), `threads` at a time."""
    engines = [make_engine(url, pool_size=threads, max_overflow=0) for url in urls]
    outcome = Race()

    def one(index: int) -> Refused | None:
        try:
            with Session(engines[index % len(engines)]) as session, session.begin():
                conn = connection(net, bps, key=str(uuid.uuid4()))
                session.add(conn)
                reserve(session, conn, {link: bps})  # a refusal rolls the whole request back
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


def committed_bps(engine: Engine, link: str) -> int:
    with Session(engine) as session:
        query = (
            select(func.coalesce(func.sum(Reservation.bps), 0))
            .join(Link, Link.id == Reservation.link_id)
            .where(Link.name == link, Reservation.released.is_(None))
        )
        return int(session.scalar(query) or 0)


def race_in_process() -> None:
    """A controller process's share of a race (`python -m tests.controller_db_support JSON`):
    says `ready` once imported, races when its stdin says go, prints the outcome as JSON."""
    ask = json.loads(sys.argv[1])
    print("ready", flush=True)
    sys.stdin.readline()
    outcome = race([ask["url"]], Net(**ask["net"]), ask["link"], ask["bps"], ask["requests"], 10)
    refusals = [(s.link, s.missing_bps) for r in outcome.refusals for s in r.shortfalls]
    print(json.dumps({"admitted": outcome.admitted, "refusals": refusals}), flush=True)


if __name__ == "__main__":
    race_in_process()
