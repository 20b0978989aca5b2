"""The controller's real Service over SQLite and hosts in memory (MemorySouthbound): its
logic (flows, placement, admission, rearrangement, recovery, reconciliation) without root,
lab or agents. The hosts are TRIANGLE_LAB's, each holding the share a lab hands its agent
and checking every candidate with the model's own checks, as an agent does.

What a test asserts is read independently of the service: the hosts' running
configurations from the memory southbound, and the database with its own queries.
"""

from __future__ import annotations

import asyncio
import atexit
import re
import shutil
import tempfile
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from tests.controller_db_support import held_per_direction as held_by_direction
from tests.controller_topology_support import triangle
from vnet.controller import inventory
from vnet.controller.admission.cost import DEFAULT_PACKET_SIZE, Encapsulation, link_cost
from vnet.controller.db import default_url, make_engine, upgrade
from vnet.controller.db.engine import DB_FILE
from vnet.controller.db.models import Connection, ConnectionEvent, ConnectionState
from vnet.controller.principal import Principal
from vnet.controller.service.core import Service
from vnet.controller.southbound.memory import Failure, MemorySouthbound
from vnet.model.controller_api import ConnectionRequest
from vnet.model.controller_config import ControllerConfig
from vnet.model.topology import Topology

HOSTS = ("h1", "h2", "h3")
PROVIDER = Principal("provider")
ACME = Principal("tenant", "acme")
BETA = Principal("tenant", "beta")
CONFIRM_TIMEOUT = 2  # seconds: a confirm that goes unanswered is tried for 0.9 of it
T = TypeVar("T")
MBIT = 1_000_000


class Clock:
    """The agents' clock, moved by the test (their confirm timers run on it)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@dataclass
class World:
    """A database holding the triangle's inventory, and its hosts in memory."""

    url: str
    hosts: MemorySouthbound
    state: Path
    clock: Clock

    def service(self, settings: dict[str, Any] | None = None, **options: Any) -> Service:
        """The service over these hosts (`settings`: more of its configuration's fields)."""
        fields: dict[str, Any] = {
            "reconcile_interval": 3600,
            "utilisation_interval": 3600,
            "confirm_timeout": CONFIRM_TIMEOUT,
            **(settings or {}),
        }
        config = ControllerConfig(
            state_dir=self.state / f"controller-{uuid.uuid4().hex[:8]}",
            database=self.url,
            **fields,
        )
        return Service(config, make_engine(self.url), self.hosts, **options)

    def run(self, scenario: Callable[[Service], Awaitable[T]], **options: Any) -> T:
        """`scenario(service)` on a started service (recovery and reconciliation done)."""

        async def go() -> T:
            service = self.service(**options)
            await service.start(background=False)
            try:
                return await scenario(service)
            finally:
                await service.stop()
                service.db.engine.dispose()

        return asyncio.run(go())

    def pieces(self) -> dict[str, set[str]]:
        """Host -> the names of the connection pieces its running configuration holds."""
        return {h: {c.name for c in self.hosts.running(h).srv6.connections} for h in HOSTS}

    def engine(self) -> Engine:
        return make_engine(self.url)


def world(
    tmp_path: Path,
    check_yang: bool = True,
    topo: Topology | None = None,
    rpc_timeout: float = 0.0,
    url: str | None = None,
) -> World:
    """The triangle's (or `topo`'s) inventory in a new database (SQLite in `tmp_path`, or
    the empty one at `url`), its hosts in memory; `rpc_timeout`: seconds a call to a hung
    host waits before it times out."""
    topo = topo or triangle()
    if url is None:
        url = _copy_of(_template(topo), tmp_path)
    else:
        _load(url, topo)
    clock = Clock()
    hosts = MemorySouthbound.of_topology(topo, check_yang, clock, rpc_timeout=rpc_timeout)
    return World(url, hosts, tmp_path, clock)


_TEMPLATES: dict[str, Path] = {}  # a topology's JSON -> a SQLite file holding its inventory


def _template(topo: Topology) -> Path:
    """A SQLite database migrated and holding `topo`'s inventory, made once per process
    (Alembic and the inventory's load took 0.1-0.3 s of every world) and copied by each."""
    key = topo.model_dump_json()
    if key not in _TEMPLATES:
        where = Path(tempfile.mkdtemp(prefix="vnet-world-"))
        atexit.register(shutil.rmtree, where, True)
        _load(default_url(where), topo)  # its engine disposed: the file holds everything
        _TEMPLATES[key] = where / DB_FILE
    return _TEMPLATES[key]


def _copy_of(template: Path, state_dir: Path) -> str:
    state_dir.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(template, state_dir / DB_FILE)
    return default_url(state_dir)


def _load(url: str, topo: Topology) -> None:
    """The database at `url` migrated, holding `topo`'s inventory."""
    upgrade(url)
    engine = make_engine(url)
    try:
        with Session(engine) as session, session.begin():
            inventory.load(session, topo, [])
    finally:
        engine.dispose()


def voice(name: str, port: int, bandwidth: str, **more: Any) -> ConnectionRequest:
    """A UDP connection pc1 -> pc3 (tenant acme) to `port`."""
    fields = {"a": "pc1", "b": "pc3", "protocol": "udp", **more}
    return ConnectionRequest(name=name, dst_port=port, bandwidth=bandwidth, **fields)


def back_again(w: World, host: str, failure: Failure) -> None:
    """The agent runs again (a dead one started, a stopped one continued) and its confirm
    timeout has passed."""
    if failure == Failure.DIE:
        w.hosts.restart(host)
    elif failure == Failure.HANG:
        w.hosts.resume(host)
    w.clock.advance(CONFIRM_TIMEOUT + 1)


def may_hold(reason: str) -> set[str]:
    """The hosts the answer says may still hold the change (putback.describe's words)."""
    named = set()
    for listed in re.findall(r"hosts? ([\w, ]+?) did not answer", reason):
        named |= {h.strip() for h in listed.split(",")}
    named |= set(re.findall(r"host (\w+) could not be put back now", reason))
    return named


# -- what the database says, read with queries of the test's own -----------------------------
def held_per_direction(url: str) -> dict[tuple[str, bool], int]:
    engine = make_engine(url)
    try:
        return held_by_direction(engine)
    finally:
        engine.dispose()


def live_connections(url: str) -> dict[str, tuple[str, int]]:
    """vc<id> -> (state, generation) of every connection not released."""
    engine = make_engine(url)
    try:
        with Session(engine) as session:
            rows = session.execute(
                select(Connection.id, Connection.state, Connection.generation).where(
                    Connection.state != ConnectionState.RELEASED
                )
            )
            return {f"vc{i}": (state.value, gen) for i, state, gen in rows}
    finally:
        engine.dispose()


def database_state(url: str) -> tuple[Any, ...]:
    """What a refused request must leave as it was."""
    return tuple(sorted(live_connections(url).items())), tuple(
        sorted(held_per_direction(url).items())
    )


def cost(mbit: int, hops: int) -> int:
    """What a connection holds on each link direction of a path of `hops` links: its rate
    with the underlay's headers and the shaper margin (the admission's own arithmetic)."""
    return link_cost(mbit * MBIT, DEFAULT_PACKET_SIZE, Encapsulation(), hops)


def event_kinds(url: str) -> list[str]:
    """The kinds of every connection's history line, in order."""
    engine = make_engine(url)
    try:
        with Session(engine) as session:
            return list(session.scalars(select(ConnectionEvent.kind).order_by(ConnectionEvent.id)))
    finally:
        engine.dispose()
