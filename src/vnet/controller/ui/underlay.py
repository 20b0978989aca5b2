"""The console's hosts and links page: the underlay in service, and (for the provider) forms
that add a host or a link and buttons that remove one. A removal drains first: the answer
lists the connections moved off it, or the refusal each connection that could not move and
why (nothing changed). The page comes back whole with the answer (no script needed)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from vnet.controller.errors import ServiceError
from vnet.controller.ui import forms, session
from vnet.controller.ui.pages import Service, Viewer
from vnet.controller.ui.render import error_body, page
from vnet.model.controller_api import HostRequest, LinkRequest

router = APIRouter()


@router.get("/underlay", response_class=HTMLResponse)
async def underlay_page(request: Request, who: Viewer, service: Service) -> HTMLResponse:
    return await _page(request, who, service, {}, 200)


@router.post("/underlay/hosts", response_class=HTMLResponse)
async def add_host(request: Request, who: Viewer, service: Service) -> HTMLResponse:
    form = await forms.read_form(request)

    async def add() -> dict[str, Any]:
        body = forms.validated(HostRequest, {"name": form.get("name", "").strip(), **_agent(form)})
        view, added = await service.add_host(who, body)
        done = f"host {view.name} {'added' if added else 'was there already'}"
        if view.reachable is not None:
            done += (
                f"; its agent at {view.agent} {'answers' if view.reachable else 'does not answer'}"
            )
        return {"done": done}

    return await _answer(request, who, service, add)


def _agent(form: Any) -> dict[str, Any]:
    """The agent part of the host form: none without an address; empty fields left out."""
    fields = ("address", "netconf_port", "user", "password_file", "hostkey")
    given = {k: form.get(k, "").strip() for k in fields}
    if not given["address"]:
        return {}
    agent: dict[str, Any] = {k: v for k, v in given.items() if v}
    if "netconf_port" in agent:
        port = agent["netconf_port"]
        agent["netconf_port"] = int(port) if port.isdigit() else port  # else: its error
    return {"agent": agent}


@router.post("/underlay/links", response_class=HTMLResponse)
async def add_link(request: Request, who: Viewer, service: Service) -> HTMLResponse:
    form = await forms.read_form(request)

    async def add() -> dict[str, Any]:
        fields: dict[str, object] = {k: form.get(k, "").strip() for k in ("a", "b", "rate")}
        view, added = await service.add_link(who, forms.validated(LinkRequest, fields))
        return {"done": f"link {view.name} {'added' if added else 'was there already'}"}

    return await _answer(request, who, service, add)


@router.post("/underlay/{kind}/{name}/remove", response_class=HTMLResponse)
async def remove(
    request: Request, kind: str, name: str, who: Viewer, service: Service
) -> HTMLResponse:
    async def drain() -> dict[str, Any]:
        if kind == "hosts":
            removed = await service.remove_host(who, name)
        else:
            removed = await service.remove_link(who, name)
        return {"done": f"{removed.kind} {removed.name} removed", "moved": removed.moved}

    return await _answer(request, who, service, drain)


async def _answer(request: Request, who: Any, service: Any, work: Any) -> HTMLResponse:
    try:
        session.check_same_origin(request)
        context, status = await work(), 200
    except ServiceError as exc:
        context, status = {"error": error_body(exc)}, exc.status
    return await _page(request, who, service, context, status)


async def _page(
    request: Request, who: Any, service: Any, answer: dict[str, Any], status: int
) -> HTMLResponse:
    context = {"hosts": await service.hosts(who), "links": await service.links(who)}
    context.update({"done": None, "moved": [], "error": None, **answer})
    return page(request, "underlay.html", context, status=status)
