"""A typed client of `vnet controller`'s API (httpx, synchronous; issue 12).

Requests and answers are the bodies of `vnet.model.controller_api`, the contract the
controller serves. Every non-2xx answer raises `ControllerError` carrying the controller's
`ErrorBody` (status, code, reason, field, shortfalls, host); no controller to talk to raises
`ConnectError`. A lab's controller listens inside the lab's management namespace: give
`namespace` and every connection is opened from there, as `vnet.client.connect` does for
agents.
"""

from __future__ import annotations

import ipaddress
import ssl
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

import httpx
from pydantic import BaseModel, TypeAdapter, ValidationError

from vnet.client.errors import ConnectError, ControllerError
from vnet.model.controller_api import (
    API_PREFIX,
    IDEMPOTENCY_HEADER,
    AdoptRequest,
    AgentRequest,
    ConnectionAnswer,
    ConnectionCounters,
    ConnectionEvent,
    ConnectionRequest,
    ConnectionView,
    EndHostRequest,
    EndHostView,
    ErrorBody,
    HostRequest,
    HostView,
    LinkRequest,
    LinkView,
    ModifyRequest,
    NetworkRequest,
    NetworkView,
    Removed,
    Role,
    RouterRequest,
    RouterView,
    TenantRequest,
    TenantView,
    TokenRequest,
    TokenView,
    TopologyView,
    UnmanagedRouter,
    WhoAmI,
)
from vnet.tools import netns

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)


def read_token(path: str | Path) -> str:
    """The API token kept in `path` (the provider's token file, or one made for a tenant)."""
    try:
        token = Path(path).read_text().strip()
    except OSError as err:
        raise ConnectError(f"cannot read the API token from {path}: {err.strerror}") from None
    if not token:
        raise ConnectError(f"the token file {path} is empty")
    return token


def server_timing(header: str | None) -> dict[str, float]:
    """`db;dur=1.2, api;dur=0.8` (milliseconds) -> {"db": 0.0012, "api": 0.0008} seconds."""
    out: dict[str, float] = {}
    for metric in (header or "").split(","):
        name, *params = (p.strip() for p in metric.split(";"))
        for param in params:
            key, _, value = param.partition("=")
            if name and key == "dur":
                try:
                    out[name] = float(value) / 1000
                except ValueError:
                    continue
    return out


def error_body(r: httpx.Response) -> ErrorBody:
    """The controller's ErrorBody, or one made from whatever a non-2xx answer carried
    (a proxy's HTML page, a crash's plain text) so callers always get the same shape."""
    try:
        return ErrorBody.model_validate(r.json())
    except (ValueError, ValidationError):
        pass
    text = " ".join(r.text.split())[:300] or r.reason_phrase
    return ErrorBody(status=r.status_code, code=f"http-{r.status_code}", reason=text)


def tls_verify(verify: bool | str) -> bool | ssl.SSLContext:
    """httpx's `verify`: a file is the certificate (or CA) to trust, instead of the system's."""
    return ssl.create_default_context(cafile=verify) if isinstance(verify, str) else verify


def refuse_clear_text(url: str) -> None:
    """The token is sent with every request: over plain HTTP only to this machine itself."""
    parsed = httpx.URL(url)
    if parsed.scheme != "http":
        return
    try:
        loopback = ipaddress.ip_address(parsed.host).is_loopback
    except ValueError:
        loopback = parsed.host == "localhost"
    if not loopback:
        raise ConnectError(
            f"{url}: the API token would travel in clear over plain HTTP; use the"
            " controller's https:// URL"
        )


def _segment(value: str) -> str:
    return quote(value, safe="")


