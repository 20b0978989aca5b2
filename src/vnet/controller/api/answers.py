"""How the API answers: the body in the format the client accepts, errors as ErrorBody, and
the time per phase in a `Server-Timing` header.

Every answer that is not 2xx is an ErrorBody (status, code, reason, field): a ServiceError
from the service, a malformed or invalid body, an unknown route, and also an unexpected
failure, which is logged here with its traceback and answered without it: 503 with
Retry-After when the database cannot write (full disk, read-only, unreachable), else 500;
either way the client's connection stays open for its next request.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from pydantic import BaseModel, ValidationError
from sqlalchemy.exc import OperationalError
from starlette.exceptions import HTTPException

from vnet.controller.api import codec
from vnet.controller.errors import ServiceError
from vnet.model.controller_api import ErrorBody

log = logging.getLogger("vnet.controller.api")
PHASES = ("db", "path", "devices")  # what the service measures; the API adds "api"
_LOCATIONS = {"body", "query", "path", "header", "cookie"}
RETRY_AFTER_SECONDS = 30  # a full or read-only disk needs a person; a lock, a moment


class Invalid(ServiceError):
    """A well-formed body or parameter that does not satisfy the API's types."""

    status = 422
    code = "invalid"


def answer(
    request: Request,
    value: BaseModel | Sequence[BaseModel],
    item: type[BaseModel] | None = None,
    status: int = 200,
    headers: Mapping[str, str] | None = None,
) -> Response:
    """`value` (a body, or a list of `item` bodies) as JSON, or XML if the client prefers it."""
    if _format(request) == "xml":
        return Response(
            codec.to_xml(list(value) if isinstance(value, Sequence) else value, item),
            status,
            headers,
            media_type=codec.XML,
        )
    if isinstance(value, BaseModel):
        content = value.model_dump_json()
    else:
        content = "[" + ",".join(entry.model_dump_json() for entry in value) + "]"
    return Response(content, status, headers, media_type=codec.JSON)


def _format(request: Request) -> str:
    return codec.answer_format(request.headers.get("accept"), request.headers.get("content-type"))


def error_answer(request: Request, body: ErrorBody) -> Response:
    headers = {}
    if body.status == 401:  # RFC 6750: say which scheme, and that the token was the problem
        headers["WWW-Authenticate"] = 'Bearer realm="vnet", error="invalid_token"'
    try:
        xml = _format(request) == "xml"
    except codec.NotAcceptable:
        xml = False  # an error must reach the client in some form
    if xml:
        return Response(codec.to_xml(body), body.status, headers, media_type=codec.XML)
    return Response(body.model_dump_json(), body.status, headers, media_type=codec.JSON)


# -- timing ------------------------------------------------------------------------------------
def started(request: Request) -> float:
    """When the request reached the app (set by TimingStart), or now."""
    return request.scope.get("vnet.started") or time.perf_counter()


def server_timing(
    request: Request, timings: Mapping[str, float], service_seconds: float
) -> dict[str, str]:
    """The Server-Timing header, in milliseconds: the service's phases as it measured them,
    and the API's own share: the time since the request arrived that was not spent inside
    the service call (auth, decoding, encoding). Measured apart rather than as a remainder,
    because the service's phases may overlap (a database write inside a device step)."""
    total = time.perf_counter() - started(request)
    spent = {phase: timings.get(phase, 0.0) for phase in PHASES}
    spent["api"] = max(0.0, total - service_seconds)
    request.scope["vnet.phases"] = spent  # for the request's duration metrics (metrics.py)
    value = ", ".join(f"{phase};dur={seconds * 1000:.2f}" for phase, seconds in spent.items())
    return {"Server-Timing": value}


class TimingStart:
    """Pure ASGI middleware (no per-request task, unlike BaseHTTPMiddleware): stamps the
    moment a request arrives, so the API's share includes routing, auth and decoding."""

    def __init__(self, app: Any):
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            scope["vnet.started"] = time.perf_counter()
        await self.app(scope, receive, send)


# -- errors ------------------------------------------------------------------------------------
def invalid(errors: Sequence[Mapping[str, Any]]) -> Invalid:
    """Pydantic's errors as one Invalid naming the (first) field and every problem."""
    problems, fields = [], []
    for error in errors:
        loc = list(error.get("loc", ()))
        if loc and loc[0] in _LOCATIONS:  # only where it came from: a field may be "path"
            loc = loc[1:]
        loc = [str(part) for part in loc]
        where = ".".join(loc) or "body"
        fields.append(where)
        problems.append(f"{where}: {error.get('msg', 'invalid')}")
    return Invalid("; ".join(problems), field=fields[0] if fields else None)


def install_error_handlers(app: FastAPI) -> None:
    async def service_error(request: Request, err: Exception) -> Response:
        assert isinstance(err, ServiceError)
        return error_answer(request, err.body())

    async def validation_error(request: Request, err: Exception) -> Response:
        assert isinstance(err, RequestValidationError | ValidationError)
        return error_answer(request, invalid(err.errors()).body())

    async def http_error(request: Request, err: Exception) -> Response:
        assert isinstance(err, HTTPException)
        code = {404: "not-found", 405: "method-not-allowed"}.get(err.status_code, "http-error")
        reason = f"{request.method} {request.url.path}: {err.detail}"
        return error_answer(request, ErrorBody(status=err.status_code, code=code, reason=reason))

    app.add_exception_handler(ServiceError, service_error)
    app.add_exception_handler(RequestValidationError, validation_error)
    app.add_exception_handler(ValidationError, validation_error)
    app.add_exception_handler(HTTPException, http_error)
    app.add_middleware(Unexpected)


def unexpected_body(err: Exception) -> tuple[ErrorBody, dict[str, str]]:
    """The answer to a failure of the controller itself: a database that cannot write now
    (full, read-only, locked, unreachable) is 503 with its cause and when to retry; anything
    else a 500 naming the exception, its traceback in the log."""
    if isinstance(err, OperationalError):
        cause = str(err.orig or err).splitlines()[0][:200]
        reason = f"the controller's database cannot be written now ({cause}); retry later"
        body = ErrorBody(status=503, code="database-unavailable", reason=reason)
        return body, {"Retry-After": str(RETRY_AFTER_SECONDS)}
    reason = f"internal error ({type(err).__name__}); the controller's log has the details"
    return ErrorBody(status=500, code="internal-error", reason=reason), {}


class Unexpected:
    """Pure ASGI middleware inside Starlette's ServerErrorMiddleware: a failure no route
    expected is answered here and not raised on. Starlette's own handler answered it too, but
    then raised again, and uvicorn closed the client's kept-alive connection, so the client's
    next request failed with "connection reset"."""

    def __init__(self, app: Any):
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def sending(message: dict[str, Any]) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, sending)
        except Exception as err:
            if started:  # half an answer is out: only closing the connection tells the client
                raise
            request = Request(scope)
            log.error("%s %s failed", request.method, request.url.path, exc_info=err)
            body, headers = unexpected_body(err)
            response = error_answer(request, body)
            response.headers.update(headers)
            await response(scope, receive, send)
