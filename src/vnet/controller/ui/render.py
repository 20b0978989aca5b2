"""Turning data into the console's HTML: the templates, their filters, and error pages."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates

from vnet.controller.errors import ServiceError, Unauthorized
from vnet.controller.ui import session
from vnet.controller.ui.view import rate
from vnet.model.controller_api import ErrorBody
from vnet.model.rate import format_rate

HERE = Path(__file__).parent
STATIC = HERE / "static"
# the pinned libraries `make bootstrap` copies from the npm registry's packages
VENDOR_FILES = ("htmx.min.js", "cytoscape.min.js")
log = logging.getLogger(__name__)

templates = Jinja2Templates(directory=HERE / "templates")
templates.env.filters["rate"] = rate
templates.env.filters["tc_rate"] = format_rate  # what a rate field accepts back
templates.env.tests["contains"] = lambda items, item: item in items


def vendor_missing() -> list[str]:
    return [name for name in VENDOR_FILES if not (STATIC / "vendor" / name).is_file()]


def is_fragment(request: Request) -> bool:
    """htmx asked for a piece of a page (it swaps it in); otherwise a whole page."""
    return bool(request.headers.get("hx-request")) and not request.headers.get("hx-boosted")


def page(
    request: Request, template: str, context: dict[str, Any], status: int = 200
) -> HTMLResponse:
    context = {
        "request": request,
        "base": session.base_path(request),
        "who": getattr(request.state, "who", None),
        "refresh_seconds": request.app.state.refresh_seconds,
        "vendor_missing": vendor_missing(),
        **context,
    }
    return templates.TemplateResponse(request, template, context, status_code=status)


def error_body(exc: Exception) -> ErrorBody:
    """What the person is told: the API's own error body; never a stack trace."""
    if isinstance(exc, ServiceError):
        return exc.body()
    log.exception("console: unexpected error", exc_info=exc)
    return ErrorBody(status=500, code="internal-error", reason="the controller failed; see its log")


async def on_unauthorized(request: Request, exc: Exception) -> Any:
    assert isinstance(exc, Unauthorized)
    return session.log_out(request, exc.reason)


async def on_error(request: Request, exc: Exception) -> HTMLResponse:
    """A page that could not be shown: the error's text in the layout, with its status."""
    body = error_body(exc)
    template = "_error.html" if is_fragment(request) else "error.html"
    return page(request, template, {"error": body}, status=body.status)