class ControllerClient:
    """One controller's API; use as a context manager (or call close)."""

    def __init__(
        self,
        base_url: str,
        token: str,
        namespace: str | None = None,
        timeout: float = 30.0,
        verify: bool | str = True,
    ):
        self.base_url = base_url.rstrip("/")
        refuse_clear_text(self.base_url)
        self.namespace = namespace
        # seconds per phase of the last answer (its Server-Timing header: db, path, devices, api)
        self.last_timings: dict[str, float] = {}
        self._http = httpx.Client(
            base_url=self.base_url + API_PREFIX,
            headers={"Authorization": f"Bearer {token}", "Accept": "application/json"},
            timeout=timeout,
            verify=tls_verify(verify),
        )

    @classmethod
    def from_token_file(cls, base_url: str, token_file: str | Path, **kw: Any) -> ControllerClient:
        return cls(base_url, read_token(token_file), **kw)

    def __enter__(self) -> ControllerClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    # -- the wire ----------------------------------------------------------------------------
    def request(self, method: str, path: str, **kw: Any) -> httpx.Response:
        """One request from the client's namespace; ControllerError for a non-2xx answer."""
        try:
            # a socket belongs to the namespace it was opened in: open (or reuse) it from there
            with netns.entered(self.namespace):
                r = self._http.request(method, path, **kw)
        except httpx.TimeoutException:
            raise ConnectError(
                f"the controller at {self.base_url} did not answer in time"
            ) from None
        except httpx.ConnectError as err:
            if "CERTIFICATE_VERIFY_FAILED" in str(err):
                raise ConnectError(
                    f"the controller at {self.base_url} presented a certificate this client"
                    " does not trust: give its certificate (controller-cert.pem in its state"
                    " directory, or its CA) with --ca-file or VNET_CONTROLLER_CA, after"
                    f" comparing its SHA-256 fingerprint with the controller's log ({err})"
                ) from None
            where = f" (from namespace {self.namespace})" if self.namespace else ""
            raise ConnectError(
                f"cannot reach the controller at {self.base_url}{where}: {err}"
            ) from None
        except httpx.HTTPError as err:
            where = f" (from namespace {self.namespace})" if self.namespace else ""
            raise ConnectError(
                f"cannot reach the controller at {self.base_url}{where}: {err}"
            ) from None
        except OSError as err:  # the namespace is gone
            raise ConnectError(f"cannot reach the controller at {self.base_url}: {err}") from None
        self.last_timings = server_timing(r.headers.get("Server-Timing"))
        if not r.is_success:
            raise ControllerError(error_body(r))
        return r

    def _get(self, path: str, kind: type[T], **params: Any) -> T:
        query = {k: v for k, v in params.items() if v is not None}
        r = self.request("GET", path, params=query)
        return TypeAdapter(kind).validate_python(r.json())

    def _send(self, method: str, path: str, body: BaseModel | None, kind: type[M], **kw: Any) -> M:
        if body is not None:
            kw["content"] = body.model_dump_json(exclude_none=True)
            kw.setdefault("headers", {})["Content-Type"] = "application/json"
        return kind.model_validate(self.request(method, path, **kw).json())

    @staticmethod
    def _connection_path(tenant: str, name: str | None = None) -> str:
        path = f"/tenants/{_segment(tenant)}/connections"
        return path if name is None else f"{path}/{_segment(name)}"

    # -- who and what ------------------------------------------------------------------------
    def whoami(self) -> WhoAmI:
        return self._get("/whoami", WhoAmI)

    def topology(self) -> TopologyView:
        return self._get("/topology", TopologyView)

    def tenants(self) -> list[TenantView]:
        return self._get("/tenants", list[TenantView])

    def create_tenant(self, name: str) -> TenantView:
        return self._send("POST", "/tenants", TenantRequest(name=name), TenantView)

    def networks(self, tenant: str | None = None) -> list[NetworkView]:
        return self._get("/networks", list[NetworkView], tenant=tenant)

    def routers(self, tenant: str | None = None) -> list[RouterView]:
        return self._get("/routers", list[RouterView], tenant=tenant)

    def create_network(self, tenant: str, request: NetworkRequest) -> NetworkView:
        path = f"/tenants/{_segment(tenant)}/networks"
        return self._send("POST", path, request, NetworkView)

    def create_router(self, tenant: str, request: RouterRequest) -> RouterView:
        """The VR as made: on `request.host`, or where the controller placed it."""
        path = f"/tenants/{_segment(tenant)}/routers"
        return self._send("POST", path, request, RouterView)

    def endhosts(self, tenant: str | None = None) -> list[EndHostView]:
        return self._get("/endhosts", list[EndHostView], tenant=tenant)

    def create_endhost(self, tenant: str, request: EndHostRequest) -> EndHostView:
        """A tenant's machine in one of its networks (attached to the network by the operator)."""
        path = f"/tenants/{_segment(tenant)}/endhosts"
        return self._send("POST", path, request, EndHostView)

    # deletes answer with the object as it was; a refusal names what holds it (ErrorBody.holders)
    def delete_tenant(self, name: str) -> TenantView:
        return self._send("DELETE", f"/tenants/{_segment(name)}", None, TenantView)

    def delete_network(self, tenant: str, name: str) -> NetworkView:
        path = f"/tenants/{_segment(tenant)}/networks/{_segment(name)}"
        return self._send("DELETE", path, None, NetworkView)

    def delete_router(self, tenant: str, name: str) -> RouterView:
        path = f"/tenants/{_segment(tenant)}/routers/{_segment(name)}"
        return self._send("DELETE", path, None, RouterView)

    def delete_endhost(self, tenant: str, name: str) -> EndHostView:
        path = f"/tenants/{_segment(tenant)}/endhosts/{_segment(name)}"
        return self._send("DELETE", path, None, EndHostView)

    def unmanaged(self, host: str) -> list[UnmanagedRouter]:
        """The VRs `host`'s agent holds that the controller does not manage (provider)."""
        return self._get(f"/hosts/{_segment(host)}/unmanaged", list[UnmanagedRouter])

    def adopt_router(self, tenant: str, host: str, name: str) -> RouterView:
        path = f"/tenants/{_segment(tenant)}/routers/adopt"
        return self._send("POST", path, AdoptRequest(host=host, name=name), RouterView)

    def hosts(self) -> list[HostView]:
        return self._get("/hosts", list[HostView])

    def links(self) -> list[LinkView]:
        return self._get("/links", list[LinkView])

    def add_host(self, name: str, agent: AgentRequest | None = None) -> HostView:
        """The host added (201), or as it was (200: adding is idempotent); with `agent`, the
        controller reaches that agent from now on (`reachable`: whether it answered)."""
        return self._send("POST", "/hosts", HostRequest(name=name, agent=agent), HostView)

    def add_link(self, request: LinkRequest) -> LinkView:
        return self._send("POST", "/links", request, LinkView)

    def remove_host(self, name: str) -> Removed:
        """Drained, then removed, with the connections moved off it; or ControllerError
        (409 in-use naming each connection that could not move)."""
        return self._send("DELETE", f"/hosts/{_segment(name)}", None, Removed)

    def remove_link(self, name: str) -> Removed:
        return self._send("DELETE", f"/links/{_segment(name)}", None, Removed)

    def create_token(
        self, role: Role, tenant: str | None = None, expires_in: int | None = None
    ) -> TokenView:
        body = TokenRequest(role=role, tenant=tenant, expires_in=expires_in)
        return self._send("POST", "/tokens", body, TokenView)

    # -- connections -------------------------------------------------------------------------
    def connections(
        self, tenant: str | None = None, released: bool = False
    ) -> list[ConnectionView]:
        return self._get(
            "/connections",
            list[ConnectionView],
            tenant=tenant,
            released="true" if released else None,
        )

    def connection(self, tenant: str, name: str) -> ConnectionView:
        return self._get(self._connection_path(tenant, name), ConnectionView)

    def history(self, tenant: str, name: str) -> list[ConnectionEvent]:
        return self._get(self._connection_path(tenant, name) + "/history", list[ConnectionEvent])

    def counters(self, tenant: str, name: str) -> ConnectionCounters:
        """The connection's shapers, as the agents of its ingress hosts count them now."""
        return self._get(self._connection_path(tenant, name) + "/counters", ConnectionCounters)

    def request_connection(
        self, tenant: str, request: ConnectionRequest, idempotency_key: str | None = None
    ) -> ConnectionAnswer:
        """Established (201) with the path, SIDs and what was moved, or ControllerError
        (code no-capacity with every shortfall, agent-refused with the host, ...). Sending
        the same `idempotency_key` again answers the first request's result."""
        headers = {IDEMPOTENCY_HEADER: idempotency_key} if idempotency_key else {}
        path = self._connection_path(tenant)
        return self._send("POST", path, request, ConnectionAnswer, headers=headers)

    def modify(self, tenant: str, name: str, request: ModifyRequest) -> ConnectionAnswer:
        path = self._connection_path(tenant, name)
        return self._send("PATCH", path, request, ConnectionAnswer)

    def release(self, tenant: str, name: str) -> ConnectionView:
        return self._send("DELETE", self._connection_path(tenant, name), None, ConnectionView)
