"""The /docs page (Swagger UI over an app's OpenAPI description) of every vnet HTTP server:
the controller's API and the agent's RESTCONF. FastAPI's default page loads Swagger UI
from a CDN, so it stayed blank on a machine without Internet; these files come pinned from
the npm registry (src/vnet/controller/ui/assets/package-lock.json, with the console's
libraries) and `make bootstrap` copies them into ASSETS, which each server serves itself."""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

ASSETS = Path(__file__).resolve().parent / "swagger-ui"  # filled by scripts/bootstrap.sh
ASSETS_URL = "/docs-assets"
FILES = ("swagger-ui-bundle.js", "swagger-ui.css", "favicon-32x32.png")


def serve_docs(app: FastAPI, title: str, openapi_url: str = "/openapi.json") -> None:
    """GET /docs (Swagger UI over `openapi_url`) and its files under /docs-assets/; create
    `app` with docs_url=None so FastAPI's own CDN page is not served too."""
    app.mount(ASSETS_URL, StaticFiles(directory=ASSETS, check_dir=False), name="docs-assets")

    @app.get("/docs", include_in_schema=False)
    async def docs() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=openapi_url,
            title=title,
            swagger_js_url=f"{ASSETS_URL}/swagger-ui-bundle.js",
            swagger_css_url=f"{ASSETS_URL}/swagger-ui.css",
            swagger_favicon_url=f"{ASSETS_URL}/favicon-32x32.png",
        )
