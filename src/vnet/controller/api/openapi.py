"""The OpenAPI description of the API, JSON and XML alike (served at /openapi.json, /docs).

Routes read their bodies themselves (JSON or XML), so FastAPI does not see them; each route's
`doc(...)` states its request body and answer in both media types, and `describe(app)` adds
the request bodies' schemas to the components FastAPI collected from the answers. The XML form
follows OpenAPI's default XML mapping (codec.py), so the same schemas describe both.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel

from vnet.controller.api.codec import JSON, XML
from vnet.model.controller_api import (
    AdoptRequest,
    ConnectionRequest,
    ErrorBody,
    HostRequest,
    LinkRequest,
    ModifyRequest,
    NetworkRequest,
    RouterRequest,
    TenantRequest,
    TokenRequest,
)

REQUEST_BODIES: tuple[type[BaseModel], ...] = (
    AdoptRequest,
    ConnectionRequest,
    HostRequest,
    LinkRequest,
    ModifyRequest,
    NetworkRequest,
    RouterRequest,
    TenantRequest,
    TokenRequest,
)
DESCRIPTION = """The network's manager (vnet issue 12): tenants, their networks, routers and end
hosts, and guaranteed connections with admission control, explicit or chosen paths and
make-before-break changes.

**Authentication:** every route needs `Authorization: Bearer <token>`; a provider token sees
and does everything, a tenant token only its own tenant.

**JSON or XML:** bodies are JSON by default. Send `Content-Type: application/xml` to post XML
and `Accept: application/xml` to get XML answers. The XML form is OpenAPI's default XML mapping
of the schemas below: the root element is the schema's name (`<ConnectionRequest>`), each
property an element of its name, arrays repeat their element, lists of answers are wrapped
(`<ConnectionViewList><ConnectionView>...</ConnectionView></ConnectionViewList>`), maps repeat
their element with a `key` attribute, null properties are left out.

**Bandwidths:** in requests a rate (`"20mbit"`, `"1gbit"`) or an integer of bit/s; in answers
always bit/s.

**Errors:** every answer that is not 2xx is an `ErrorBody` (status, code, reason, field).

**Timing:** create, modify and release answer with a `Server-Timing` header
(`db;dur=1.20, path;dur=0.30, devices;dur=40.10, api;dur=0.80`, milliseconds).
"""


def ref(model: type[BaseModel]) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{model.__name__}"}


def _schema(model: type[BaseModel], many: bool) -> dict[str, Any]:
    if not many:
        return ref(model)
    return {
        "type": "array",
        "items": ref(model),
        "xml": {"name": f"{model.__name__}List", "wrapped": True},
    }


def doc(
    answer: type[BaseModel] | None,
    *,
    many: bool = False,
    body: type[BaseModel] | None = None,
    status: int = 200,
    also: int | None = None,
) -> dict[str, Any]:
    """The route decorator's arguments that describe its body and answer in JSON and XML
    (`also`: a second success status with the same answer, e.g. 200 for an idempotent
    create that found its object there)."""
    kwargs: dict[str, Any] = {"status_code": status}
    responses: dict[int | str, Any] = {
        "default": {
            "model": ErrorBody,
            "description": "Refused; nothing changed",
            "content": {XML: {"schema": ref(ErrorBody)}},
        }
    }
    if answer is not None:
        kwargs["response_model"] = list[answer] if many else answer  # type: ignore[valid-type]
        responses[status] = {"content": {XML: {"schema": _schema(answer, many)}}}
        if also is not None:
            content = {media: {"schema": _schema(answer, many)} for media in (JSON, XML)}
            responses[also] = {"description": "It was there already", "content": content}
    kwargs["responses"] = responses
    if body is not None:
        content = {media: {"schema": ref(body)} for media in (JSON, XML)}
        kwargs["openapi_extra"] = {"requestBody": {"required": True, "content": content}}
    return kwargs


def describe(app: FastAPI) -> dict[str, Any]:
    """FastAPI's description plus the request bodies' schemas (computed once)."""
    if app.openapi_schema:
        return app.openapi_schema
    schema = get_openapi(
        title=app.title,
        version=app.version,
        description=app.description,
        routes=app.routes,
        separate_input_output_schemas=False,
    )
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    _refusals_are_error_bodies(schema)
    for model in REQUEST_BODIES:
        body = model.model_json_schema(ref_template="#/components/schemas/{model}")
        for name, definition in body.pop("$defs", {}).items():
            components.setdefault(name, definition)
        components.setdefault(model.__name__, body)
    app.openapi_schema = schema
    return schema


def _refusals_are_error_bodies(schema: dict[str, Any]) -> None:
    """FastAPI describes a bad parameter's 422 as its own HTTPValidationError; this API
    answers it with an ErrorBody (answers.py), like every other refusal."""
    error = {media: {"schema": ref(ErrorBody)} for media in (JSON, XML)}
    for operations in schema.get("paths", {}).values():
        for operation in operations.values():
            refused = operation.get("responses", {}).get("422")
            if refused is not None:
                refused["content"] = error
    for name in ("HTTPValidationError", "ValidationError"):
        schema.get("components", {}).get("schemas", {}).pop(name, None)
