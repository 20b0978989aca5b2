"""Deletes through the controller's API (HTTP, JSON and XML) over the real Service and the real
agents of the session's three-host triangle (controller_service_support.py), on SQLite (and
PostgreSQL for the refusal): a VR goes from its agent with the routes its tenant's other VRs
had to its locator, in one transaction; a refusing agent leaves every host and the database as
they were; end hosts and tenants go from the database; a network in use is refused naming its
holders; a VR made on an agent directly is listed as unmanaged and adopted. What the agents
hold is read with independent NETCONF sessions (raw ncclient)."""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from vnet.controller.api import make_app
from vnet.controller.api.auth import create_token
from vnet.controller.db import make_engine, session_factory
from vnet.controller.db.models import EndHost, Tenant, VirtualRouter

from .conftest import VNET
from .controller_service_support import Lab, close, make_service
from .world_support import TemplateDatabases

ROUTERS = ("subtree", '<routers xmlns="urn:vnet:yang:vnet-router"/>')
VR = "{urn:vnet:yang:vnet-router}"
RX = {
    "name": "rx",
    "host": "h2",
    "interfaces": [{"network": "c12", "ipv4": "10.61.2.40/24", "ipv6": "fd00:61:2::40/64"}],
}
RX_LOCATOR = "fc00:1:4::/48"  # acme's fourth VR (after r1, r2, r3)
Client = httpx.AsyncClient


@pytest.fixture(scope="module")
def lab(service_lab: Lab) -> Lab:
    """The session's triangle, borrowed (conftest.py guards it)."""
    return service_lab


@pytest.fixture
def url(database_kind: str, service_databases: TemplateDatabases, tmp_path: Path) -> str:
    return service_databases.make(database_kind, tmp_path, "life")


def through_api(lab: Lab, url: str, scenario: Callable[[Client], Awaitable[Any]]) -> Any:
    """`scenario(client)`: an HTTP client of the API over the real Service (as acme's
    administrator unless a request says otherwise); the service closed afterwards."""

    async def go() -> Any:
        service = make_service(lab, url, lock_wait=1.0)
        sessions = session_factory(service.db.engine)
        with sessions.begin() as session:
            token = create_token(session, "provider").token
        app = make_app(service, sessions)
        headers = {"Authorization": f"Bearer {token}"}
        transport = httpx.ASGITransport(app=app)
        try:
            async with Client(transport=transport, base_url="http://ctl/api/v1", headers=headers,
                              timeout=120) as client:  # fmt: skip
                return await scenario(client)
        finally:
            await close(service)

    return asyncio.run(go())


def routers_on(lab: Lab) -> dict[str, dict[str, set[str]]]:
    """Host -> VR -> the destinations of its routes, from each agent's running."""
    out: dict[str, dict[str, set[str]]] = {}
    for host in ("h1", "h2", "h3"):
        with lab.connect(host) as m:
            data = m.get_config("running", filter=ROUTERS).data_ele
        out[host] = {
            router.findtext(f"{VR}name") or "": {
                r.findtext(f"{VR}destination") or "" for r in router.iter(f"{VR}route")
            }
            for router in data.iter(f"{VR}router")
        }
    return out


def names_in(url: str, table: type) -> set[str]:
    engine = make_engine(url)
    try:
        with Session(engine) as session:
            return set(session.scalars(select(table.name)))
    finally:
        engine.dispose()


def with_locator(held: dict[str, dict[str, set[str]]], locator: str = RX_LOCATOR) -> set[str]:
    """The VRs with a route to `locator`."""
    return {vr for routers in held.values() for vr, dst in routers.items() if locator in dst}


def test_a_vr_deleted_through_the_api_goes_from_its_agent_with_the_routes_to_it(
    lab: Lab, url: str
) -> None:
    async def scenario(client: Client) -> tuple[httpx.Response, ...]:
        made = await client.post("/tenants/acme/routers", json=RX)
        assert made.status_code == 201, made.text
        assert with_locator(routers_on(lab)) == {"r1", "r2", "r3"}
        deleted = await client.delete(
            "/tenants/acme/routers/rx", headers={"Accept": "application/xml"}
        )
        again = await client.delete("/tenants/acme/routers/rx")
        return deleted, again

    deleted, again = through_api(lab, url, scenario)
    assert deleted.status_code == 200 and b"<name>rx</name>" in deleted.content, deleted.text
    assert (again.status_code, again.json()["code"]) == (404, "unknown-router"), again.text
    held = routers_on(lab)
    assert "rx" not in held["h2"] and with_locator(held) == set()
    assert "rx" not in names_in(url, VirtualRouter)


