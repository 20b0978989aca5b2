"""The RESTCONF app over a real Datastore that does not touch the kernel (no root).

HTTP goes through httpx's ASGI transport, so status codes, headers and
bodies are what a client would see; the kernel-facing parts are replaced by
a short sleep inside the commit, which also makes concurrent edits overlap.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from lxml import etree

from tests.nokernel_support import NETWORKS, NoKernelDatastore, admin_config
from vnet.agent.datastore import RUNNING, Datastore
from vnet.agent.restconf.app import create_app
from vnet.agent.restconf.codec import JSON, XML
from vnet.model.agent_config import AgentConfig
from vnet.model.yang.errors import RESTCONF_NS

AUTH = ("admin", "s3cret")
KERNEL_PAUSE = 0.002  # seconds a commit's kernel step takes here
JSON_BODY = {"Content-Type": JSON}


def router(name: str, ipv4: str = "10.1.0.1/24", **extra: Any) -> dict[str, Any]:
    return {"name": name, "interface": [{"name": "eth0", "network": "n1", "ipv4": ipv4}], **extra}


def run(tmp_path: Path, body: Callable[[httpx.AsyncClient, Datastore], Awaitable[None]]) -> None:
    config = admin_config(tmp_path, host="h1")

    async def main() -> None:
        ds = NoKernelDatastore.with_networks(config, kernel_pause=KERNEL_PAUSE)
        transport = httpx.ASGITransport(app=create_app(ds, config))
        async with httpx.AsyncClient(transport=transport, base_url="https://agent") as c:
            await body(c, ds)
        ds._kx.shutdown(wait=False)

    asyncio.run(main())


def error_of(r: httpx.Response) -> dict[str, Any]:
    assert r.headers["content-type"].startswith(JSON), r.text
    errors = r.json()["ietf-restconf:errors"]["error"]
    assert len(errors) == 1
    return errors[0]


def test_authentication(tmp_path: Path) -> None:
    async def body(c: httpx.AsyncClient, ds: Datastore) -> None:
        for auth in (None, ("admin", "wrong"), ("nobody", "s3cret")):
            r = await c.get("/restconf/data", auth=auth)
            assert r.status_code == 401
            assert r.headers["www-authenticate"].startswith("Basic ")
            assert error_of(r)["error-tag"] == "access-denied"
        r = await c.get("/restconf/data", headers={"Authorization": "Basic !!notbase64"})
        assert r.status_code == 401
        assert (await c.get("/restconf/data", auth=AUTH)).status_code == 200

    run(tmp_path, body)


def test_discovery_resources(tmp_path: Path) -> None:
    async def body(c: httpx.AsyncClient, ds: Datastore) -> None:
        r = await c.get("/.well-known/host-meta")
        assert r.status_code == 200
        link = etree.fromstring(r.content).find("{http://docs.oasis-open.org/ns/xri/xrd-1.0}Link")
        assert link.get("rel") == "restconf" and link.get("href") == "/restconf"
        r = await c.get("/restconf", auth=AUTH)
        assert r.json()["ietf-restconf:restconf"]["yang-library-version"] == "2019-01-04"
        r = await c.get("/restconf/yang-library-version", auth=AUTH, headers={"Accept": XML})
        assert etree.fromstring(r.content).text == "2019-01-04"
        r = await c.get("/restconf/data/ietf-yang-library:yang-library", auth=AUTH)
        modules = r.json()["ietf-yang-library:yang-library"]["module-set"][0]["module"]
        assert "vnet-router" in {m["name"] for m in modules}
        r = await c.get("/restconf/nothing-here", auth=AUTH)
        assert r.status_code == 404 and error_of(r)["error-tag"] == "invalid-value"
        doc = (await c.get("/openapi.json")).json()
        ops = doc["paths"]["/restconf/data/vnet-router:routers/router={router}"]
        assert {"get", "put", "patch", "delete"} <= set(ops)
        assert "post" in doc["paths"]["/restconf/data/vnet-router:routers"]

    run(tmp_path, body)


def test_create_read_delete_json(tmp_path: Path) -> None:
    async def body(c: httpx.AsyncClient, ds: Datastore) -> None:
        r = await c.post(
            "/restconf/data/vnet-router:routers",
            auth=AUTH,
            headers=JSON_BODY,
            content=json.dumps({"vnet-router:router": [router("r1")]}),
        )
        assert r.status_code == 201, r.text
        assert r.headers["location"] == "https://agent/restconf/data/vnet-router:routers/router=r1"
        assert ds.tree(RUNNING)["vnet-router:routers"]["router"][0]["index"] == 1
        r = await c.get(r.headers["location"], auth=AUTH)
        entry = r.json()["vnet-router:router"][0]
        assert entry["oper-state"] == "running" and entry["index"] == 1
        r = await c.get("/restconf/data/vnet-router:routers/router=r1?content=config", auth=AUTH)
        assert r.json() == {"vnet-router:router": [{**router("r1"), "index": 1}]}
        r = await c.delete("/restconf/data/vnet-router:routers/router=r1", auth=AUTH)
        assert r.status_code == 204
        assert "vnet-router:routers" not in ds.tree(RUNNING)
        r = await c.delete("/restconf/data/vnet-router:routers/router=r1", auth=AUTH)
        assert r.status_code == 404
        assert error_of(r)["error-path"] == "/vnet-router:routers/router[name='r1']"

    run(tmp_path, body)


def test_create_and_read_xml(tmp_path: Path) -> None:
    async def body(c: httpx.AsyncClient, ds: Datastore) -> None:
        xml = (
            '<router xmlns="urn:vnet:yang:vnet-router"><name>r2</name><index>9</index>'
            "<interface><name>eth0</name><network>n2</network><ipv4>10.2.0.1/24</ipv4>"
            "</interface></router>"
        )
        r = await c.post(
            "/restconf/data/vnet-router:routers",
            auth=AUTH,
            headers={"Content-Type": XML},
            content=xml,
        )
        assert r.status_code == 201, r.text
        r = await c.get(
            "/restconf/data/vnet-router:routers/router=r2?content=config",
            auth=AUTH,
            headers={"Accept": XML},
        )
        assert r.headers["content-type"].startswith(XML)
        el = etree.fromstring(r.content)
        assert el.tag == "{urn:vnet:yang:vnet-router}router"
        assert el.findtext("{urn:vnet:yang:vnet-router}index") == "9"
        r = await c.get("/restconf/data?content=config", auth=AUTH, headers={"Accept": XML})
        data = etree.fromstring(r.content)
        assert data.tag == f"{{{RESTCONF_NS}}}data"
        # an XML error body for an XML client
        r = await c.post(
            "/restconf/data/vnet-router:routers",
            auth=AUTH,
            headers={"Content-Type": XML, "Accept": XML},
            content=xml,
        )
        assert r.status_code == 409
        err = etree.fromstring(r.content)
        ns = {"rc": RESTCONF_NS}
        assert err.findtext("rc:error/rc:error-tag", namespaces=ns) == "data-exists"
        assert err.findtext("rc:error/rc:error-path", namespaces=ns) == (
            "/vr:routers/vr:router[vr:name='r2']"
        )

    run(tmp_path, body)


def test_put_patch_and_admin_state(tmp_path: Path) -> None:
    async def body(c: httpx.AsyncClient, ds: Datastore) -> None:
        url = "/restconf/data/vnet-router:routers/router=r1"
        r = await c.put(
            url,
            auth=AUTH,
            headers=JSON_BODY,
            content=json.dumps({"vnet-router:router": [router("r1")]}),
        )
        assert r.status_code == 201, r.text
        r = await c.put(
            url,
            auth=AUTH,
            headers=JSON_BODY,
            content=json.dumps({"vnet-router:router": [router("r1", "10.1.0.7/24", index=4)]}),
        )
        assert r.status_code == 204, r.text
        r = await c.patch(
            url,
            auth=AUTH,
            headers=JSON_BODY,
            content=json.dumps({"vnet-router:router": [{"name": "r1", "admin-state": "down"}]}),
        )
        assert r.status_code == 204, r.text
        (entry,) = ds.tree(RUNNING)["vnet-router:routers"]["router"]
        assert entry["admin-state"] == "down" and entry["index"] == 4
        assert entry["interface"][0]["ipv4"] == "10.1.0.7/24"
        r = await c.get(url + "/admin-state", auth=AUTH)
        assert r.json() == {"vnet-router:admin-state": "down"}
        r = await c.patch(
            "/restconf/data/vnet-router:routers/router=r9",
            auth=AUTH,
            headers=JSON_BODY,
            content=json.dumps({"vnet-router:router": [{"name": "r9", "admin-state": "down"}]}),
        )
        assert r.status_code == 404
        r = await c.put(
            url,
            auth=AUTH,
            headers=JSON_BODY,
            content=json.dumps({"vnet-router:router": [router("r2")]}),
        )
        assert r.status_code == 400 and "differs" in error_of(r)["error-message"]

    run(tmp_path, body)


def test_model_errors_keep_their_paths(tmp_path: Path) -> None:
    async def body(c: httpx.AsyncClient, ds: Datastore) -> None:
        async def post(entry: dict[str, Any]) -> httpx.Response:
            return await c.post(
                "/restconf/data/vnet-router:routers",
                auth=AUTH,
                headers=JSON_BODY,
                content=json.dumps({"vnet-router:router": [entry]}),
            )

        assert (await post(router("r1", index=5))).status_code == 201
        r = await post({"name": "r2", "interface": [{"name": "eth0", "network": "nope"}]})
        assert r.status_code == 400
        e = error_of(r)
        assert e["error-tag"] == "invalid-value"
        assert (
            e["error-path"]
            == "/vnet-router:routers/router[name='r2']/interface[name='eth0']/network"
        )
        r = await post(router("r3", "10.1.0.3/24", index=5))
        assert r.status_code == 400
        assert error_of(r)["error-path"] == "/vnet-router:routers/router[name='r3']/index"
        r = await post(router("9bad"))
        assert r.status_code == 400
        assert error_of(r)["error-path"].startswith("/vnet-router:routers/router[name='9bad']")
        assert [x["name"] for x in ds.tree(RUNNING)["vnet-router:routers"]["router"]] == ["r1"]

    run(tmp_path, body)


@pytest.mark.parametrize(
    ("method", "url", "headers", "content", "status", "tag"),
    [
        (
            "POST",
            "/restconf/data/vnet-router:routers",
            JSON_BODY,
            "{not json",
            400,
            "malformed-message",
        ),
        (
            "POST",
            "/restconf/data/vnet-router:routers",
            {"Content-Type": XML},
            "<router>",
            400,
            "malformed-message",
        ),
        (
            "POST",
            "/restconf/data/vnet-router:routers",
            {"Content-Type": "application/x-www-form-urlencoded"},
            "a=b",
            415,
            "invalid-value",
        ),
        (
            "GET",
            "/restconf/data/vnet-router:routers",
            {"Accept": "text/html"},
            None,
            406,
            "invalid-value",
        ),
        ("GET", "/restconf/data/other:routers", {}, None, 400, "unknown-namespace"),
        ("GET", "/restconf/data/vnet-router:routers?depth=0", {}, None, 400, "invalid-value"),
        ("GET", "/restconf/data/vnet-router:routers?content=some", {}, None, 400, "invalid-value"),
        ("GET", "/restconf/data/vnet-router:routers?fields=x", {}, None, 400, "invalid-value"),
        ("DELETE", "/restconf/data", {}, None, 405, "operation-not-supported"),
        (
            "PATCH",
            "/restconf/data/vnet-router:routers",
            {"Content-Type": "application/yang-patch+json"},
            "{}",
            415,
            "invalid-value",
        ),
        (
            "POST",
            "/restconf/data/vnet-router:routers",
            JSON_BODY,
            json.dumps({"other:router": [{"name": "r1"}]}),
            400,
            "unknown-namespace",
        ),
        (
            "POST",
            "/restconf/data/vnet-router:routers",
            JSON_BODY,
            json.dumps({"vnet-router:router": [{"name": "r1", "oper-state": "up"}]}),
            400,
            "invalid-value",
        ),
    ],
)
def test_request_errors(
    tmp_path: Path,
    method: str,
    url: str,
    headers: dict[str, str],
    content: str | None,
    status: int,
    tag: str,
) -> None:
    async def body(c: httpx.AsyncClient, ds: Datastore) -> None:
        r = await c.request(method, url, auth=AUTH, headers=headers, content=content)
        assert r.status_code == status, r.text
        assert error_of(r)["error-tag"] == tag
        assert ds.tree(RUNNING) == NETWORKS

    run(tmp_path, body)


def test_locked_datastore_is_409_in_use(tmp_path: Path) -> None:
    async def body(c: httpx.AsyncClient, ds: Datastore) -> None:
        ds.lock(RUNNING, "42")
        r = await c.post(
            "/restconf/data/vnet-router:routers",
            auth=AUTH,
            headers=JSON_BODY,
            content=json.dumps({"vnet-router:router": [router("r1")]}),
        )
        assert r.status_code == 409 and error_of(r)["error-tag"] == "in-use"

    run(tmp_path, body)


def test_concurrent_edits_are_not_lost(tmp_path: Path) -> None:
    """Twelve POSTs at once: each read-modify-commit must see the others' commits."""

    async def body(c: httpx.AsyncClient, ds: Datastore) -> None:
        async def post(i: int) -> int:
            r = await c.post(
                "/restconf/data/vnet-router:routers",
                auth=AUTH,
                headers=JSON_BODY,
                content=json.dumps({"vnet-router:router": [router(f"r{i}", f"10.1.0.{i}/24")]}),
            )
            return r.status_code

        codes = await asyncio.gather(*(post(i) for i in range(1, 13)))
        assert codes == [201] * 12
        names = sorted(r["name"] for r in ds.tree(RUNNING)["vnet-router:routers"]["router"])
        assert names == sorted(f"r{i}" for i in range(1, 13))

    run(tmp_path, body)


