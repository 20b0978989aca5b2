"""VRs made on an agent directly (not through the controller), on hosts in memory: the
controller reports them (the host's view after reconciliation, the unmanaged list read from
the agent now) and adopts one into a tenant when it agrees with the inventory, else refuses
with the reason and changes nothing. Asserted from the hosts and the database."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from tests.controller_memory_support import ACME, HOSTS, PROVIDER, World, world
from tests.unit.test_controller_lifecycle import names
from vnet.controller.db.models import VirtualRouter as RouterRow
from vnet.controller.errors import Conflict, Forbidden, NotFound
from vnet.controller.principal import Principal
from vnet.controller.service.core import Service
from vnet.controller.ui import make_console
from vnet.model.controller_api import AdoptRequest
from vnet.model.topology import Interface, VirtualRouter

UX_LOCATOR = "fc00:1:4::/48"  # acme's fourth VR once adopted (after r1, r2, r3)


def made_on_the_agent(w: World, host: str, name: str, network: str, ip: str, k: int) -> None:
    """A VR the agent holds that the controller never asked for (`vnet vr create`)."""
    hc = w.hosts.running(host)
    prefix6 = {"c12": "fd00:61:2", "blan": "fd00:62:1"}[network]
    itf = Interface(network=network, ipv4=f"{ip}/24", ipv6=f"{prefix6}::{60 + k}/64")  # type: ignore[arg-type]
    vr = VirtualRouter(name=name, host=host, index=40 + k, interfaces=[itf])
    w.hosts.set_running(host, hc.model_copy(update={"routers": [*hc.routers, vr]}))


@pytest.fixture
def w(tmp_path: Path) -> World:
    return world(tmp_path)


def test_a_vr_made_on_an_agent_is_reported_and_adopted_with_its_locator_routes(
    w: World,
) -> None:
    made_on_the_agent(w, "h2", "ux", "c12", "10.61.2.60", 1)

    async def scenario(svc: Service) -> tuple[list[str], list[str], list[str]]:
        seen = {h.name: h.unmanaged for h in await svc.hosts(PROVIDER)}
        listed = [u.name for u in await svc.unmanaged_routers(PROVIDER, "h2")]
        adopted = await svc.adopt_router(PROVIDER, "acme", AdoptRequest(host="h2", name="ux"))
        assert (adopted.tenant, adopted.host, adopted.networks) == ("acme", "h2", ["c12"])
        after = [u.name for u in await svc.unmanaged_routers(PROVIDER, "h2")]
        assert {h.name: h.unmanaged for h in await svc.hosts(PROVIDER)}["h2"] == []
        assert "ux" in {v.name for v in await svc.routers(ACME)}
        return seen["h2"], listed, after

    seen, listed, after = w.run(scenario)
    assert (seen, listed, after) == (["ux"], ["ux"], [])
    assert "ux" in names(w, RouterRow)
    routed = {
        vr.name
        for h in HOSTS
        for vr in w.hosts.running(h).routers
        if any(str(r.destination) == UX_LOCATOR for r in vr.routes)
    }
    assert routed == {"r1", "r2", "r3"}  # the tenant's VRs reach its locator now


@pytest.mark.parametrize(
    ("name", "network", "ip", "tenant", "refusal", "words"),
    [
        ("pc1", "c12", "10.61.2.61", "acme", Conflict, "used by a end host"),
        ("ub", "blan", "10.62.1.61", "acme", NotFound, "has no network 'blan'"),
        ("uc", "c12", "10.61.2.1", "acme", Conflict, "10.61.2.1"),
        ("ud", "c12", "10.61.2.62", "nobody", NotFound, "unknown tenant"),
    ],
)
def test_an_adoption_that_disagrees_with_the_inventory_is_refused_and_changes_nothing(
    w: World,
    name: str,
    network: str,
    ip: str,
    tenant: str,
    refusal: type[Exception],
    words: str,
) -> None:
    made_on_the_agent(w, "h2", name, network, ip, 2)
    before = {h: w.hosts.running(h) for h in HOSTS}

    async def scenario(svc: Service) -> Exception:
        with pytest.raises(Forbidden):
            await svc.adopt_router(ACME, "acme", AdoptRequest(host="h2", name=name))
        with pytest.raises(refusal) as refused:
            await svc.adopt_router(PROVIDER, tenant, AdoptRequest(host="h2", name=name))
        return refused.value

    refused = w.run(scenario)
    assert words in str(refused), refused
    assert {h: w.hosts.running(h) for h in HOSTS} == before
    assert name not in names(w, RouterRow)


def test_the_console_lists_unmanaged_vrs_to_the_provider_and_adopts_one(w: World) -> None:
    made_on_the_agent(w, "h2", "ux", "c12", "10.61.2.60", 1)
    principals = {"prov": PROVIDER, "acme": ACME}

    async def authenticate(token: str) -> Principal:
        return principals[token]

    app = FastAPI()
    app.mount("/ui", make_console(w.service(), authenticate))
    with TestClient(app, base_url="http://testserver", follow_redirects=False) as client:
        client.post("/ui/login", data={"token": "acme"})
        tenant_page = client.get("/ui/routers")
        client.post("/ui/login", data={"token": "prov"})
        provider_page = client.get("/ui/routers")
        wrong = client.post(
            "/ui/routers/adopt", data={"host": "h2", "name": "ux", "tenant": "beta"}
        )
        adopted = client.post(
            "/ui/routers/adopt", data={"host": "h2", "name": "ux", "tenant": "acme"}
        )
    assert "unmanaged-table" not in tenant_page.text  # such a VR is no tenant's to see
    assert 'aria-label="Adopt VR ux"' in provider_page.text
    assert wrong.status_code == 404 and "has no network" in wrong.text, wrong.text
    assert adopted.status_code == 200 and "adopted: VR</strong> ux" in adopted.text, adopted.text
    assert "unmanaged-table" not in adopted.text and "ux" in names(w, RouterRow)
