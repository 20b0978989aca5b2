"""A typed RESTCONF client of a vnet agent (httpx, JSON bodies)."""

from __future__ import annotations

import json
import ssl
from typing import Any
from urllib.parse import quote

import httpx

from vnet.client.endpoint import Endpoint
from vnet.client.errors import AuthError, ClientError, ConnectError
from vnet.client.routers import RouterState
from vnet.model import VirtualNetwork, VirtualRouter
from vnet.model.yang.errors import parse_restconf_error
from vnet.model.yang.host import network_entry, network_of, router_entry
from vnet.model.yang.module import MODULE, NETWORKS, ROUTERS, qualified

JSON = "application/yang-data+json"
DATA = "/restconf/data"


class RestconfClient:
    """VR and network operations over HTTPS (or plain HTTP); use as a context manager."""

    def __init__(self, ep: Endpoint):
        host = f"[{ep.address}]" if ":" in ep.address else ep.address
        scheme = "http" if ep.plain_http else "https"
        self.base = f"{scheme}://{host}:{ep.port_for('restconf')}"
        self.ep = ep
        verify: Any = ep.verify
        if isinstance(verify, str):  # pin the agent's certificate
            verify = ssl.create_default_context(cafile=verify)
        self.client = httpx.Client(
            base_url=self.base,
            auth=(ep.user, ep.password or ""),
            verify=verify,
            timeout=ep.timeout,
            headers={"Accept": JSON},
        )

    def __enter__(self) -> RestconfClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.client.close()

    def request(self, method: str, url: str, **kw: Any) -> httpx.Response:
        """One request; ClientError for an error the agent answered, else Connect/AuthError."""
        try:
            r = self.client.request(method, url, **kw)
        except httpx.ConnectError as err:
            text = str(err)
            if "CERTIFICATE_VERIFY_FAILED" in text:
                raise AuthError(
                    f"the agent's certificate is not trusted ({text}); pin it with --cacert "
                    "FILE (restconf-cert.pem in the agent's state directory) or use --insecure"
                ) from None
            raise ConnectError(
                f"cannot reach the agent's RESTCONF at {self.base}: {text}"
            ) from None
        except httpx.HTTPError as err:
            raise ConnectError(f"RESTCONF request to {self.base} failed: {err}") from None
        if r.status_code == 401:
            raise AuthError(f"the agent refused the login of {self.ep.user!r} (HTTP 401)")
        if r.status_code >= 400:
            raise self._error(r)
        return r

    @staticmethod
    def _error(r: httpx.Response) -> ClientError:
        try:
            err = parse_restconf_error(r.json())
        except (ValueError, KeyError, IndexError, TypeError):
            return ClientError("operation-failed", f"HTTP {r.status_code}: {r.text[:200]}")
        return ClientError(str(err.tag), err.message, err.path, r.status_code, err.app_tag)

    def _send(self, method: str, url: str, member: str, value: Any) -> httpx.Response:
        body = json.dumps({member: value})
        return self.request(method, url, content=body, headers={"Content-Type": JSON})

    # -- virtual routers ------------------------------------------------------------
    @staticmethod
    def _router_uri(name: str | None = None) -> str:
        uri = f"{DATA}/{ROUTERS}"
        return uri + f"/router={quote(name, safe='')}" if name is not None else uri

    def routers(self, state: bool = True) -> list[RouterState]:
        r = self.request(
            "GET", self._router_uri(), params={"content": "all" if state else "config"}
        )
        entries = r.json().get(ROUTERS, {}).get("router", [])
        return [RouterState.from_entry(e, self.ep.host) for e in entries]

    def router(self, name: str, state: bool = True) -> RouterState | None:
        try:
            r = self.request(
                "GET", self._router_uri(name), params={"content": "all" if state else "config"}
            )
        except ClientError as err:
            if err.status == 404:
                return None
            raise
        entries = r.json().get(qualified("router"), [])
        return RouterState.from_entry(entries[0], self.ep.host) if entries else None

    def create_router(self, vr: VirtualRouter) -> None:
        self._send("POST", self._router_uri(), qualified("router"), [router_entry(vr)])

    def delete_router(self, name: str) -> None:
        self.request("DELETE", self._router_uri(name))

    def set_admin(self, name: str, admin_state: str) -> None:
        entry = {"name": name, "admin-state": admin_state}
        self._send("PATCH", self._router_uri(name), qualified("router"), [entry])

    # -- guarantees -------------------------------------------------------------------
    def guarantees(self, state: bool = True) -> dict[str, Any]:
        """The `underlay` and `srv6` containers (classes, locators, connection pieces)."""
        out: dict[str, Any] = {}
        for member in (qualified("underlay"), qualified("srv6")):
            try:
                r = self.request(
                    "GET", f"{DATA}/{member}", params={"content": "all" if state else "config"}
                )
            except ClientError as err:
                if err.status == 404:
                    continue
                raise
            out |= {k: v for k, v in r.json().items() if k == member}
        return out

    # -- virtual networks -------------------------------------------------------------
    def networks(self) -> list[VirtualNetwork]:
        r = self.request("GET", f"{DATA}/{NETWORKS}", params={"content": "config"})
        return [network_of(e) for e in r.json().get(NETWORKS, {}).get("network", [])]

    def create_network(self, net: VirtualNetwork, remote_vteps: list[str] | None = None) -> None:
        entry = network_entry(net, remote_vteps)
        self._send("POST", f"{DATA}/{NETWORKS}", qualified("network"), [entry])

    def delete_network(self, name: str) -> None:
        self.request("DELETE", f"{DATA}/{NETWORKS}/network={quote(name, safe='')}")

    def get_tree(self) -> dict[str, Any]:
        """The whole configuration, as an RFC 7951 tree."""
        r = self.request("GET", DATA, params={"content": "config"})
        return {
            k: v
            for k, v in r.json().get("ietf-restconf:data", {}).items()
            if k.startswith(f"{MODULE}:")
        }
