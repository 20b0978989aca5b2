"""The console's pages (GET): topology, tables, a connection's detail, the login page.

Each page asks the controller's service with the viewer's principal, exactly as the API's
routes do, so a tenant administrator's page is built from answers that never held another
tenant's objects (the service filters; the page cannot leak what it never received).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, JSONResponse

from vnet.controller.errors import ServiceError
from vnet.controller.principal import Principal
from vnet.controller.service import ControllerService
from vnet.controller.ui import session, view
from vnet.controller.ui.render import page
from vnet.controller.ui.unmanaged import unmanaged_rows
from vnet.model.controller_api import ConnectionCounters


async def viewer(request: Request) -> Principal:
    """The logged-in principal (Unauthorized: back to the login page)."""
    request.state.who = await session.principal_of(request)
    return request.state.who


def service_of(request: Request) -> ControllerService:
    return request.app.state.service


Viewer = Annotated[Principal, Depends(viewer)]
Service = Annotated[ControllerService, Depends(service_of)]
router = APIRouter()


@router.get("/login", response_class=HTMLResponse)
async def login_page(request: Request, reason: str = "", next: str = "") -> HTMLResponse:
    return page(request, "login.html", {"reason": reason, "next": next})


@router.get("/", response_class=HTMLResponse)
async def topology_page(
    request: Request, who: Viewer, service: Service, connection: str = ""
) -> HTMLResponse:
    topology = await service.topology(who)
    context = {
        "topology": topology,
        "elements": view.graph_elements(topology),
        "arcs": view.arc_rows(topology.links),
        "paths": view.connection_paths(topology.connections),
        "selected": connection,
    }
    return page(request, "topology.html", context)


@router.get("/topology/state")
async def topology_state(who: Viewer, service: Service) -> JSONResponse:
    """What the topology page refreshes every few seconds: each link direction's figures and
    the live connections' paths."""
    links = await service.links(who)
    connections = await service.connections(who)
    return JSONResponse(
        {"arcs": view.arc_rows(links), "paths": view.connection_paths(connections)},
        headers={"Cache-Control": "no-store"},
    )


@router.get("/tenants", response_class=HTMLResponse)
async def tenants_page(request: Request, who: Viewer, service: Service) -> HTMLResponse:
    topology = await service.topology(who)
    return page(request, "tenants.html", {"topology": topology})


@router.get("/networks", response_class=HTMLResponse)
async def networks_page(request: Request, who: Viewer, service: Service) -> HTMLResponse:
    topology = await service.topology(who)
    return page(request, "networks.html", {"topology": topology})


@router.get("/routers", response_class=HTMLResponse)
async def routers_page(request: Request, who: Viewer, service: Service) -> HTMLResponse:
    topology = await service.topology(who)
    context = {"topology": topology, **await unmanaged_rows(who, service)}
    return page(request, "routers.html", context)


@router.get("/connections", response_class=HTMLResponse)
async def connections_page(
    request: Request, who: Viewer, service: Service, released: bool = False
) -> HTMLResponse:
    return page(request, "connections.html", await connections_context(who, service, released))


async def connections_context(
    who: Principal, service: ControllerService, released: bool = False
) -> dict[str, object]:
    """The connections table and what the request form offers (the viewer's end hosts)."""
    connections = await service.connections(who, include_released=released)
    endhosts = await service.endhosts(who)
    tenants = sorted({e.tenant for e in endhosts if e.tenant} | {c.tenant for c in connections})
    if not who.is_provider:
        tenants = [who.tenant] if who.tenant else []
    return {
        "connections": connections,
        "endhosts": endhosts,
        "tenants": tenants,
        "released": released,
        "form": {},
    }


@router.get("/connections/{tenant}/{name}", response_class=HTMLResponse)
async def connection_page(
    request: Request, tenant: str, name: str, who: Viewer, service: Service
) -> HTMLResponse:
    return page(request, "connection.html", await connection_context(who, service, tenant, name))


async def connection_context(
    who: Principal, service: ControllerService, tenant: str, name: str
) -> dict[str, object]:
    connection = await service.connection(who, tenant, name)
    history = await service.history(who, tenant, name)
    links = await service.links(who)
    try:
        counters: ConnectionCounters | str = await service.counters(who, tenant, name)
    except ServiceError as err:  # an agent that does not answer: the rest of the page still
        counters = err.reason
    return {
        "connection": connection,
        "counters": counters,
        "history": history,
        "arcs": view.path_arcs(connection, links),
    }
