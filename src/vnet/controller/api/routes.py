"""The API's routes (/api/v1/...): each checks who asks, reads its body (JSON or XML), calls
the service and answers in the format the client accepts (docs/controller.md lists them)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Depends, Header, Query, Request
from fastapi.responses import Response, StreamingResponse
from pydantic import BaseModel, ValidationError
from sqlalchemy.orm import Session, sessionmaker

from vnet.controller.api import codec
from vnet.controller.api.answers import answer, error_answer, invalid, server_timing
from vnet.controller.api.auth import Authenticator, create_token
from vnet.controller.api.metrics import ApiMetrics
from vnet.controller.api.openapi import doc
from vnet.controller.errors import ServiceError
from vnet.controller.principal import Principal
from vnet.controller.service import ControllerService, Timings
from vnet.model.controller_api import (
    API_PREFIX,
    IDEMPOTENCY_HEADER,
    AdoptRequest,
    ConnectionAnswer,
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
    TenantRequest,
    TenantView,
    TokenRequest,
    TokenView,
    TopologyView,
    UnmanagedRouter,
    WhoAmI,
)

Body = TypeVar("Body", bound=BaseModel)
router = APIRouter(prefix=API_PREFIX)


class TooLarge(ServiceError):
    status = 413
    code = "too-large"


# -- dependencies ------------------------------------------------------------------------------
async def who(request: Request) -> Principal:
    """The principal behind the request's `Authorization: Bearer` token."""
    authenticator: Authenticator = request.app.state.authenticator
    return await authenticator.principal(request.headers.get("authorization"))


Who = Annotated[Principal, Depends(who)]


def service_of(request: Request) -> ControllerService:
    return request.app.state.service


