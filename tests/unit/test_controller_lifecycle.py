"""Deleting VRs, end hosts, networks and tenants through the service, on hosts in memory
(tests/controller_memory_support.py): what is asserted is read from the hosts' running
configurations and from the database, not from the service's answers alone."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from lxml import etree
from sqlalchemy import select
from sqlalchemy.orm import Session

from tests.controller_memory_support import ACME, BETA, HOSTS, PROVIDER, World, voice, world
from vnet.controller.api import make_app
from vnet.controller.api.auth import create_token
from vnet.controller.db import session_factory
from vnet.controller.db.models import ApiToken, EndHost, Tenant, VirtualNetwork, VirtualRouter
from vnet.controller.errors import AgentRefused, Conflict, Forbidden, InUse, NotFound
from vnet.controller.principal import Principal
from vnet.controller.service.core import Service
from vnet.controller.southbound.memory import Failure, Step
from vnet.controller.ui import make_console
from vnet.model.controller_api import EndHostRequest, NetworkRequest, RouterRequest

V1 = "/api/v1"
RX_LOCATOR = "fc00:1:4::/48"  # acme's fourth VR: rx, after r1, r2, r3


@pytest.fixture
def w(tmp_path: Path) -> World:
    return world(tmp_path)


def names(w: World, table: type) -> set[str]:
    engine = w.engine()
    try:
        with Session(engine) as session:
            return set(session.scalars(select(table.name)))
    finally:
        engine.dispose()


def routes_to(w: World, locator: str) -> dict[str, list[str]]:
    """Host -> the VRs there with a route to `locator`."""
    return {
        h: [vr.name for vr in w.hosts.running(h).routers
            if any(str(r.destination) == locator for r in vr.routes)]
        for h in HOSTS
    }  # fmt: skip


def rx(host: str = "h2") -> RouterRequest:
    itf = {"network": "c12", "ipv4": "10.61.2.40/24", "ipv6": "fd00:61:2::40/64"}
    return RouterRequest(name="rx", host=host, interfaces=[itf])


def test_a_vr_deleted_leaves_no_trace_on_any_host_nor_in_the_database(w: World) -> None:
    async def scenario(svc: Service) -> None:
        await svc.create_router(ACME, "acme", rx())
        assert routes_to(w, RX_LOCATOR) == {"h1": ["r1"], "h2": ["r2"], "h3": ["r3"]}
        gone = await svc.delete_router(ACME, "acme", "rx")
        assert (gone.name, gone.host) == ("rx", "h2")
        assert "rx" not in {v.name for v in await svc.routers(PROVIDER)}
        with pytest.raises(NotFound) as again:  # a second delete: nothing left to delete
            await svc.delete_router(ACME, "acme", "rx")
        assert again.value.code == "unknown-router"

    w.run(scenario)
    assert "rx" not in {vr.name for vr in w.hosts.running("h2").routers}
    assert routes_to(w, RX_LOCATOR) == {h: [] for h in HOSTS}
    assert "rx" not in names(w, VirtualRouter)
    assert all(w.hosts.pending(h) is None for h in HOSTS)


def test_a_vr_a_connection_runs_over_is_refused_naming_it_and_nothing_changes(
    w: World,
) -> None:
    async def scenario(svc: Service) -> InUse:
        await svc.create_connection(ACME, "acme", voice("v", 5201, "20mbit"))
        with pytest.raises(InUse) as refused:
            await svc.delete_router(ACME, "acme", "r3")
        return refused.value

    before = {h: w.hosts.running(h) for h in HOSTS}
    refused = w.run(scenario)
    assert refused.holders == ["connection 'acme/v'"], refused.reason
    assert refused.body().status == 409 and refused.body().holders == refused.holders
    assert {h: w.hosts.running(h).routers for h in HOSTS} == {
        h: hc.routers for h, hc in before.items()
    }
    assert "r3" in names(w, VirtualRouter)


def test_a_vr_whose_removal_would_move_other_locators_is_refused(w: World) -> None:
    """r1 is acme's first VR: without it r2 and r3 would take its number's successors."""

    async def scenario(svc: Service) -> Conflict:
        with pytest.raises(Conflict) as refused:
            await svc.delete_router(ACME, "acme", "r1")
        return refused.value

    refused = w.run(scenario)
    assert refused.code == "would-renumber" and "r2, r3" in refused.reason, refused.reason
    assert "r1" in {vr.name for vr in w.hosts.running("h1").routers}


def test_an_agent_refusing_leaves_every_host_and_the_database_as_they_were(w: World) -> None:
    async def scenario(svc: Service) -> AgentRefused:
        await svc.create_router(ACME, "acme", rx())
        w.hosts.fail("h3", Step.COMMIT, Failure.REFUSE)  # r3's route removal is refused
        with pytest.raises(AgentRefused) as refused:
            await svc.delete_router(ACME, "acme", "rx")
        return refused.value

    refused = w.run(scenario)
    assert refused.host == "h3" and refused.body().status == 502, refused.reason
    assert "rx" in {vr.name for vr in w.hosts.running("h2").routers}
    assert routes_to(w, RX_LOCATOR) == {"h1": ["r1"], "h2": ["r2"], "h3": ["r3"]}
    assert "rx" in names(w, VirtualRouter)
    assert all(w.hosts.pending(h) is None for h in HOSTS)


def test_end_hosts_go_when_no_connection_joins_them(w: World) -> None:
    async def scenario(svc: Service) -> list[str]:
        await svc.create_endhost(
            ACME, "acme", EndHostRequest(name="pc9", host="h1", network="lan1", ipv4="10.61.1.9/24")
        )
        await svc.create_connection(ACME, "acme", voice("v", 5201, "20mbit"))
        with pytest.raises(InUse) as refused:
            await svc.delete_endhost(ACME, "acme", "pc1")
        with pytest.raises(Forbidden):
            await svc.delete_endhost(BETA, "acme", "pc9")
        with pytest.raises(NotFound):  # another tenant's end host is as unknown as none
            await svc.delete_endhost(BETA, "beta", "pc9")
        gone = await svc.delete_endhost(ACME, "acme", "pc9")
        assert gone.name == "pc9"
        return refused.value.holders

    assert w.run(scenario) == ["connection 'acme/v'"]
    assert names(w, EndHost) == {"pc1", "pc3", "qb"}


def test_a_network_goes_from_every_host_once_nothing_is_on_it(w: World) -> None:
    async def scenario(svc: Service) -> list[str]:
        await svc.create_network(ACME, "acme", NetworkRequest(name="lan9", vni=690,
                                                              ipv4="10.61.9.0/24"))  # fmt: skip
        assert all("lan9" in carried(h) for h in HOSTS)
        with pytest.raises(InUse) as refused:
            await svc.delete_network(ACME, "acme", "c12")
        await svc.delete_network(ACME, "acme", "lan9")
        return refused.value.holders

    def carried(host: str) -> set[str]:
        return {n.network.name for n in w.hosts.running(host).networks}

    assert w.run(scenario) == ["VR 'r1'", "VR 'r2'"]
    assert not any("lan9" in carried(h) for h in HOSTS)
    assert "lan9" not in names(w, VirtualNetwork) and "c12" in names(w, VirtualNetwork)


def test_a_tenant_goes_with_its_tokens_once_it_holds_no_network(w: World) -> None:
    async def scenario(svc: Service) -> list[str]:
        await svc.create_tenant(PROVIDER, "gamma")
        await svc.db.write(lambda s: create_token(s, "tenant", "gamma", None))
        with pytest.raises(InUse) as refused:
            await svc.delete_tenant(PROVIDER, "beta")
        with pytest.raises(Forbidden):
            await svc.delete_tenant(BETA, "gamma")
        assert (await svc.delete_tenant(PROVIDER, "gamma")).name == "gamma"
        with pytest.raises(NotFound):
            await svc.delete_tenant(PROVIDER, "gamma")
        return refused.value.holders

    assert w.run(scenario) == ["network 'blan'"]
    assert names(w, Tenant) == {"acme", "beta"}
    engine = w.engine()
    try:
        with Session(engine) as session:
            assert list(session.scalars(select(ApiToken.id))) == []  # gamma's went with it
    finally:
        engine.dispose()


def test_the_api_deletes_in_json_and_xml_and_says_what_holds_a_refused_one(w: World) -> None:
    """DELETE over HTTP on the real service: the deleted object's view (JSON, or XML when
    accepted), 409 with `holders`, 403 for another tenant's token, 404 the second time."""
    service = w.service()
    sessions = session_factory(service.db.engine)
    with sessions.begin() as session:
        acme = create_token(session, "tenant", "acme").token
        beta = create_token(session, "tenant", "beta").token
    as_acme = {"Authorization": f"Bearer {acme}"}
    with TestClient(make_app(service, sessions), raise_server_exceptions=False) as client:
        made = client.post(
            f"{V1}/tenants/acme/routers",
            json=rx().model_dump(mode="json", exclude_none=True),
            headers=as_acme,
        )
        assert made.status_code == 201, made.text
        held = client.delete(f"{V1}/tenants/acme/routers/r1", headers=as_acme)
        other = client.delete(
            f"{V1}/tenants/acme/routers/rx", headers={"Authorization": f"Bearer {beta}"}
        )
        xml = client.delete(
            f"{V1}/tenants/acme/routers/rx", headers={**as_acme, "Accept": "application/xml"}
        )
        again = client.delete(f"{V1}/tenants/acme/routers/rx", headers=as_acme)
        in_use = client.delete(f"{V1}/tenants/acme/networks/lan1", headers=as_acme)
    assert (held.status_code, held.json()["code"]) == (409, "would-renumber"), held.text
    assert other.status_code == 403, other.text
    assert xml.status_code == 200, xml.text
    root = etree.fromstring(xml.content)
    assert (root.tag, root.findtext("name"), root.findtext("host")) == ("RouterView", "rx", "h2")
    assert (again.status_code, again.json()["code"]) == (404, "unknown-router"), again.text
    body = in_use.json()
    assert (in_use.status_code, body["code"]) == (409, "in-use"), in_use.text
    assert body["holders"] == ["VR 'r1'", "end host 'pc1'"], body
    assert "rx" not in {vr.name for vr in w.hosts.running("h2").routers}