def test_depth_and_nonconfig(tmp_path: Path) -> None:
    async def body(c: httpx.AsyncClient, ds: Datastore) -> None:
        await c.post(
            "/restconf/data/vnet-router:routers",
            auth=AUTH,
            headers=JSON_BODY,
            content=json.dumps({"vnet-router:router": [router("r1")]}),
        )
        r = await c.get("/restconf/data/vnet-router:routers?depth=1", auth=AUTH)
        assert r.json() == {"vnet-router:routers": {}}
        r = await c.get("/restconf/data/vnet-router:routers/router=r1?content=nonconfig", auth=AUTH)
        assert r.json() == {
            "vnet-router:router": [
                {
                    "name": "r1",
                    "oper-state": "running",
                    "interface": [{"name": "eth0", "oper-status": "up"}],
                }
            ]
        }
        r = await c.head("/restconf/data/vnet-router:routers/router=r1", auth=AUTH)
        assert r.status_code == 200 and r.content == b""

    run(tmp_path, body)


def test_too_big_bodies_are_refused_unread(tmp_path: Path) -> None:
    async def body(c: httpx.AsyncClient, ds: Datastore) -> None:
        big = b'{"vnet-router:router": [{"name": "' + b"x" * (2 << 20) + b'"}]}'

        async def chunks():  # no Content-Length: the limit must hold while streaming
            for i in range(0, len(big), 65536):
                yield big[i : i + 65536]

        for content in (big, chunks()):
            r = await c.post(
                "/restconf/data/vnet-router:routers", auth=AUTH, headers=JSON_BODY, content=content
            )
            assert r.status_code == 413, r.text
            assert error_of(r)["error-tag"] == "too-big"

    run(tmp_path, body)


