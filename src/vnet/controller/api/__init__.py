"""The controller's HTTP face (issue 12, part 4): a FastAPI app over a ControllerService.

`make_app(service, sessions, config)` serves /api/v1 (routes.py) in JSON or XML (codec.py),
authenticates API tokens (auth.py), turns every refusal into an ErrorBody (answers.py), serves
its OpenAPI description (/openapi.json, /docs; openapi.py) and, with `ui=True`, mounts the web
console (issue 13, `vnet.controller.ui`) at /ui/.
"""

from __future__ import annotations

import asyncio
import importlib
from typing import Any

from fastapi import FastAPI, Request, Response
from sqlalchemy.orm import Session, sessionmaker

from vnet import __version__
from vnet.controller.api.answers import TimingStart, install_error_handlers
from vnet.controller.api.auth import Authenticator, create_token
from vnet.controller.api.metrics import ApiMetrics, Measured, exposition
from vnet.controller.api.openapi import DESCRIPTION, describe
from vnet.controller.api.routes import router, who
from vnet.controller.service import ControllerService
from vnet.model.controller_config import ControllerConfig
from vnet.tools.api_docs import serve_docs

UI_PREFIX = "/ui"


def make_app(
    service: ControllerService,
    sessions: sessionmaker[Session],
    config: ControllerConfig | None = None,
    *,
    ui: bool = False,
) -> FastAPI:
    """The API over `service`; tokens are looked up through `sessions`. `app.state` holds the
    service, the sessions, the authenticator and the utilisation interval for the console."""
    app = FastAPI(
        title="vnet controller",
        version=__version__,
        description=DESCRIPTION,
        docs_url=None,  # served below from vnet's own copy of Swagger UI
        redoc_url=None,
    )
    app.state.service = service
    app.state.sessions = sessions
    app.state.authenticator = Authenticator(sessions)
    app.state.utilisation_interval = config.utilisation_interval if config else 1.0
    app.state.closing = asyncio.Event()  # set when the server stops: event streams end
    app.state.metrics = ApiMetrics()  # each app its own instruments (GET /metrics)
    install_error_handlers(app)
    app.include_router(router)
    app.add_middleware(TimingStart)
    app.add_middleware(Measured, metrics=app.state.metrics)  # outermost: sees every answer
    app.openapi = lambda: describe(app)  # type: ignore[method-assign]
    serve_docs(app, "vnet controller: API")
    serve_metrics(app)
    if ui:
        mount_console(app)
    return app


def serve_metrics(app: FastAPI) -> None:
    """/metrics for Prometheus (api/metrics.py): the provider's, with its bearer token as any
    API request; without one 401, with a tenant's 403, as ErrorBody."""

    @app.get("/metrics", include_in_schema=False)
    async def metrics(request: Request) -> Response:
        (await who(request)).require_provider()
        accept = request.headers.get("accept")
        body, content_type = await exposition(app.state.metrics, app.state.service, accept)
        return Response(body, headers={"Content-Type": content_type})


def mount_console(app: FastAPI) -> None:
    """The web console (issue 13) at /ui/: `vnet.controller.ui.make_console(service,
    authenticate)` is an ASGI app that asks the same service with the principal of its own
    cookie, checked by this app's authenticator. Imported only when asked for."""
    console: Any = importlib.import_module("vnet.controller.ui")
    state = app.state
    app.mount(
        UI_PREFIX,
        console.make_console(
            state.service,
            state.authenticator.authenticate,
            refresh_seconds=state.utilisation_interval,
        ),
    )


__all__ = ["UI_PREFIX", "Authenticator", "create_token", "make_app", "who"]