def test_the_console_deletes_from_each_table_and_shows_what_holds_a_refused_one(
    w: World,
) -> None:
    """The console's delete forms over the real service (no browser: the HTML it answers)."""
    principals = {"prov": PROVIDER, "acme": ACME}

    async def authenticate(token: str) -> Principal:
        return principals[token]

    service = w.service()
    app = FastAPI()
    app.mount("/ui", make_console(service, authenticate))
    with TestClient(app, base_url="http://testserver", follow_redirects=False) as client:
        assert client.post("/ui/login", data={"token": "acme"}).status_code == 303
        routers = client.get("/ui/routers")
        held = client.post("/ui/networks/acme/c12/delete")
        other = client.post("/ui/tenants/beta/delete")  # a tenant's token deletes no tenant
        client.post("/ui/login", data={"token": "prov"})
        asyncio.run(service.create_tenant(PROVIDER, "gamma"))
        tenant = client.post("/ui/tenants/gamma/delete")
    assert 'aria-label="Delete VR r1"' in routers.text and "rb" not in routers.text
    assert held.status_code == 409 and "in-use" in held.text, held.text
    assert "<li>VR &#39;r1&#39;</li>" in held.text and 'id="networks-table"' in held.text
    assert other.status_code == 403, other.text
    assert tenant.status_code == 200 and "deleted</strong>: tenant gamma" in tenant.text
    assert "gamma" not in names(w, Tenant)
