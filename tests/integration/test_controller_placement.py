"""VRs and networks created through the controller (issue 12, part 4) on a real three-host lab
with agents, on SQLite (and PostgreSQL where the database is the point): a VR without a host is
placed where the rule says (the host whose links have the most free capacity) and runs there
(read back with an independent NETCONF session, pinged from an end host on another host across
the VXLAN); a refused creation changes nothing in the database or on any agent; a tenant
administrator creates only in its own tenant; bad input gets a precise error."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

import pytest
from sqlalchemy.orm import Session

from vnet.controller import inventory
from vnet.controller.errors import AgentRefused, BadRequest, Conflict, Forbidden, NotFound
from vnet.controller.service.core import Service
from vnet.lab.probes import fping
from vnet.model.controller_api import NetworkRequest, RouterInterfaceRequest, RouterRequest

from .conftest import require_tools
from .controller_service_support import (
    ACME,
    BETA,
    PROVIDER,
    Lab,
    close,
    make_service,
    ns,
    run,
)
from .world_support import TemplateDatabases

ROUTERS_FILTER = ("subtree", '<routers xmlns="urn:vnet:yang:vnet-router"/>')
NEW_VR = RouterRequest(
    name="rx",
    interfaces=[RouterInterfaceRequest(network="lan1", ipv4="10.61.1.50/24")],  # type: ignore[arg-type]
)


@pytest.fixture(scope="module")
def lab(service_lab: Lab) -> Lab:
    """The session's triangle, borrowed (conftest.py guards it)."""
    require_tools("fping")
    return service_lab


@pytest.fixture
def url(database_kind: str, service_databases: TemplateDatabases, tmp_path: Path) -> str:
    """A copy of the migrated template with the lab's inventory, on either database."""
    return service_databases.make(database_kind, tmp_path, "place")


async def started(lab: Lab, url: str, **options: object) -> Service:
    service = make_service(lab, url, **options)
    await service.start(background=False)
    return service


def routers_on(lab: Lab, host: str) -> set[str]:
    """The VR names in `host`'s running configuration (independent NETCONF session)."""
    with lab.connect(host) as m:
        data = m.get_config("running", filter=ROUTERS_FILTER).data_ele
    return {
        el.text or ""
        for router in data.iter("{urn:vnet:yang:vnet-router}router")
        for el in router.findall("{urn:vnet:yang:vnet-router}name")
    }


def remove_router(lab: Lab, host: str, name: str) -> None:
    """Take a test's VR off its agent again (the lab is shared by the database params)."""
    with lab.connect(host) as m:
        m.edit_config(
            target="running",
            config=(
                '<config xmlns:nc="urn:ietf:params:xml:ns:netconf:base:1.0">'
                '<routers xmlns="urn:vnet:yang:vnet-router"><router nc:operation="delete">'
                f"<name>{name}</name></router></routers></config>"
            ),
        )


def held_topology(service: Service) -> object:
    with Session(service.db.engine) as session:
        return inventory.read(session).topology


def test_a_vr_without_a_host_goes_where_most_capacity_is_left_and_runs(lab: Lab, url: str) -> None:
    """h2 has two 1 Gbit/s links (h1 and h3 one each plus the 100 Mbit/s h1-h3), so it wins
    although it already holds the most VRs (r2, rb)."""

    async def scenario() -> object:
        service = await started(lab, url)
        try:
            made = await service.create_router(ACME, "acme", NEW_VR)
            listed = {r.name: r.host for r in await service.routers(ACME)}
            return made, listed
        finally:
            await close(service)

    try:
        made, listed = run(scenario())
        assert (made.host, made.tenant, made.networks) == ("h2", "acme", ["lan1"])
        assert listed["rx"] == "h2"
        assert "rx" in routers_on(lab, "h2")
        assert not {"rx"} & (routers_on(lab, "h1") | routers_on(lab, "h3"))
        # pc1 on h1 reaches the new VR on h2 through lan1's VXLAN (pc1 forgets the MAC of
        # the previous database param's VR at this address first)
        subprocess.run(
            ["ip", "-n", ns(lab.name, "pc1"), "neigh", "flush", "to", "10.61.1.50"], check=True
        )
        assert fping(ns(lab.name, "pc1"), "10.61.1.50", count=3, timeout_ms=1000).received > 0
    finally:
        remove_router(lab, "h2", "rx")


