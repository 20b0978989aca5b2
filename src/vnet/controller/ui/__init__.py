"""The controller's web console (issue 13), served by the controller at /ui/.

Server-rendered HTML (Jinja2 templates) with htmx for the forms' answers and Cytoscape.js for
the topology graph; the two libraries come pinned from the npm registry
(`assets/package-lock.json`), copied into `static/vendor/` by `make bootstrap`, and served
by the controller itself, so the console works without reaching any other site.

    app.mount("/ui", make_console(service, authenticate))

`service` is the controller's ControllerService (the same object the API calls);
`authenticate(token) -> Principal` is the API's token check (raises Unauthorized with the
reason). The console asks the service on the server with the viewer's principal, as the API
routes do; the browser never holds the token in script reach (see session.py) and never
talks to the JSON API itself.
"""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles

from vnet.controller.errors import ServiceError, Unauthorized
from vnet.controller.service import ControllerService
from vnet.controller.ui import actions, deletes, pages, underlay
from vnet.controller.ui.render import STATIC, on_error, on_unauthorized
from vnet.controller.ui.session import Authenticate

__all__ = ["make_console"]


def make_console(
    service: ControllerService, authenticate: Authenticate, *, refresh_seconds: float = 1.0
) -> FastAPI:
    """The console as an ASGI app to mount (at /ui). `refresh_seconds`: how often the
    topology page fetches the links' utilisation (the controller's utilisation interval)."""
    app = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)
    app.state.service = service
    app.state.authenticate = authenticate
    app.state.refresh_seconds = refresh_seconds
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    app.include_router(pages.router)
    app.include_router(actions.router)
    app.include_router(deletes.router)
    app.include_router(underlay.router)
    app.add_exception_handler(Unauthorized, on_unauthorized)
    app.add_exception_handler(ServiceError, on_error)
    app.add_exception_handler(Exception, on_error)
    return app