@pytest.mark.parametrize("plain", [True, False])
def test_frontend_serves_in_the_loop_and_closes(tmp_path: Path, plain: bool) -> None:
    """uvicorn as a task of this loop, on an ephemeral loopback port; HTTPS pins the
    certificate it made in the state directory."""
    import ssl

    from vnet.agent.restconf import frontend

    config = AgentConfig.model_validate(
        {
            "state_dir": tmp_path,
            "users": [{"name": "admin", "password": "s3cret"}],
            "ports": {"restconf": 0},
            "restconf_plain_http": plain,
        }
    )

    async def main() -> None:
        ds = NoKernelDatastore(config, kernel_pause=KERNEL_PAUSE)
        fe = await frontend.start(ds, config)
        port = fe.sock.getsockname()[1]
        scheme = "http" if plain else "https"
        verify: Any = True
        if not plain:
            verify = ssl.create_default_context(cafile=str(config.restconf_cert_path))
        async with httpx.AsyncClient(verify=verify) as c:
            r = await c.get(f"{scheme}://127.0.0.1:{port}/restconf", auth=AUTH)
            assert r.status_code == 200, r.text
        assert config.restconf_cert_path.exists() != plain
        await fe.close()
        assert fe.task.done() and fe.sock.fileno() == -1
        ds._kx.shutdown(wait=False)

    asyncio.run(asyncio.wait_for(main(), 30))