def test_a_refused_creation_changes_nothing(lab: Lab, url: str) -> None:
    """h2's candidate is locked by someone else: its agent refuses the VR; and the lab's
    agents refuse networks (the lab provisions them): neither reaches the database."""
    before_hosts = lab.running()

    async def scenario() -> tuple[AgentRefused, AgentRefused]:
        service = await started(lab, url, lock_wait=1.0)
        try:
            before = held_topology(service)
            with (
                lab.connect("h2") as other,
                other.locked("candidate"),
                pytest.raises(AgentRefused) as vr_refused,
            ):
                await service.create_router(ACME, "acme", NEW_VR)
            net = NetworkRequest(name="lan9", vni=609, ipv4="10.61.9.0/24")  # type: ignore[arg-type]
            with pytest.raises(AgentRefused) as net_refused:
                await service.create_network(PROVIDER, "acme", net)
            assert held_topology(service) == before
            assert "rx" not in {r.name for r in await service.routers(PROVIDER)}
            assert "lan9" not in {n.name for n in await service.networks(PROVIDER)}
            return vr_refused.value, net_refused.value
        finally:
            await close(service)

    vr_refused, net_refused = run(scenario())
    assert vr_refused.host == "h2" and vr_refused.body().status == 502
    assert "provisioned by its lab" in net_refused.reason, net_refused.reason
    assert lab.running() == before_hosts


def test_a_tenant_administrator_creates_only_in_its_tenant_and_bad_input_is_precise(
    lab: Lab, url: str
) -> None:
    before_hosts = lab.running()

    async def scenario() -> None:
        service = await started(lab, url)
        try:
            with pytest.raises(Forbidden):
                await service.create_router(BETA, "acme", NEW_VR)
            with pytest.raises(Forbidden):
                await service.create_network(BETA, "acme", NetworkRequest(name="n", vni=700))
            with pytest.raises(NotFound) as other_net:  # acme's lan1 is not beta's
                await service.create_router(BETA, "beta", NEW_VR)
            assert other_net.value.code == "unknown-network", other_net.value.body()
            with pytest.raises(NotFound) as tenant:
                await service.create_router(PROVIDER, "nosuch", NEW_VR)
            assert tenant.value.code == "unknown-tenant"
            with pytest.raises(Conflict) as taken:
                await service.create_router(ACME, "acme", NEW_VR.model_copy(update={"name": "r1"}))
            assert "'r1' is used by a VR" in taken.value.reason
            with pytest.raises(Conflict) as vni:
                await service.create_network(ACME, "acme", NetworkRequest(name="n9", vni=601))
            assert "lan1" in vni.value.reason and vni.value.field == "vni"
            outside = RouterRequest(
                name="ry",
                interfaces=[RouterInterfaceRequest(network="lan1", ipv4="10.99.0.1/24")],  # type: ignore[arg-type]
            )
            with pytest.raises(BadRequest) as bad:
                await service.create_router(ACME, "acme", outside)
            assert "outside 'lan1'" in bad.value.reason, bad.value.reason
            with pytest.raises(NotFound) as host:
                await service.create_router(ACME, "acme", NEW_VR.model_copy(update={"host": "h9"}))
            assert host.value.field == "host"
        finally:
            await close(service)

    run(scenario())
    assert lab.running() == before_hosts


@pytest.mark.both_databases
def test_a_vr_the_agent_lost_is_put_back_at_start(lab: Lab, url: str) -> None:
    """The database is the truth: a VR it holds that its agent does not (the agent rolled a
    creation back after the controller died before confirming) is created again at start."""

    async def create() -> str:
        service = await started(lab, url)
        try:
            return (await service.create_router(ACME, "acme", NEW_VR)).host
        finally:
            await close(service)

    async def restart() -> dict[str, list[str]]:
        service = await started(lab, url)
        try:
            return service.restored
        finally:
            await close(service)

    host = run(create())
    try:
        remove_router(lab, host, "rx")  # what the agent's confirm timeout would have done
        assert "rx" not in routers_on(lab, host)
        assert run(restart()) == {host: ["rx"]}
        assert "rx" in routers_on(lab, host)
        assert run(restart()) == {}  # nothing missing any more: nothing done
    finally:
        remove_router(lab, host, "rx")


