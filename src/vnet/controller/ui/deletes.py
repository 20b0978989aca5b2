"""The console's deletes (POST): a tenant, a network, an end host, a VR, each from the row of
its table; and the adoption of a VR made on an agent directly, from the Routers page. The
answer is the controller's own: the object deleted (or adopted), or the service's refusal
with what holds it (`ErrorBody.holders`: the connection running over a VR, the VRs and end
hosts on a network, a tenant's networks), shown above the table the form was in, which comes
back as it now is. A plain form post, so it works without JavaScript.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse
from pydantic import BaseModel, ValidationError

from vnet.controller.errors import BadRequest, ServiceError
from vnet.controller.principal import Principal
from vnet.controller.ui import forms, session
from vnet.controller.ui.pages import Service, Viewer
from vnet.controller.ui.render import error_body, page
from vnet.controller.ui.unmanaged import unmanaged_rows
from vnet.model.controller_api import AdoptRequest

router = APIRouter()


async def _answer(
    request: Request,
    who: Principal,
    service: Service,
    template: str,
    kind: str,
    delete: Callable[[], Awaitable[BaseModel]],
) -> HTMLResponse:
    """The page of `template` as it is after the delete, with its answer on top."""
    context: dict[str, object]
    try:
        session.check_same_origin(request)
        deleted = await delete()
        context, status = {"deleted": (kind, getattr(deleted, "name", "")), "error": None}, 200
    except ServiceError as exc:
        context, status = {"deleted": None, "error": error_body(exc)}, exc.status
    context["topology"] = await service.topology(who)
    if template == "routers.html":
        context.update(await unmanaged_rows(who, service))
    return page(request, template, context, status=status)


@router.post("/tenants/{tenant}/delete", response_class=HTMLResponse)
async def delete_tenant(
    request: Request, tenant: str, who: Viewer, service: Service
) -> HTMLResponse:
    return await _answer(
        request, who, service, "tenants.html", "tenant", lambda: service.delete_tenant(who, tenant)
    )


@router.post("/networks/{tenant}/{name}/delete", response_class=HTMLResponse)
async def delete_network(
    request: Request, tenant: str, name: str, who: Viewer, service: Service
) -> HTMLResponse:
    return await _answer(
        request, who, service, "networks.html", "network",
        lambda: service.delete_network(who, tenant, name),
    )  # fmt: skip


@router.post("/endhosts/{tenant}/{name}/delete", response_class=HTMLResponse)
async def delete_endhost(
    request: Request, tenant: str, name: str, who: Viewer, service: Service
) -> HTMLResponse:
    return await _answer(
        request, who, service, "networks.html", "end host",
        lambda: service.delete_endhost(who, tenant, name),
    )  # fmt: skip


@router.post("/routers/{tenant}/{name}/delete", response_class=HTMLResponse)
async def delete_router(
    request: Request, tenant: str, name: str, who: Viewer, service: Service
) -> HTMLResponse:
    return await _answer(
        request, who, service, "routers.html", "VR",
        lambda: service.delete_router(who, tenant, name),
    )  # fmt: skip


@router.post("/routers/adopt", response_class=HTMLResponse)
async def adopt_router(request: Request, who: Viewer, service: Service) -> HTMLResponse:
    form = await forms.read_form(request)

    async def adopt() -> BaseModel:
        try:
            ask = AdoptRequest(host=form.get("host", ""), name=form.get("name", ""))
        except ValidationError as err:
            raise BadRequest(f"host and name of the VR: {err.errors()[0]['msg']}") from None
        return await service.adopt_router(who, form.get("tenant", ""), ask)

    return await _answer(request, who, service, "routers.html", "adopted: VR", adopt)