def test_openapi_paths_declare_their_parameters() -> None:
    import re

    from vnet.agent.restconf.openapi import document

    doc = document()
    assert doc["openapi"].startswith("3.")
    routers = doc["paths"]["/restconf/data/vnet-router:routers/router={router}"]
    schema = routers["put"]["requestBody"]["content"][JSON]["schema"]
    entry = schema["properties"]["vnet-router:router"]["items"]
    assert entry["required"] == ["name"]
    assert entry["properties"]["admin-state"]["enum"] == ["up", "down"]
    assert entry["properties"]["oper-state"]["readOnly"] is True
    for url, ops in doc["paths"].items():
        wanted = set(re.findall(r"{([^}]+)}", url))
        for method, op in ops.items():
            declared = {p["name"] for p in op.get("parameters", []) if p["in"] == "path"}
            assert declared == wanted, (url, method, declared)
    json.dumps(doc)  # serialisable as served


def test_state_is_detailed_only_for_the_routers_and_the_member_asked_for(
    tmp_path: Path,
) -> None:
    asked: list[tuple[set[str] | None, set[str] | None]] = []

    class Recording(NoKernelDatastore):
        async def state_tree(
            self, detailed: set[str] | None = None, tops: set[str] | None = None
        ) -> dict[str, Any]:
            asked.append((detailed, tops))
            return await super().state_tree()

    config = admin_config(tmp_path)

    async def main() -> None:
        ds = Recording.with_networks(config)
        transport = httpx.ASGITransport(app=create_app(ds, config))
        async with httpx.AsyncClient(transport=transport, base_url="https://agent") as c:
            for url in (
                "/restconf/data/vnet-router:routers/router=r1/interface=eth0",
                "/restconf/data/vnet-router:routers",
                "/restconf/data/vnet-router:virtual-networks",
                "/restconf/data/vnet-router:routers?content=config",
            ):
                await c.get(url, auth=AUTH)
        ds._kx.shutdown(wait=False)

    asyncio.run(main())
    assert asked == [
        ({"r1"}, {"routers"}),
        (None, {"routers"}),
        (set(), {"virtual-networks"}),
    ]