@pytest.mark.both_databases
def test_two_requests_for_one_name_make_one_vr_and_the_loser_leaves_nothing(
    lab: Lab, url: str
) -> None:
    """Both pass the checks. On a real network both agents (h1, h3) would commit and the
    database refuse the second (Conflict, its agent goes back); the lab's hosts share one
    kernel, whose namespace names are global, so there the second agent may refuse first
    (AgentRefused). Either way: one VR, in the database and on the agents alike."""
    on_h1 = NEW_VR.model_copy(update={"host": "h1"})
    on_h3 = RouterRequest(
        name="rx",
        host="h3",
        interfaces=[RouterInterfaceRequest(network="lan1", ipv4="10.61.1.51/24")],  # type: ignore[arg-type]
    )

    async def race() -> tuple[list[object], list[str]]:
        service = await started(lab, url)
        try:
            results = await asyncio.gather(
                service.create_router(ACME, "acme", on_h1),
                service.create_router(ACME, "acme", on_h3),
                return_exceptions=True,
            )
            held = [r.host for r in await service.routers(PROVIDER) if r.name == "rx"]
            return results, held
        finally:
            await close(service)

    results, held = run(race())
    try:
        made = [r for r in results if not isinstance(r, BaseException)]
        refused = [r for r in results if isinstance(r, BaseException)]
        assert len(made) == 1 and len(refused) == 1, results
        assert isinstance(refused[0], (Conflict, AgentRefused)), refused
        assert "rx" in refused[0].reason, refused
        winner = made[0].host
        assert held == [winner]
        loser = "h3" if winner == "h1" else "h1"
        assert "rx" in routers_on(lab, winner) and "rx" not in routers_on(lab, loser)
    finally:
        for host in ("h1", "h3"):
            if "rx" in routers_on(lab, host):
                remove_router(lab, host, "rx")


@pytest.mark.both_databases
def test_when_the_database_refuses_after_the_agents_committed_the_agent_goes_back(
    lab: Lab, url: str
) -> None:
    """Two VRs (on h1 and h3) with one address: each passes the checks alone and each agent
    commits; the database takes the first and refuses the second (the address is used by
    then), so the second's agent rolls back before it confirms."""

    def vr(name: str, host: str) -> RouterRequest:
        itf = RouterInterfaceRequest(network="lan1", ipv4="10.61.1.60/24")  # type: ignore[arg-type]
        return RouterRequest(name=name, host=host, interfaces=[itf])

    async def race() -> tuple[list[object], set[str]]:
        service = await started(lab, url)  # agents' lock_wait: 10 s
        try:
            # both requests pass their checks, then wait for the candidates held here
            with lab.connect("h1") as m1, lab.connect("h3") as m3:
                m1.lock("candidate")
                m3.lock("candidate")
                both = asyncio.gather(
                    service.create_router(ACME, "acme", vr("ra", "h1")),
                    service.create_router(ACME, "acme", vr("rc", "h3")),
                    return_exceptions=True,
                )
                await asyncio.sleep(2)
                m1.unlock("candidate")
                m3.unlock("candidate")
                results = await both
            return results, {r.name for r in await service.routers(PROVIDER)}
        finally:
            await close(service)

    results, held = run(race())
    try:
        made = [r for r in results if not isinstance(r, BaseException)]
        refused = [r for r in results if isinstance(r, BaseException)]
        assert len(made) == 1 and len(refused) == 1, results
        assert isinstance(refused[0], Conflict), refused
        assert "10.61.1.60 is already used" in refused[0].reason, refused[0].reason
        winner, loser = ("ra", "rc") if made[0].name == "ra" else ("rc", "ra")
        assert winner in held and loser not in held
        on_agents = routers_on(lab, "h1") | routers_on(lab, "h3")
        assert winner in on_agents and loser not in on_agents
    finally:
        for host, name in (("h1", "ra"), ("h3", "rc")):
            if name in routers_on(lab, host):
                remove_router(lab, host, name)
