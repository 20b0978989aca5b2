"""RESTCONF driven by the agent's own OpenAPI document (as schemathesis would): every
path and method it lists, with path keys, query parameters, media types and JSON or XML
bodies drawn at random, sent over HTTP (httpx's ASGI transport) to the real app over a
datastore that skips the kernel. No request may get a 5xx, and every 4xx carries an
ietf-restconf:errors document."""

from __future__ import annotations

import asyncio
import json
import re
import tempfile
from pathlib import Path
from typing import Any

import httpx
from hypothesis import given
from hypothesis import strategies as st

from tests.nokernel_support import NoKernelDatastore, admin_config
from vnet.agent.restconf import openapi
from vnet.agent.restconf.app import create_app

DOC = openapi.document()
OPERATIONS = sorted(
    (path, method.upper()) for path, item in DOC["paths"].items() for method in item
)
AUTH = ("admin", "s3cret")
keys = st.one_of(
    st.sampled_from(["r1", "n1", "eth0", "10.9.0.0%2F16", "x,y", "%zz", "", "r1%2Fx"]),
    st.text(max_size=8).map(lambda t: "".join(c for c in t if c.isalnum())),
)
queries = st.sampled_from(
    ["", "?content=config", "?content=nonconfig", "?depth=1", "?depth=0", "?depth=x",
     "?fields=a", "?with-defaults=report-all", "?content=all&depth=unbounded", "?x=1"]
)  # fmt: skip
leaf = st.one_of(
    st.sampled_from(["r1", "n1", "eth0", "10.1.0.1/24", "up", "down", "a", "10.1.0.0/24"]),
    st.integers(-5, 70000),
    st.none(),
    st.booleans(),
    st.text(max_size=6),
)
members = st.sampled_from(
    ["name", "index", "admin-state", "interface", "network", "ipv4", "route", "destination",
     "next-hop", "vni", "tenant", "ipv4-prefix", "mtu", "x"]
)  # fmt: skip
json_bodies = st.recursive(
    leaf,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(members, inner, max_size=4)
    ),
    max_leaves=12,
).flatmap(
    lambda value: st.sampled_from(
        [
            {"vnet-router:router": [value] if isinstance(value, dict) else value},
            {"vnet-router:routers": {"router": value}},
            {"vnet-router:network": value},
            {"vnet-router:virtual-networks": {"network": value}},
            {"vnet-router:interface": value},
            {"vnet-router:route": value},
            value,
        ]
    )
)
media = st.sampled_from(
    ["application/yang-data+json", "application/yang-data+xml", "application/json", "text/plain"]
)


@st.composite
def requests(draw: st.DrawFn) -> tuple[str, str, str, bytes]:
    path, method = draw(st.sampled_from(OPERATIONS))
    url = re.sub(r"\{[^}]+\}", lambda _: draw(keys), path) + draw(queries)
    ctype = draw(media)
    body = b""
    if method in ("PUT", "PATCH", "POST"):
        value = draw(json_bodies)
        body = (
            json.dumps(value).encode()
            if "json" in ctype
            else draw(st.sampled_from([b"<router xmlns='urn:vnet:yang:vnet-router'/>", b"<x", b""]))
        )
    return method, url, ctype, body


async def send_all(batch: list[tuple[str, str, str, bytes]], state_dir: Path) -> list[Any]:
    ds = NoKernelDatastore.with_networks(admin_config(state_dir))
    app = create_app(ds, ds.config)
    out = []
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="https://agent") as client:
        for method, url, ctype, body in batch:
            r = await client.request(
                method, url, content=body or None, headers={"Content-Type": ctype}, auth=AUTH
            )
            out.append((method, url, body, r))
    ds._kx.shutdown(wait=False)
    return out


@given(st.lists(requests(), min_size=1, max_size=5))
def test_no_request_the_openapi_document_allows_gets_a_server_error(batch: list[Any]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        results = asyncio.run(send_all(batch, Path(tmp)))
    for method, url, body, r in results:
        assert r.status_code < 500, (method, url, body, r.status_code, r.text)
        if r.status_code >= 400 and r.status_code not in (401, 405, 406, 415):
            assert "ietf-restconf:errors" in r.text or "errors" in r.text, (method, url, r.text)
