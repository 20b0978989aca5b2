"""POST /tenants/{tenant}/networks and /routers (issue 12, part 4): JSON and XML bodies,
201 with the view, refusals as ErrorBody. The HTTP layer over a small in-memory service,
then the real Service on a database (no agent reachable: every refusal that comes before
the agents, and a placement with no host to place on). Creation on agents is tested on a
lab in tests/integration/test_controller_placement.py."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from lxml import etree
from sqlalchemy.orm import Session, sessionmaker

from tests.controller_api_support import FakeService, Tokens, make_tokens
from tests.unit.test_controller_api_service import INVENTORY, api, url  # noqa: F401 (fixtures)
from vnet.client.endpoint import Endpoint
from vnet.controller.agents.netconf import NetconfSouthbound
from vnet.controller.api import make_app
from vnet.controller.db import make_engine, session_factory
from vnet.controller.principal import Principal
from vnet.controller.server import prepare_database
from vnet.controller.service.core import Service
from vnet.model import build_topology
from vnet.model.controller_api import (
    NetworkRequest,
    NetworkView,
    RouterRequest,
    RouterView,
)
from vnet.model.controller_config import AgentAccess, ControllerConfig

V1 = "/api/v1"
XML = "application/xml"
VR = {"name": "rx", "interfaces": [{"network": "lan1", "ipv4": "10.61.1.50/24"}]}


@dataclass
class InventoryFake(FakeService):
    """FakeService that also creates: records the requests, places VRs on h2."""

    made: list[Any] = field(default_factory=list)

    async def create_router(
        self, who: Principal, tenant: str, request: RouterRequest
    ) -> RouterView:
        who.require_tenant(tenant)
        self._known_tenant(tenant)
        self.made.append(request)
        nets = [i.network for i in request.interfaces]
        return RouterView(
            tenant=tenant, name=request.name, host=request.host or "h2", networks=nets
        )

    async def create_network(
        self, who: Principal, tenant: str, request: NetworkRequest
    ) -> NetworkView:
        who.require_tenant(tenant)
        self._known_tenant(tenant)
        self.made.append(request)
        return NetworkView(tenant=tenant, name=request.name, vni=request.vni)


@pytest.fixture
def fake(
    tmp_path: Path, migrated: Callable[[Path], str]
) -> Iterator[tuple[TestClient, Tokens, InventoryFake]]:
    db = migrated(tmp_path)
    engine = make_engine(db)
    sessions: sessionmaker[Session] = session_factory(engine)
    service = InventoryFake()
    with TestClient(make_app(service, sessions), raise_server_exceptions=False) as client:
        yield client, make_tokens(sessions), service
    engine.dispose()


def bearer(token: str, **more: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", **more}


def test_json_router_and_network_are_201_with_their_views(fake: Any) -> None:
    client, tokens, service = fake
    r = client.post(f"{V1}/tenants/acme/routers", json=VR, headers=bearer(tokens.acme))
    assert r.status_code == 201, r.text
    assert r.json() == {"tenant": "acme", "name": "rx", "host": "h2", "networks": ["lan1"]}
    assert "api;dur=" in r.headers["Server-Timing"]
    net = {"name": "lan9", "vni": 609, "ipv4": "10.61.9.0/24", "bandwidth": "20mbit"}
    r = client.post(f"{V1}/tenants/acme/networks", json=net, headers=bearer(tokens.provider))
    assert r.status_code == 201, r.text
    assert (r.json()["name"], r.json()["vni"]) == ("lan9", 609)
    assert service.made[1].bandwidth == 20_000_000


def test_xml_router_request_and_answer(fake: Any) -> None:
    client, tokens, service = fake
    body = (
        b"<RouterRequest><name>rx</name>"
        b"<interfaces><network>lan1</network><ipv4>10.61.1.50/24</ipv4></interfaces>"
        b"<interfaces><network>c13</network><ipv6>fd00:61:5::50/64</ipv6></interfaces>"
        b"</RouterRequest>"
    )
    headers = bearer(tokens.acme, **{"Content-Type": XML, "Accept": XML})
    r = client.post(f"{V1}/tenants/acme/routers", content=body, headers=headers)
    assert r.status_code == 201, r.text
    root = etree.fromstring(r.content)
    assert root.tag == "RouterView" and root.findtext("host") == "h2"
    assert [n.text for n in root.findall("networks")] == ["lan1", "c13"]
    sent = service.made[0]
    assert sent.host is None and str(sent.interfaces[1].ipv6) == "fd00:61:5::50/64"


def test_bad_bodies_and_other_tenants_are_refused(fake: Any) -> None:
    client, tokens, service = fake
    r = client.post(f"{V1}/tenants/beta/routers", json=VR, headers=bearer(tokens.acme))
    assert r.status_code == 403 and r.json()["code"] == "forbidden"
    r = client.post(
        f"{V1}/tenants/acme/routers", json={**VR, "interfaces": []}, headers=bearer(tokens.acme)
    )
    assert r.status_code == 422 and "interfaces" in (r.json()["field"] or ""), r.json()
    net = {"name": "n", "vni": 0}
    r = client.post(f"{V1}/tenants/acme/networks", json=net, headers=bearer(tokens.acme))
    assert r.status_code == 422 and r.json()["field"] == "vni", r.json()
    assert service.made == []


# -- the real Service, no agent reachable ----------------------------------------------------
def test_real_service_refusals_are_precise_and_change_nothing(api: Any) -> None:  # noqa: F811
    client, tokens, _ = api
    routers = client.get(f"{V1}/routers", headers=bearer(tokens.provider)).json()
    cases = [
        (tokens.beta, "beta", VR, 404, "unknown-network", "interfaces[0].network"),
        (tokens.acme, "acme", {**VR, "name": "r1"}, 409, "conflict", "name"),
        (tokens.acme, "acme", {**VR, "host": "h9"}, 404, "unknown-host", "host"),
        (
            tokens.acme,
            "acme",
            {**VR, "interfaces": [{"network": "lan1", "ipv4": "10.99.0.1/24"}]},
            400,
            "bad-request",
            "interfaces",
        ),
        # no agent: nowhere to place it
        (tokens.acme, "acme", VR, 409, "conflict", "host"),
    ]
    for token, tenant, body, status, code, where in cases:
        r = client.post(f"{V1}/tenants/{tenant}/routers", json=body, headers=bearer(token))
        got = r.json()
        assert (r.status_code, got["code"], got["field"]) == (status, code, where), got
    r = client.post(
        f"{V1}/tenants/acme/networks",
        content=b"<NetworkRequest><name>n9</name><vni>601</vni></NetworkRequest>",
        headers=bearer(tokens.acme, **{"Content-Type": XML, "Accept": XML}),
    )
    root = etree.fromstring(r.content)
    assert r.status_code == 409 and root.findtext("field") == "vni"
    assert "lan1" in (root.findtext("reason") or "")
    assert client.get(f"{V1}/routers", headers=bearer(tokens.provider)).json() == routers


def test_real_service_network_without_carriers_is_held_and_listed(api: Any) -> None:  # noqa: F811
    """No host has an agent here, so no agent is asked: the database alone takes it."""
    client, tokens, _ = api
    body = {"name": "lan9", "vni": 609, "ipv4": "10.61.9.0/24", "bandwidth": "20mbit"}
    r = client.post(f"{V1}/tenants/acme/networks", json=body, headers=bearer(tokens.acme))
    assert r.status_code == 201, r.text
    assert (r.json()["tenant"], r.json()["name"], r.json()["vni"]) == ("acme", "lan9", 609)
    listed = client.get(f"{V1}/networks", headers=bearer(tokens.acme)).json()
    assert [n["name"] for n in listed][-1] == "lan9"
    again = client.post(f"{V1}/tenants/acme/networks", json=body, headers=bearer(tokens.acme))
    assert again.status_code == 409 and again.json()["field"] == "name"
    beta = client.get(f"{V1}/networks", headers=bearer(tokens.beta)).json()
    assert "lan9" not in {n["name"] for n in beta}


def test_a_network_of_an_undeclared_tenant_is_409_before_any_agent(api: Any) -> None:  # noqa: F811
    """The inventory file declares acme and beta; gamma is made through the API. The model
    refuses a network of an undeclared tenant beside declared ones (a typo, in a file): that
    is a conflict with the inventory, said before any agent is asked (was a 400 naming
    `networks[4].tenant`, a place the client never wrote)."""
    client, tokens, _ = api
    r = client.post(f"{V1}/tenants", json={"name": "gamma"}, headers=bearer(tokens.provider))
    assert r.status_code == 201, r.text
    body = {"name": "g1", "vni": 777, "ipv4": "10.77.0.0/24"}
    r = client.post(f"{V1}/tenants/gamma/networks", json=body, headers=bearer(tokens.provider))
    got = r.json()
    assert (r.status_code, got["code"], got["field"]) == (409, "undeclared-tenant", "tenant")


def test_a_network_on_hosts_a_lab_provisions_is_409_before_any_agent(
    url: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    """The lab's agents refuse network edits ("provisioned by its lab"); the controller's
    configuration says so (provision_networks: false), and the controller refuses first. The
    agent's address is unreachable: asking it would have been a 502, not this 409."""
    agents = [
        AgentAccess(host="h1", address="192.0.2.1", provision_networks=False),  # TEST-NET-1
        AgentAccess(host="h2", address="192.0.2.2", provision_networks=False),
    ]
    config = ControllerConfig(state_dir=tmp_path / "state", database=url, agents=agents)
    engine = prepare_database(config, build_topology(INVENTORY))
    service = Service(
        config, engine, NetconfSouthbound({a.host: Endpoint(a.address) for a in agents})
    )
    token = config.provider_token_path.read_text().strip()
    try:
        with TestClient(make_app(service, session_factory(engine), config)) as client:
            for body in ({"name": "n5", "vni": 705}, {"name": "n6", "vni": 706, "hosts": ["h2"]}):
                r = client.post(f"{V1}/tenants/acme/networks", json=body, headers=bearer(token))
                got = r.json()
                assert (r.status_code, got["code"], got["field"]) == (
                    409,
                    "provisioned-by-lab",
                    "hosts",
                ), got
            listed = client.get(f"{V1}/networks", headers=bearer(token)).json()
            assert {"n5", "n6"}.isdisjoint(n["name"] for n in listed)
    finally:
        engine.dispose()


