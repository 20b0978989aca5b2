"""The console's changes (POST): log in and out, request, modify and release a connection.

Each answer is the controller's own: the established connection with its path, or the
service's error (for a rejection, the link directions that lack capacity and by how much),
shown next to the form that was sent. With htmx the answer replaces only the form's answer
box; without JavaScript the whole page comes back with the answer in the same place.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from vnet.controller.errors import ServiceError, Unauthorized
from vnet.controller.ui import forms, session
from vnet.controller.ui.pages import (
    Service,
    Viewer,
    connection_context,
    connections_context,
)
from vnet.controller.ui.render import error_body, is_fragment, page

router = APIRouter()


@router.post("/login", response_model=None)
async def log_in(request: Request) -> Response:
    form = await forms.read_form(request)
    token = form.get("token", "").strip()
    try:
        session.check_same_origin(request)
        if not token:
            raise Unauthorized("enter an API token")
        await session.principal_for(request, token)
    except ServiceError as exc:
        context = {"reason": exc.reason, "next": form.get("next", "")}
        return page(request, "login.html", context, status=exc.status)
    return session.log_in(request, token, _destination(request, form.get("next", "")))


def _destination(request: Request, wanted: str) -> str:
    """Only a page of the console itself (no open redirect to another site)."""
    base = session.base_path(request)
    if wanted.startswith(base + "/") and not wanted.startswith("//"):
        return wanted
    return base + "/"


@router.post("/logout", response_model=None)
async def log_out(request: Request) -> Response:
    return session.log_out(request)


@router.post("/connections", response_class=HTMLResponse)
async def request_connection(request: Request, who: Viewer, service: Service) -> HTMLResponse:
    form = await forms.read_form(request)
    tenant = form.get("tenant", "") or (who.tenant or "")
    context: dict[str, object]
    try:
        session.check_same_origin(request)
        body = forms.connection_request(form)
        answer = await service.create_connection(who, tenant, body)
        context, status = {"answer": answer, "error": None}, 201
    except ServiceError as exc:
        context, status = {"answer": None, "error": error_body(exc)}, exc.status
    if is_fragment(request):
        fragment = page(request, "_answer.html", context, status=status)
        fragment.headers["HX-Trigger"] = "connections-changed"
        return fragment
    full = await connections_context(who, service)
    full.update(context, form=form)
    return page(request, "connections.html", full, status=status)


@router.post("/connections/{tenant}/{name}/modify", response_class=HTMLResponse)
async def modify_connection(
    request: Request, tenant: str, name: str, who: Viewer, service: Service
) -> HTMLResponse:
    form = await forms.read_form(request)
    context: dict[str, object]
    try:
        session.check_same_origin(request)
        answer = await service.modify_connection(who, tenant, name, forms.modify_request(form))
        context, status = {"answer": answer, "error": None}, 200
    except ServiceError as exc:
        context, status = {"answer": None, "error": error_body(exc)}, exc.status
    return await _detail_answer(request, tenant, name, context, status)


@router.post("/connections/{tenant}/{name}/release", response_class=HTMLResponse)
async def release_connection(
    request: Request, tenant: str, name: str, who: Viewer, service: Service
) -> HTMLResponse:
    context: dict[str, object]
    try:
        session.check_same_origin(request)
        released = await service.release_connection(who, tenant, name)
        context, status = {"released": released, "error": None}, 200
    except ServiceError as exc:
        context, status = {"released": None, "error": error_body(exc)}, exc.status
    return await _detail_answer(request, tenant, name, context, status)


async def _detail_answer(
    request: Request, tenant: str, name: str, context: dict[str, object], status: int
) -> HTMLResponse:
    """The answer box alone (htmx) or the whole detail page with the answer in it."""
    if is_fragment(request):
        return page(request, "_answer.html", context, status=status)
    who, service = request.state.who, request.app.state.service
    full = await connection_context(who, service, tenant, name)
    full.update(context)
    return page(request, "connection.html", full, status=status)