@pytest.mark.both_databases
def test_an_agent_that_refuses_a_delete_leaves_every_host_and_the_database_as_they_were(
    lab: Lab, url: str
) -> None:
    """h3's candidate is locked by another session: r3's route removal cannot be made, so
    rx stays on h2 too, and in the database."""

    async def scenario(client: Client) -> httpx.Response:
        made = await client.post("/tenants/acme/routers", json=RX)
        assert made.status_code == 201, made.text
        with lab.connect("h3") as other:
            other.lock("candidate")
            try:
                return await client.delete("/tenants/acme/routers/rx")
            finally:
                other.unlock("candidate")

    try:
        refused = through_api(lab, url, scenario)
        body = refused.json()
        assert (refused.status_code, body["code"], body["host"]) == (502, "agent-refused", "h3")
        held = routers_on(lab)
        assert "rx" in held["h2"] and with_locator(held) == {"r1", "r2", "r3"}
        assert "rx" in names_in(url, VirtualRouter)
    finally:  # the next database param's test makes rx again
        through_api(lab, url, lambda c: c.delete("/tenants/acme/routers/rx"))
    assert "rx" not in routers_on(lab)["h2"]


def test_end_hosts_tenants_and_networks_in_use_through_the_api(lab: Lab, url: str) -> None:
    before = routers_on(lab)

    async def scenario(client: Client) -> dict[str, httpx.Response]:
        assert (await client.post("/tenants", json={"name": "gamma"})).status_code == 201
        pc9 = {"name": "pc9", "host": "h1", "network": "lan1", "ipv4": "10.61.1.9/24"}
        assert (await client.post("/tenants/acme/endhosts", json=pc9)).status_code == 201
        return {
            "net": await client.delete("/tenants/acme/networks/c12"),
            "tenant in use": await client.delete("/tenants/beta"),
            "endhost": await client.delete("/tenants/acme/endhosts/pc9"),
            "tenant": await client.delete("/tenants/gamma"),
        }

    answers = through_api(lab, url, scenario)
    net = answers["net"].json()
    assert (net["code"], net["holders"]) == ("in-use", ["VR 'r1'", "VR 'r2'"]), net
    assert answers["tenant in use"].json()["holders"] == ["network 'blan'"]
    assert answers["endhost"].status_code == 200 and answers["tenant"].status_code == 200
    assert "pc9" not in names_in(url, EndHost) and "gamma" not in names_in(url, Tenant)
    assert routers_on(lab) == before


def test_a_vr_made_on_an_agent_is_reported_and_adopted_through_the_api(lab: Lab, url: str) -> None:
    """`vnet vr create` on h2's agent (the CLI, as an operator would), then the API: listed
    as unmanaged, adopted into acme (its locator routed by the tenant's VRs on every host),
    deleted again through the API."""
    made = subprocess.run(
        [VNET, "vr", "create", "ux", "--lab", lab.name, "--host", "h2",
         "--network", "c12:10.61.2.61/24,fd00:61:2::61/64"],
        capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    assert made.returncode == 0, made.stdout + made.stderr

    async def scenario(client: Client) -> tuple[httpx.Response, ...]:
        listed = await client.get("/hosts/h2/unmanaged")
        clash = await client.post("/tenants/beta/routers/adopt", json={"host": "h2", "name": "ux"})
        adopted = await client.post(
            "/tenants/acme/routers/adopt", json={"host": "h2", "name": "ux"}
        )
        after = await client.get("/hosts/h2/unmanaged")
        return listed, clash, adopted, after

    try:
        listed, clash, adopted, after = through_api(lab, url, scenario)
        assert [u["name"] for u in listed.json()] == ["ux"], listed.text
        assert (clash.status_code, clash.json()["code"]) == (404, "unknown-network"), clash.text
        assert adopted.status_code == 201 and adopted.json()["tenant"] == "acme", adopted.text
        assert after.json() == [] and "ux" in names_in(url, VirtualRouter)
        assert with_locator(routers_on(lab), "fc00:1:4::/48") == {"r1", "r2", "r3"}
    finally:
        through_api(lab, url, lambda c: c.delete("/tenants/acme/routers/ux"))
    assert "ux" not in routers_on(lab)["h2"]
