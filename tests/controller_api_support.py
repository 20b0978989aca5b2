"""What the controller API tests share: a database with tenants and tokens, and a small
in-memory ControllerService for tests of the HTTP layer alone (the real Service is tested
through the same API where it is available)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime

from sqlalchemy.orm import Session, sessionmaker

from vnet.controller.api.auth import create_token
from vnet.controller.db import Tenant
from vnet.controller.errors import Conflict, NotFound, Rejected
from vnet.controller.principal import Principal
from vnet.controller.service import Timings
from vnet.model.controller_api import (
    ConnectionAnswer,
    ConnectionCounters,
    ConnectionEvent,
    ConnectionRequest,
    ConnectionView,
    EndHostView,
    HostView,
    LinkDirection,
    LinkView,
    ModifyRequest,
    NetworkView,
    RouterView,
    ShaperCounters,
    Shortfall,
    StateChange,
    TenantView,
    TopologyView,
)

CAPACITY = 1_000_000_000


@dataclass
class Tokens:
    provider: str
    acme: str
    beta: str


def make_tokens(sessions: sessionmaker[Session]) -> Tokens:
    """Tenants acme and beta in the database, and a token for the provider and each tenant."""
    with sessions.begin() as session:
        session.add_all([Tenant(name="acme"), Tenant(name="beta")])
        session.flush()
        return Tokens(
            provider=create_token(session, "provider").token,
            acme=create_token(session, "tenant", "acme").token,
            beta=create_token(session, "tenant", "beta").token,
        )


@dataclass
class FakeService:
    """The ControllerService contract over a dict: one link of CAPACITY, two tenants. It
    records what the API handed it (idempotency keys, principals) for the tests to check."""

    tenants_: list[str] = field(default_factory=lambda: ["acme", "beta"])
    conns: dict[tuple[str, str], ConnectionView] = field(default_factory=dict)
    keys: list[str | None] = field(default_factory=list)
    by_key: dict[tuple[str, str], str] = field(default_factory=dict)
    changes: asyncio.Queue[StateChange] = field(default_factory=asyncio.Queue)

    def _known_tenant(self, tenant: str) -> None:
        if tenant not in self.tenants_:
            raise NotFound(f"unknown tenant {tenant!r}", field="tenant", code="unknown-tenant")

    async def create_connection(
        self,
        who: Principal,
        tenant: str,
        request: ConnectionRequest,
        idempotency_key: str | None = None,
        timings: Timings | None = None,
    ) -> ConnectionAnswer:
        who.require_tenant(tenant)
        self._known_tenant(tenant)
        self.keys.append(idempotency_key)
        if timings is not None:
            timings.update(db=0.002, path=0.001, devices=0.010)
        if idempotency_key and (tenant, idempotency_key) in self.by_key:
            return ConnectionAnswer(
                connection=self.conns[tenant, self.by_key[tenant, idempotency_key]]
            )
        if request.bandwidth > CAPACITY:
            free = CAPACITY - sum(c.bandwidth for c in self.conns.values())
            short = Shortfall(
                link="l1",
                direction="h1 -> h2",
                requested_bps=request.bandwidth,
                free_bps=free,
                missing_bps=request.bandwidth - free,
            )
            raise Rejected("link l1 (h1 -> h2) lacks capacity", [short])
        if (tenant, request.name) in self.conns:
            raise Conflict(f"connection {request.name!r} exists", field="name")
        view = ConnectionView(
            tenant=tenant,
            name=request.name,
            status="established",
            a=request.a,
            b=request.b,
            protocol=request.protocol,
            dst_port=request.dst_port,
            bandwidth=request.bandwidth,
            path=request.path or ["h1", "h2"],
            segments=["fc00:2::100"],
            created=datetime(2026, 11, 23, 8, 0, tzinfo=UTC),
        )
        self.conns[tenant, request.name] = view
        if idempotency_key:
            self.by_key[tenant, idempotency_key] = request.name
        return ConnectionAnswer(connection=view)

    async def modify_connection(
        self,
        who: Principal,
        tenant: str,
        name: str,
        request: ModifyRequest,
        timings: Timings | None = None,
    ) -> ConnectionAnswer:
        view = await self.connection(who, tenant, name)
        changed = view.model_copy(
            update={"bandwidth": request.bandwidth or view.bandwidth, "generation": 1}
        )
        self.conns[tenant, name] = changed
        return ConnectionAnswer(connection=changed)

    async def release_connection(
        self, who: Principal, tenant: str, name: str, timings: Timings | None = None
    ) -> ConnectionView:
        await self.connection(who, tenant, name)
        return self.conns.pop((tenant, name)).model_copy(update={"status": "released"})

    async def connection(self, who: Principal, tenant: str, name: str) -> ConnectionView:
        who.require_tenant(tenant)
        self._known_tenant(tenant)
        if (tenant, name) not in self.conns:
            raise NotFound(f"tenant {tenant!r} has no connection {name!r}", field="name")
        return self.conns[tenant, name]

    async def connections(
        self, who: Principal, tenant: str | None = None, include_released: bool = False
    ) -> list[ConnectionView]:
        return [
            c for (t, _), c in sorted(self.conns.items()) if who.may_see(t) and tenant in (None, t)
        ]

    async def history(self, who: Principal, tenant: str, name: str) -> list[ConnectionEvent]:
        view = await self.connection(who, tenant, name)
        return [ConnectionEvent(at=view.created or datetime.now(UTC), kind="created")]

    async def connection_changes(
        self, who: Principal, after: int | None
    ) -> tuple[int, list[object]]:
        return 0, []  # the stream's connection events are the real service's (store.py)

    async def counters(self, who: Principal, tenant: str, name: str) -> ConnectionCounters:
        view = await self.connection(who, tenant, name)
        shaper = ShaperCounters(
            direction=f"{view.a} -> {view.b}",
            host="h1",
            router="r1",
            bytes=1500,
            packets=1,
            drops=0,
        )
        return ConnectionCounters(tenant=tenant, name=name, shapers=[shaper])

    async def tenants(self, who: Principal) -> list[TenantView]:
        return [TenantView(name=t) for t in self.tenants_ if who.may_see(t)]

    async def create_tenant(self, who: Principal, name: str) -> TenantView:
        who.require_provider()
        if name in self.tenants_:
            raise Conflict(f"tenant {name!r} exists", field="name")
        self.tenants_.append(name)
        return TenantView(name=name)

    async def networks(self, who: Principal, tenant: str | None = None) -> list[NetworkView]:
        nets = [
            NetworkView(tenant=t, name=f"{t}-net", vni=100 + i, guarantees={"l1": 10**8})
            for i, t in enumerate(self.tenants_)
        ]
        return [n for n in nets if who.may_see(n.tenant) and tenant in (None, n.tenant)]

    async def routers(self, who: Principal, tenant: str | None = None) -> list[RouterView]:
        return [
            RouterView(tenant=t, name=f"{t}-r1", host="h1", networks=[f"{t}-net"])
            for t in self.tenants_
            if who.may_see(t) and tenant in (None, t)
        ]

    async def endhosts(self, who: Principal, tenant: str | None = None) -> list[EndHostView]:
        return [
            EndHostView(
                tenant=t, name=f"{t}-e1", host="h1", network=f"{t}-net", addresses=["10.0.0.2/24"]
            )
            for t in self.tenants_
            if who.may_see(t) and tenant in (None, t)
        ]

    async def hosts(self, who: Principal) -> list[HostView]:
        return [
            HostView(name="h1", agent="10.0.0.1:830"),
            HostView(name="h2", agent="10.0.0.2:830"),
        ]

    async def links(self, who: Principal) -> list[LinkView]:
        reserved = sum(c.bandwidth for c in self.conns.values())
        forward = LinkDirection(
            direction="h1 -> h2",
            reserved_bps=reserved,
            free_bps=CAPACITY - reserved,
            utilisation_bps=0,
        )
        backward = LinkDirection(direction="h2 -> h1", reserved_bps=0, free_bps=CAPACITY)
        return [
            LinkView(
                name="l1", a="h1", b="h2", capacity_bps=CAPACITY, directions=[forward, backward]
            )
        ]

    @contextlib.contextmanager
    def state_changes(self) -> Iterator[asyncio.Queue[StateChange]]:
        """The changes a test puts into `self.changes`, while a stream follows them."""
        yield self.changes

    async def topology(self, who: Principal) -> TopologyView:
        return TopologyView(
            hosts=await self.hosts(who),
            links=await self.links(who),
            tenants=await self.tenants(who),
            networks=await self.networks(who),
            routers=await self.routers(who),
            endhosts=await self.endhosts(who),
            connections=await self.connections(who),
        )
