"""The RESTCONF HTTP application (RFC 8040) on the agent's one datastore.

Routing of /restconf/data is done here, not by the framework: key values
may hold a percent-encoded '/' (route=10.0.0.0%2F8), so the path is parsed
from the raw request target. Every edit reads `running`, computes the new
tree (resource.py) and commits it through the datastore, which validates,
applies it to the kernel, persists and notifies.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import inspect
import json
import logging
import time
from typing import Any

from fastapi import FastAPI, Request, Response
from starlette.exceptions import HTTPException

from vnet.agent.datastore import Datastore
from vnet.agent.logins import LoginThrottle
from vnet.agent.restconf import codec, metrics, openapi, paths, resource, txn
from vnet.agent.restconf.codec import JSON, XML
from vnet.agent.restconf.paths import StatusError
from vnet.model.agent_config import AgentConfig
from vnet.model.yang import encode, schema
from vnet.model.yang.errors import (
    RESTCONF_NS,
    ErrorTag,
    ErrorType,
    RpcError,
    restconf_error_json,
    restconf_error_xml,
)
from vnet.tools.api_docs import serve_docs

log = logging.getLogger("vnet.agent.restconf")

SESSION = "restconf"
YANG_LIBRARY_VERSION = "2019-01-04"
MAX_BODY = 1 << 20
REALM = "vnet-agent"
DATA_PREFIX = "/restconf/data"
HOST_META = (
    "<XRD xmlns='http://docs.oasis-open.org/ns/xri/xrd-1.0'>\n"
    "  <Link rel='restconf' href='/restconf'/>\n"
    "</XRD>\n"
)
_GET_PARAMS = {"content", "depth"}
_KNOWN_PARAMS = {
    "content",
    "depth",
    "fields",
    "filter",
    "insert",
    "point",
    "start-time",
    "stop-time",
    "with-defaults",
}
_ALLOW = "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS"


def _error_response(err: RpcError, accept: str | None) -> Response:
    try:
        mt = codec.response_type(accept)
    except RpcError:
        mt = JSON
    if mt == XML:
        body = restconf_error_xml(err)
    else:
        body = restconf_error_json(err, paths.json_path(err.path))
    headers = {}
    status = err.http_status
    if status == 401:
        headers["WWW-Authenticate"] = f'Basic realm="{REALM}", charset="UTF-8"'
    if status == 405:
        headers["Allow"] = _ALLOW
    return Response(body, status, media_type=mt, headers=headers)


def _basic_credentials(request: Request) -> tuple[str | None, str]:
    """(user, password) of an Authorization: Basic header; (None, "") without one."""
    scheme, _, cred = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "basic":
        return None, ""
    try:
        user, _, password = base64.b64decode(cred.strip(), validate=True).decode().partition(":")
    except (binascii.Error, UnicodeDecodeError):
        return "", ""
    return user, password


class Restconf:
    """Request handlers bound to one datastore and one configuration."""

    def __init__(self, ds: Datastore, config: AgentConfig):
        self.ds = ds
        self.passwords = {u.name: u.password for u in config.users if u.password is not None}
        self.throttle = LoginThrottle("RESTCONF")

    # -- helpers ----------------------------------------------------------------
    def authenticate(self, request: Request) -> str:
        """The user of the request's HTTP Basic credentials; failures are throttled per
        source and user (vnet.agent.logins)."""
        user, password = _basic_credentials(request)
        if user is not None:
            source = request.client.host if request.client else "?"
            left = self.throttle.wait_left(source, user)
            if left > 0:
                self.throttle.refused(source, user)
                raise StatusError(
                    ErrorTag.ACCESS_DENIED,
                    f"too many failed logins for {user!r} from {source}; retry in {left:.0f} s",
                    ErrorType.PROTOCOL,
                    status=429,
                )
            expected = self.passwords.get(user)
            if expected is not None and hmac.compare_digest(expected.encode(), password.encode()):
                self.throttle.succeeded(source, user)
                return user
            self.throttle.failed(source, user)
        raise StatusError(
            ErrorTag.ACCESS_DENIED,
            "authentication required: HTTP Basic with a user of the agent",
            ErrorType.PROTOCOL,
            status=401,
        )

    @staticmethod
    def query(request: Request, allowed: set[str]) -> dict[str, str]:
        params = dict(request.query_params)
        for name in params:
            if name not in allowed:
                what = "is not supported here" if name in _KNOWN_PARAMS else "is unknown"
                raise RpcError(
                    ErrorTag.INVALID_VALUE,
                    f"query parameter {name!r} {what}"
                    + (f" (this method takes: {', '.join(sorted(allowed))})" if allowed else ""),
                    ErrorType.PROTOCOL,
                )
        return params

    @staticmethod
    async def body(request: Request) -> tuple[bytes, str]:
        ctype = request.headers.get("content-type")
        if ctype and "yang-patch" in ctype:
            raise StatusError(
                ErrorTag.INVALID_VALUE,
                "YANG Patch (RFC 8072) is not supported; send a plain patch "
                f"({JSON} or {XML}) to merge",
                ErrorType.PROTOCOL,
                status=415,
            )
        fmt = codec.request_format(ctype)
        length = request.headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > MAX_BODY:
            raise RpcError(
                ErrorTag.TOO_BIG,
                f"request bodies are limited to {MAX_BODY} bytes",
                ErrorType.PROTOCOL,
            )
        chunks, size = [], 0
        async for chunk in request.stream():  # chunked bodies too: stop at the limit
            size += len(chunk)
            if size > MAX_BODY:
                raise RpcError(
                    ErrorTag.TOO_BIG,
                    f"request bodies are limited to {MAX_BODY} bytes",
                    ErrorType.PROTOCOL,
                )
            chunks.append(chunk)
        return b"".join(chunks), fmt

    @staticmethod
    def answer(member: str, value: Any, mt: str, path: paths.DataPath | None) -> Response:
        if mt == JSON:
            if path is None:
                value = encode.ordered(value, schema.root(), top=True)
            else:
                value = encode.ordered(value, path.node)
            return Response(encode.to_json(member, value), 200, media_type=JSON)
        if path is None:
            body = encode.datastore_xml(value)
        else:
            body = encode.to_xml(path.node.name, value, path.node)
        return Response(body, 200, media_type=XML)

    # -- resources --------------------------------------------------------------
    async def root(self, request: Request) -> Response:
        accept = request.headers.get("accept")
        try:
            self.authenticate(request)
            mt = codec.response_type(accept)
            if mt == JSON:
                value = {"data": {}, "operations": {}, "yang-library-version": YANG_LIBRARY_VERSION}
                return Response(encode.to_json("ietf-restconf:restconf", value), media_type=JSON)
            body = (
                f'<restconf xmlns="{RESTCONF_NS}"><data/><operations/>'
                f"<yang-library-version>{YANG_LIBRARY_VERSION}</yang-library-version></restconf>"
            )
            return Response(body, media_type=XML)
        except RpcError as err:
            return _error_response(err, accept)

    async def yang_library_version(self, request: Request) -> Response:
        accept = request.headers.get("accept")
        try:
            self.authenticate(request)
            mt = codec.response_type(accept)
            if mt == JSON:
                body = encode.to_json("ietf-restconf:yang-library-version", YANG_LIBRARY_VERSION)
                return Response(body, media_type=JSON)
            body_xml = (
                f'<yang-library-version xmlns="{RESTCONF_NS}">{YANG_LIBRARY_VERSION}'
                "</yang-library-version>"
            )
            return Response(body_xml, media_type=XML)
        except RpcError as err:
            return _error_response(err, accept)

    async def operations(self, request: Request) -> Response:
        accept = request.headers.get("accept")
        try:
            self.authenticate(request)
            if codec.response_type(accept) == JSON:
                return Response(encode.to_json("ietf-restconf:operations", {}), media_type=JSON)
            return Response(f'<operations xmlns="{RESTCONF_NS}"/>', media_type=XML)
        except RpcError as err:
            return _error_response(err, accept)

    async def not_found(self, request: Request) -> Response:
        accept = request.headers.get("accept")
        try:
            self.authenticate(request)
            raise StatusError(
                ErrorTag.INVALID_VALUE,
                f"no RESTCONF resource at {request.url.path}; data lives under {DATA_PREFIX}",
                ErrorType.PROTOCOL,
                status=404,
            )
        except RpcError as err:
            return _error_response(err, accept)

    async def metrics(self, request: Request) -> Response:
        """/metrics for Prometheus: authenticated as every request, and showing only the VRs,
        classes and connections the user may read (restconf/metrics.py)."""
        accept = request.headers.get("accept")
        try:
            user = self.authenticate(request)
            self.query(request, set())
            running = self.ds.running_snapshot()
            tree = self.ds.nacm.readable(user, running, await self.ds.state_tree())
            body, content_type = metrics.exposition(tree, accept)
            return Response(body, headers={"Content-Type": content_type})
        except RpcError as err:
            return _error_response(err, accept)

    def _yang_library(self, mt: str) -> Response:
        library = schema.yang_library()
        if mt == JSON:
            return Response(json.dumps(library, indent=2), media_type=mt)
        return Response(encode.tree_to_xml(library), media_type=mt)

    async def data(self, request: Request) -> Response:
        started = time.perf_counter()
        accept = request.headers.get("accept")
        method = request.method
        try:
            response = await self._data(request, method, accept)
        except RpcError as err:
            response = _error_response(err, accept)
        except Exception as err:  # a bug: answer, log, keep serving
            log.exception("%s %s failed", method, request.url.path)
            response = _error_response(
                RpcError(ErrorTag.OPERATION_FAILED, f"internal error: {err}"), accept
            )
        log.debug(
            "%s %s -> %d in %.1f ms",
            method,
            request.url.path,
            response.status_code,
            (time.perf_counter() - started) * 1000,
        )
        return response

    async def _data(self, request: Request, method: str, accept: str | None) -> Response:
        """One request on /restconf/data; errors are raised as RpcError."""
        request.state.user = self.authenticate(request)
        raw = (request.scope.get("raw_path") or request.url.path.encode()).decode(
            "utf-8", "replace"
        )
        raw = raw[len(DATA_PREFIX) :] if raw.startswith(DATA_PREFIX) else raw
        if method == "OPTIONS":
            return Response(status_code=200, headers={"Allow": _ALLOW})
        if raw.strip("/").startswith("ietf-yang-library:yang-library") and method in (
            "GET",
            "HEAD",
        ):
            self.query(request, set())
            return self._yang_library(codec.response_type(accept))
        path = paths.parse(raw)
        if method in ("GET", "HEAD"):
            response = await self.get(request, path, accept)
            if method == "HEAD":
                return Response(
                    status_code=response.status_code,
                    headers={"Content-Type": response.media_type or JSON},
                )
            return response
        if method == "POST":
            return await self.post(request, path)
        if method == "PUT":
            return await self.put(request, path)
        if method == "PATCH":
            return await self.patch(request, path)
        if method == "DELETE":
            return await self.delete(request, path)
        raise StatusError(
            ErrorTag.OPERATION_NOT_SUPPORTED,
            f"method {method} is not supported",
            ErrorType.PROTOCOL,
            status=405,
        )

    async def delete(self, request: Request, path: paths.DataPath) -> Response:
        self.query(request, set())
        await txn.update(
            self.ds, lambda t: (resource.delete(t, path), None), SESSION, request.state.user
        )
        return Response(status_code=204)

    async def get(self, request: Request, path: paths.DataPath, accept: str | None) -> Response:
        params = self.query(request, _GET_PARAMS)
        mt = codec.response_type(accept)
        content = params.get("content", "all")
        if content not in ("all", "config", "nonconfig"):
            raise RpcError(
                ErrorTag.INVALID_VALUE,
                f"content={content!r}: use all, config or nonconfig",
                ErrorType.PROTOCOL,
            )
        depth_text = params.get("depth", "unbounded")
        if depth_text == "unbounded":
            depth = None
        elif depth_text.isdigit() and 1 <= int(depth_text) <= 65535:
            depth = int(depth_text)
        else:
            raise RpcError(
                ErrorTag.INVALID_VALUE,
                f"depth={depth_text!r}: use 1..65535 or unbounded",
                ErrorType.PROTOCOL,
            )
        # read only (filters and depth limits build new trees): no copy of running
        tree = self.ds.running_snapshot() if content == "config" else await self.state(path)
        tree = self.ds.nacm.readable(request.state.user, self.ds.running_snapshot(), tree)
        tree = resource.filter_tree(tree, content)
        member, value = resource.get(tree, path)
        if depth is not None:
            if path.is_datastore:
                value = resource.limit_tree(value, depth)
            else:
                value = resource.limit_depth(value, path.node, depth)
        return self.answer(member, value, mt, None if path.is_datastore else path)

    async def state(self, path: paths.DataPath) -> dict[str, Any]:
        """Configuration and state; per-VR details (route count) only for the VRs asked for,
        and the state of the top-level member asked for alone, when the datastore can limit
        them."""
        if "detailed" not in inspect.signature(self.ds.state_tree).parameters:
            return await self.ds.state_tree()
        detailed: set[str] | None = None
        tops = {path.steps[0].name} if path.steps else None
        if path.steps and path.steps[0].name != "routers":
            detailed = set()
        elif len(path.steps) > 1 and path.steps[1].keys:
            detailed = {str(path.steps[1].keys["name"])}
        return await self.ds.state_tree(detailed=detailed, tops=tops)  # type: ignore[call-arg,unused-ignore]

    async def post(self, request: Request, path: paths.DataPath) -> Response:
        self.query(request, set())
        data, fmt = await self.body(request)
        name, value = codec.decode(data, fmt, path.node, path.xpath())
        created: paths.DataPath = await txn.update(
            self.ds, lambda t: resource.post(t, path, name, value), SESSION, request.state.user
        )
        location = str(request.base_url).rstrip("/") + f"{DATA_PREFIX}/{created.uri()}"
        return Response(status_code=201, headers={"Location": location})

    def _decode_target(self, data: bytes, fmt: str, path: paths.DataPath) -> tuple[str, Any]:
        if path.is_datastore:
            return codec.decode(data, fmt, schema.root(), "/")
        parent = path.parent()
        return codec.decode(data, fmt, parent.node, parent.xpath())

    async def put(self, request: Request, path: paths.DataPath) -> Response:
        self.query(request, set())
        data, fmt = await self.body(request)
        name, value = self._decode_target(data, fmt, path)
        created = await txn.update(
            self.ds, lambda t: resource.put(t, path, name, value), SESSION, request.state.user
        )
        return Response(status_code=201 if created else 204)

    async def patch(self, request: Request, path: paths.DataPath) -> Response:
        self.query(request, set())
        data, fmt = await self.body(request)
        name, value = self._decode_target(data, fmt, path)
        await txn.update(
            self.ds,
            lambda t: (resource.merge(t, path, name, value), None),
            SESSION,
            request.state.user,
        )
        return Response(status_code=204)


def create_app(ds: Datastore, config: AgentConfig) -> FastAPI:
    app = FastAPI(
        title="vnet agent RESTCONF API",
        openapi_url="/openapi.json",
        docs_url=None,  # served below from vnet's own copy of Swagger UI (works offline)
        redoc_url=None,
    )
    app.openapi = openapi.document  # type: ignore[method-assign]
    serve_docs(app, "vnet agent: RESTCONF")
    rc = Restconf(ds, config)
    methods = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]

    async def host_meta() -> Response:
        return Response(HOST_META, media_type="application/xrd+xml")

    app.add_api_route("/.well-known/host-meta", host_meta, methods=["GET"], include_in_schema=False)
    for url in ("/restconf", "/restconf/"):
        app.add_api_route(url, rc.root, methods=["GET", "HEAD"], include_in_schema=False)
    app.add_api_route(
        "/restconf/yang-library-version",
        rc.yang_library_version,
        methods=["GET", "HEAD"],
        include_in_schema=False,
    )
    app.add_api_route(
        "/restconf/operations", rc.operations, methods=["GET", "HEAD"], include_in_schema=False
    )
    for url in (DATA_PREFIX, DATA_PREFIX + "/", DATA_PREFIX + "/{rest:path}"):
        app.add_api_route(url, rc.data, methods=methods, include_in_schema=False)
    app.add_api_route("/metrics", rc.metrics, methods=["GET"], include_in_schema=False)
    app.add_api_route(
        "/restconf/{rest:path}", rc.not_found, methods=methods, include_in_schema=False
    )
    app.add_exception_handler(HTTPException, _framework_refusal)
    return app


async def _framework_refusal(request: Request, err: Exception) -> Response:
    """What no route matched (a key holding a line break, which the framework's path pattern
    does not match, an unknown method) is a RESTCONF error body too, not the framework's."""
    assert isinstance(err, HTTPException)
    tag = ErrorTag.OPERATION_NOT_SUPPORTED if err.status_code == 405 else ErrorTag.INVALID_VALUE
    message = f"{request.method} {request.url.path}: {err.detail}"
    refusal = StatusError(tag, message, ErrorType.PROTOCOL, status=err.status_code)
    return _error_response(refusal, request.headers.get("accept"))