def test_real_service_end_host_is_held_listed_and_refused_precisely(api: Any) -> None:  # noqa: F811
    """An end host is the tenant's machine: the database alone holds it (no agent is asked),
    and connections may then name it."""
    client, tokens, _ = api
    body = {"name": "pc9", "host": "h2", "network": "lan1", "ipv4": "10.61.1.9/24"}
    before = client.get(f"{V1}/endhosts", headers=bearer(tokens.provider)).json()
    cases = [
        (tokens.beta, "beta", body, 404, "unknown-network", "network"),
        (tokens.acme, "acme", {**body, "host": "h9"}, 404, "unknown-host", "host"),
        (tokens.acme, "acme", {**body, "name": "r1"}, 409, "conflict", "name"),
        (tokens.acme, "acme", {**body, "ipv4": "10.99.0.9/24"}, 400, "bad-request", "name"),
        (tokens.acme, "beta", body, 403, "forbidden", None),
    ]
    for token, tenant, ask, status, code, where in cases:
        r = client.post(f"{V1}/tenants/{tenant}/endhosts", json=ask, headers=bearer(token))
        got = r.json()
        assert (r.status_code, got["code"], got["field"]) == (status, code, where), got
    assert client.get(f"{V1}/endhosts", headers=bearer(tokens.provider)).json() == before
    r = client.post(f"{V1}/tenants/acme/endhosts", json=body, headers=bearer(tokens.acme))
    assert r.status_code == 201, r.text
    assert r.json() == {
        "tenant": "acme", "name": "pc9", "host": "h2", "network": "lan1",
        "addresses": ["10.61.1.9"],
    }  # fmt: skip
    listed = client.get(f"{V1}/endhosts", headers=bearer(tokens.acme)).json()
    assert listed[-1]["name"] == "pc9"
    again = client.post(f"{V1}/tenants/acme/endhosts", json=body, headers=bearer(tokens.acme))
    assert again.status_code == 409 and again.json()["field"] == "name"