async def _read_limited(request: Request) -> bytes:
    """The body, refused (413) as soon as it exceeds codec.MAX_BODY, before it is all read."""
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > codec.MAX_BODY:
        raise TooLarge(f"the body has {declared} bytes; at most {codec.MAX_BODY} are accepted")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > codec.MAX_BODY:
            raise TooLarge(f"the body exceeds {codec.MAX_BODY} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def body(model: type[Body]) -> Any:
    """A dependency: the request's body (JSON or XML by Content-Type) as a valid `model`."""

    async def read(request: Request) -> Body:
        fmt = codec.request_format(request.headers.get("content-type"))
        data = codec.parse_body(await _read_limited(request), fmt, model)
        try:
            return model.model_validate(data, strict=True)  # JSON's types: no "5" for 5
        except ValidationError as err:
            raise invalid(err.errors()) from None

    return Depends(read)


async def timed(
    request: Request,
    call: Callable[[Timings], Awaitable[BaseModel]],
    status: int = 200,
    admission: str | None = None,
) -> Response:
    """Run a changing call with a timings dict; answer (or refuse) with Server-Timing.
    `admission`: the call asks admission control (create, modify), counted by outcome."""
    timings: Timings = {}
    called = time.perf_counter()
    metrics: ApiMetrics = request.app.state.metrics
    try:
        result = await call(timings)
    except ServiceError as err:
        in_service = time.perf_counter() - called
        if admission:
            metrics.rejected(admission, err.code)
        response = error_answer(request, err.body())
        response.headers.update(server_timing(request, timings, in_service))
        return response
    in_service = time.perf_counter() - called
    if admission:
        metrics.admitted(admission)
    response = answer(request, result, status=status)
    response.headers.update(server_timing(request, timings, in_service))  # encoding included
    return response


def _visible(who: Principal, tenant: str | None) -> None:
    if tenant is not None:
        who.require_tenant(tenant)


# -- who, tokens, tenants ----------------------------------------------------------------------
@router.get("/whoami", **doc(WhoAmI))
async def whoami(request: Request, me: Who) -> Response:
    return answer(request, WhoAmI(role=me.role, tenant=me.tenant))


@router.post("/tokens", **doc(TokenView, body=TokenRequest, status=201))
async def post_token(
    request: Request, me: Who, ask: Annotated[TokenRequest, body(TokenRequest)]
) -> Response:
    me.require_provider()
    sessions: sessionmaker[Session] = request.app.state.sessions

    def create() -> TokenView:
        with sessions.begin() as session:
            return create_token(session, ask.role, ask.tenant, ask.expires_in)

    return answer(request, await asyncio.to_thread(create), status=201)


@router.get("/tenants", **doc(TenantView, many=True))
async def get_tenants(request: Request, me: Who) -> Response:
    return answer(request, await service_of(request).tenants(me), TenantView)


@router.post("/tenants", **doc(TenantView, body=TenantRequest, status=201))
async def post_tenant(
    request: Request, me: Who, ask: Annotated[TenantRequest, body(TenantRequest)]
) -> Response:
    me.require_provider()
    return answer(request, await service_of(request).create_tenant(me, ask.name), status=201)


# -- the inventory -----------------------------------------------------------------------------
@router.get("/topology", **doc(TopologyView))
async def get_topology(request: Request, me: Who) -> Response:
    return answer(request, await service_of(request).topology(me))


@router.get("/hosts", **doc(HostView, many=True))
async def get_hosts(request: Request, me: Who) -> Response:
    return answer(request, await service_of(request).hosts(me), HostView)


@router.get("/links", **doc(LinkView, many=True))
async def get_links(request: Request, me: Who) -> Response:
    return answer(request, await service_of(request).links(me), LinkView)


@router.post("/hosts", **doc(HostView, body=HostRequest, status=201, also=200))
async def post_host(
    request: Request, me: Who, ask: Annotated[HostRequest, body(HostRequest)]
) -> Response:
    me.require_provider()
    view, added = await service_of(request).add_host(me, ask)
    return answer(request, view, status=201 if added else 200)


@router.delete("/hosts/{name}", **doc(Removed))
async def delete_host(request: Request, name: str, me: Who) -> Response:
    me.require_provider()
    return await timed(request, lambda _: service_of(request).remove_host(me, name))


@router.post("/links", **doc(LinkView, body=LinkRequest, status=201, also=200))
async def post_link(
    request: Request, me: Who, ask: Annotated[LinkRequest, body(LinkRequest)]
) -> Response:
    me.require_provider()
    view, added = await service_of(request).add_link(me, ask)
    return answer(request, view, status=201 if added else 200)


@router.delete("/links/{name}", **doc(Removed))
async def delete_link(request: Request, name: str, me: Who) -> Response:
    me.require_provider()
    return await timed(request, lambda _: service_of(request).remove_link(me, name))


TenantFilter = Annotated[str | None, Query(description="only this tenant's")]


@router.get("/networks", **doc(NetworkView, many=True))
async def get_networks(request: Request, me: Who, tenant: TenantFilter = None) -> Response:
    _visible(me, tenant)
    return answer(request, await service_of(request).networks(me, tenant), NetworkView)


@router.get("/routers", **doc(RouterView, many=True))
async def get_routers(request: Request, me: Who, tenant: TenantFilter = None) -> Response:
    _visible(me, tenant)
    return answer(request, await service_of(request).routers(me, tenant), RouterView)


@router.get("/endhosts", **doc(EndHostView, many=True))
async def get_endhosts(request: Request, me: Who, tenant: TenantFilter = None) -> Response:
    _visible(me, tenant)
    return answer(request, await service_of(request).endhosts(me, tenant), EndHostView)


@router.post("/tenants/{tenant}/networks", **doc(NetworkView, body=NetworkRequest, status=201))
async def post_network(
    request: Request, tenant: str, me: Who, ask: Annotated[NetworkRequest, body(NetworkRequest)]
) -> Response:
    return await timed(
        request, lambda _: service_of(request).create_network(me, tenant, ask), status=201
    )


@router.post("/tenants/{tenant}/routers", **doc(RouterView, body=RouterRequest, status=201))
async def post_router(
    request: Request, tenant: str, me: Who, ask: Annotated[RouterRequest, body(RouterRequest)]
) -> Response:
    return await timed(
        request, lambda _: service_of(request).create_router(me, tenant, ask), status=201
    )


@router.post("/tenants/{tenant}/endhosts", **doc(EndHostView, body=EndHostRequest, status=201))
async def post_endhost(
    request: Request, tenant: str, me: Who, ask: Annotated[EndHostRequest, body(EndHostRequest)]
) -> Response:
    return await timed(
        request, lambda _: service_of(request).create_endhost(me, tenant, ask), status=201
    )


# -- VRs made on an agent directly: listed, adopted ---------------------------------------------
@router.get("/hosts/{host}/unmanaged", **doc(UnmanagedRouter, many=True))
async def get_unmanaged(request: Request, host: str, me: Who) -> Response:
    me.require_provider()
    found = await service_of(request).unmanaged_routers(me, host)
    return answer(request, found, UnmanagedRouter)


@router.post("/tenants/{tenant}/routers/adopt", **doc(RouterView, body=AdoptRequest, status=201))
async def post_adopt(
    request: Request, tenant: str, me: Who, ask: Annotated[AdoptRequest, body(AdoptRequest)]
) -> Response:
    me.require_provider()
    return await timed(
        request, lambda _: service_of(request).adopt_router(me, tenant, ask), status=201
    )


# -- deletes: refused (409 in-use, holders named) while something holds the object ----------
@router.delete("/tenants/{tenant}", **doc(TenantView))
async def delete_tenant(request: Request, tenant: str, me: Who) -> Response:
    me.require_provider()
    return await timed(request, lambda _: service_of(request).delete_tenant(me, tenant))


@router.delete("/tenants/{tenant}/networks/{name}", **doc(NetworkView))
async def delete_network(request: Request, tenant: str, name: str, me: Who) -> Response:
    me.require_tenant(tenant)
    return await timed(request, lambda _: service_of(request).delete_network(me, tenant, name))


@router.delete("/tenants/{tenant}/routers/{name}", **doc(RouterView))
async def delete_router(request: Request, tenant: str, name: str, me: Who) -> Response:
    me.require_tenant(tenant)
    return await timed(request, lambda _: service_of(request).delete_router(me, tenant, name))


@router.delete("/tenants/{tenant}/endhosts/{name}", **doc(EndHostView))
async def delete_endhost(request: Request, tenant: str, name: str, me: Who) -> Response:
    me.require_tenant(tenant)
    return await timed(request, lambda _: service_of(request).delete_endhost(me, tenant, name))


# -- connections -------------------------------------------------------------------------------
@router.get("/connections", **doc(ConnectionView, many=True))
async def get_connections(
    request: Request,
    me: Who,
    tenant: TenantFilter = None,
    released: Annotated[bool, Query(description="include released connections")] = False,
) -> Response:
    _visible(me, tenant)
    views = await service_of(request).connections(me, tenant, include_released=released)
    return answer(request, views, ConnectionView)


IdempotencyKey = Annotated[
    str | None,
    Header(
        alias=IDEMPOTENCY_HEADER,
        min_length=1,
        max_length=128,
        pattern=r"\S",  # not only white space (the document says so too)
        description="a retried request with the same key answers with the first one's connection",
    ),
]


@router.post(
    "/tenants/{tenant}/connections", **doc(ConnectionAnswer, body=ConnectionRequest, status=201)
)
async def post_connection(
    request: Request,
    tenant: str,
    me: Who,
    ask: Annotated[ConnectionRequest, body(ConnectionRequest)],
    key: IdempotencyKey = None,
) -> Response:
    me.require_tenant(tenant)
    service = service_of(request)
    return await timed(
        request,
        lambda t: service.create_connection(me, tenant, ask, key, t),
        status=201,
        admission="create",
    )


CONNECTION = "/tenants/{tenant}/connections/{name}"


@router.get(CONNECTION, **doc(ConnectionView))
async def get_connection(request: Request, tenant: str, name: str, me: Who) -> Response:
    me.require_tenant(tenant)
    return answer(request, await service_of(request).connection(me, tenant, name))


@router.get(CONNECTION + "/history", **doc(ConnectionEvent, many=True))
async def get_history(request: Request, tenant: str, name: str, me: Who) -> Response:
    me.require_tenant(tenant)
    return answer(request, await service_of(request).history(me, tenant, name), ConnectionEvent)


@router.get(CONNECTION + "/counters", **doc(ConnectionCounters))
async def get_counters(request: Request, tenant: str, name: str, me: Who) -> Response:
    me.require_tenant(tenant)
    return answer(request, await service_of(request).counters(me, tenant, name))


@router.patch(CONNECTION, **doc(ConnectionAnswer, body=ModifyRequest))
async def patch_connection(
    request: Request,
    tenant: str,
    name: str,
    me: Who,
    ask: Annotated[ModifyRequest, body(ModifyRequest)],
) -> Response:
    me.require_tenant(tenant)
    service = service_of(request)
    return await timed(
        request, lambda t: service.modify_connection(me, tenant, name, ask, t), admission="modify"
    )


@router.delete(CONNECTION, **doc(ConnectionView))
async def delete_connection(request: Request, tenant: str, name: str, me: Who) -> Response:
    me.require_tenant(tenant)
    service = service_of(request)
    return await timed(request, lambda t: service.release_connection(me, tenant, name, t))


# -- live utilisation and state changes -------------------------------------------------------
EVENTS_DOC = {
    200: {
        "description": "Server-sent events: `event: links` with the LinkView list as `data` "
        "(JSON), at once and then every utilisation_interval seconds, each preceded by "
        "`event: connection` with a ConnectionChange as `data` for each history line written "
        "since the last (a connection created, moved, rerouted, degraded, restored, "
        "released...) of the connections the token may see; `event: state` with a "
        "StateChange as `data` as soon as a host's or link's operational state changes "
        "(`limit` ends the stream after that many links and state events); `event: error` "
        "with an ErrorBody as `data` ends it",
        # OpenAPI 3.1: a text/event-stream schema describes one event, as a client reads it
        "content": {
            "text/event-stream": {
                "schema": {
                    "type": "object",
                    "properties": {
                        "event": {
                            "type": "string",
                            "enum": ["links", "connection", "state", "error"],
                        },
                        "data": {"type": "string", "contentMediaType": "application/json"},
                    },
                    "required": ["event", "data"],
                }
            }
        },
    }
}


@router.get("/events", response_class=StreamingResponse, responses=EVENTS_DOC)  # type: ignore[arg-type]
async def get_events(
    request: Request, me: Who, limit: Annotated[int | None, Query(ge=1)] = None
) -> Response:
    service, interval = service_of(request), request.app.state.utilisation_interval
    closing: asyncio.Event = request.app.state.closing
    return StreamingResponse(
        _events(service, me, interval, limit, closing),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


async def _events(
    service: ControllerService,
    me: Principal,
    interval: float,
    limit: int | None,
    closing: asyncio.Event,
) -> AsyncIterator[str]:
    """The links at once, then each state change as it comes and the links every `interval`
    s, each time after the connection changes written since the last; until `limit` links
    and state events, the client leaves, or the controller stops (`closing`: an open stream
    would otherwise hold a graceful shutdown up for ever). Hosts and links are the
    provider's and every tenant's to see (views.py), so is their state."""
    loop = asyncio.get_running_loop()
    sent, due = 0, loop.time()  # when the next links event is due
    seen = None  # the last connection change sent
    with service.state_changes() as changes:
        while (limit is None or sent < limit) and not closing.is_set():
            change = None
            if sent:
                change = await _next_change(changes, closing, due - loop.time())
                if closing.is_set():
                    return
            if change is not None:
                yield f"event: state\ndata: {change.model_dump_json()}\n\n"
                sent += 1
                continue
            try:
                seen, connections = await service.connection_changes(me, seen)
                links = await service.links(me)
            except ServiceError as err:  # said in the stream, which then ends
                yield f"event: error\ndata: {err.body().model_dump_json()}\n\n"
                return
            for moved in connections:
                yield f"event: connection\ndata: {moved.model_dump_json()}\n\n"
            yield "event: links\ndata: [" + ",".join(v.model_dump_json() for v in links) + "]\n\n"
            sent += 1
            due = loop.time() + interval


async def _next_change(
    changes: asyncio.Queue[StateChange], closing: asyncio.Event, wait: float
) -> StateChange | None:
    """The next state change within `wait` s (None: none came, or the controller stops)."""
    if not changes.empty():
        return changes.get_nowait()
    if wait <= 0:
        return None
    getting = asyncio.ensure_future(changes.get())
    stopping = asyncio.ensure_future(closing.wait())
    done, pending = await asyncio.wait(
        {getting, stopping}, timeout=wait, return_when=asyncio.FIRST_COMPLETED
    )
    for task in pending:
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)
    return getting.result() if getting in done else None
