"""What the controller does, behind its API (issue 12): the contract the API, the console
and the benchmarks program against. `vnet.controller.service.core.Service` implements it.

Every method checks the principal's right first, raises a `vnet.controller.errors`
exception on bad input or refusal (nothing changed), and is safe to call concurrently.
Create and modify answer synchronously: established (after every affected agent confirmed)
or an exception. `timings` (if given) receives the seconds spent per phase of the request:
"db", "path", "devices" (the API adds "api"), for Server-Timing and `vnet bench controller`.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Protocol

from vnet.controller.principal import Principal
from vnet.model.controller_api import (
    AdoptRequest,
    ConnectionAnswer,
    ConnectionChange,
    ConnectionCounters,
    ConnectionEvent,
    ConnectionRequest,
    ConnectionView,
    EndHostRequest,
    EndHostView,
    HostRequest,
    HostView,
    LinkRequest,
    LinkView,
    ModifyRequest,
    NetworkRequest,
    NetworkView,
    Removed,
    RouterRequest,
    RouterView,
    StateChange,
    TenantView,
    TopologyView,
    UnmanagedRouter,
)

Timings = dict[str, float]


class ControllerService(Protocol):
    # -- connections ---------------------------------------------------------------------
    async def create_connection(
        self,
        who: Principal,
        tenant: str,
        request: ConnectionRequest,
        idempotency_key: str | None = None,
        timings: Timings | None = None,
    ) -> ConnectionAnswer: ...

    async def modify_connection(
        self,
        who: Principal,
        tenant: str,
        name: str,
        request: ModifyRequest,
        timings: Timings | None = None,
    ) -> ConnectionAnswer: ...

    async def release_connection(
        self, who: Principal, tenant: str, name: str, timings: Timings | None = None
    ) -> ConnectionView: ...

    async def connection(self, who: Principal, tenant: str, name: str) -> ConnectionView: ...

    async def connections(
        self, who: Principal, tenant: str | None = None, include_released: bool = False
    ) -> list[ConnectionView]: ...

    async def history(self, who: Principal, tenant: str, name: str) -> list[ConnectionEvent]: ...

    async def connection_changes(
        self, who: Principal, after: int | None
    ) -> tuple[int, list[ConnectionChange]]: ...

    async def counters(self, who: Principal, tenant: str, name: str) -> ConnectionCounters: ...

    # -- inventory -----------------------------------------------------------------------
    async def tenants(self, who: Principal) -> list[TenantView]: ...
    async def create_tenant(self, who: Principal, name: str) -> TenantView: ...
    async def networks(self, who: Principal, tenant: str | None = None) -> list[NetworkView]: ...
    async def create_network(
        self, who: Principal, tenant: str, request: NetworkRequest
    ) -> NetworkView: ...
    async def create_router(
        self, who: Principal, tenant: str, request: RouterRequest
    ) -> RouterView: ...
    async def create_endhost(
        self, who: Principal, tenant: str, request: EndHostRequest
    ) -> EndHostView: ...
    async def delete_tenant(self, who: Principal, name: str) -> TenantView: ...
    async def delete_network(self, who: Principal, tenant: str, name: str) -> NetworkView: ...
    async def delete_router(self, who: Principal, tenant: str, name: str) -> RouterView: ...
    async def delete_endhost(self, who: Principal, tenant: str, name: str) -> EndHostView: ...
    async def unmanaged_routers(self, who: Principal, host: str) -> list[UnmanagedRouter]: ...
    async def adopt_router(
        self, who: Principal, tenant: str, request: AdoptRequest
    ) -> RouterView: ...
    async def routers(self, who: Principal, tenant: str | None = None) -> list[RouterView]: ...
    async def endhosts(self, who: Principal, tenant: str | None = None) -> list[EndHostView]: ...
    async def hosts(self, who: Principal) -> list[HostView]: ...
    async def links(self, who: Principal) -> list[LinkView]: ...
    async def topology(self, who: Principal) -> TopologyView: ...

    # -- failure detection ---------------------------------------------------------------
    def state_changes(
        self,
    ) -> contextlib.AbstractContextManager[asyncio.Queue[StateChange]]:
        """Every change of a host's or link's operational state while the block runs."""
        ...

    # -- hosts and links (the provider's); removing drains first ----------------------------
    async def add_host(self, who: Principal, request: HostRequest) -> tuple[HostView, bool]: ...
    async def add_link(self, who: Principal, request: LinkRequest) -> tuple[LinkView, bool]: ...
    async def remove_host(self, who: Principal, name: str) -> Removed: ...
    async def remove_link(self, who: Principal, name: str) -> Removed: ...
