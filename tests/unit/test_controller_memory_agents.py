"""A host added through the service with its agent (`HostRequest.agent`), on hosts in
memory: the agent is reached at once (reconciled, a VR placed there lands on it), kept in
the host's row and reached again by a service that starts later; bad access is refused
before anything changes. Asserted from the hosts in memory and the database."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError
from sqlalchemy import select
from sqlalchemy.orm import Session

from tests.controller_memory_support import ACME, PROVIDER, World, world
from tests.controller_topology_support import triangle
from vnet.controller.db import make_engine
from vnet.controller.db.models import Host
from vnet.controller.errors import Conflict, ServiceError
from vnet.controller.service.core import Service
from vnet.controller.southbound.memory import MemorySouthbound
from vnet.model.controller_api import (
    AgentRequest,
    HostRequest,
    LinkRequest,
    NetworkRequest,
    RouterRequest,
)
from vnet.model.controller_config import AgentAccess

# an ed25519 public key's base64, as `vnet agent hostkey` prints it (any well-formed one)
HOSTKEY = "AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"
H4 = AgentRequest(address="192.0.2.4", hostkey=HOSTKEY, password_file="h4.password")


def given(**changed: object) -> AgentRequest:
    return H4.model_copy(update=changed)


@pytest.fixture
def w(tmp_path: Path) -> World:
    return world(tmp_path)


def settings(w: World) -> dict[str, object]:
    secrets = w.state / "secrets"
    secrets.mkdir(exist_ok=True)
    (secrets / "h4.password").write_text("s3cret\n")
    return {"agent_secrets_dir": secrets}


def stored_access(w: World, host: str) -> dict[str, object] | None:
    engine = make_engine(w.url)
    try:
        with Session(engine) as session:
            return session.scalar(select(Host.agent_access).where(Host.name == host))
    finally:
        engine.dispose()


N4 = NetworkRequest(name="n4", vni=699, ipv4="10.69.0.0/24", hosts=["h3", "h4"])


def rx(host: str) -> RouterRequest:
    return RouterRequest(
        name="rx", host=host, interfaces=[{"network": "n4", "ipv4": "10.69.0.4/24"}]
    )


def test_a_host_added_with_its_agent_takes_a_vr_at_once(w: World) -> None:
    async def scenario(svc: Service) -> None:
        await svc.add_host(PROVIDER, HostRequest(name="h4"))
        await svc.add_link(PROVIDER, LinkRequest(a="h3", b="h4", rate="1gbit"))
        with pytest.raises(ServiceError) as nowhere:  # no agent yet: nothing can go there
            await svc.create_network(ACME, "acme", N4)
        assert "no agent" in nowhere.value.reason and "h4" in nowhere.value.reason
        view, added = await svc.add_host(PROVIDER, HostRequest(name="h4", agent=H4))
        assert (view.agent, view.reachable, added) == ("192.0.2.4:830", True, True)
        again, added = await svc.add_host(PROVIDER, HostRequest(name="h4", agent=H4))
        assert (again.agent, added) == ("192.0.2.4:830", False)  # idempotent
        await svc.create_network(ACME, "acme", N4)
        made = await svc.create_router(ACME, "acme", rx("h4"))
        assert made.host == "h4"
        shown = {h.name: h.agent for h in await svc.hosts(PROVIDER)}
        assert shown["h4"] == "192.0.2.4:830"
        # what follows the hosts and links learnt of them (no restart)
        assert svc.health is not None and svc.poller is not None and svc.watcher is not None
        assert "h4" in svc.health.hosts and "h4" in svc.watcher.hosts
        assert svc.health.links["h3-h4"] == svc.poller.links["h3-h4"] == ("h3", "h4")
        assert svc.poller.arcs["h4"] == {"ul-h3": ("h3-h4", False)}
        await svc.remove_host(PROVIDER, "h4")
        assert "h4" not in svc.health.hosts and "h4" not in svc.watcher.hosts
        assert "h3-h4" not in svc.poller.links

    w.run(scenario, settings=settings(w))
    assert "rx" in {vr.name for vr in w.hosts.running("h4").routers}
    kept = stored_access(w, "h4")
    assert kept is not None and kept["address"] == "192.0.2.4"
    assert kept["password_file"] == str((w.state / "secrets" / "h4.password").resolve())
    assert "s3cret" not in str(kept)  # the secret's file, never the secret


def test_a_service_started_later_reaches_the_agents_added_before(w: World) -> None:
    async def add(svc: Service) -> None:
        await svc.add_host(PROVIDER, HostRequest(name="h4", agent=H4))

    w.run(add, settings=settings(w))
    w.hosts = MemorySouthbound.of_topology(triangle())  # a new process: h1-h3 only
    assert "h4" not in w.hosts.hosts

    async def restarted(svc: Service) -> list[tuple[str, str]]:
        return [(h.name, h.agent) for h in await svc.hosts(PROVIDER)]

    shown = w.run(restarted, settings=settings(w))
    assert ("h4", "192.0.2.4:830") in shown
    assert "h4" in w.hosts.hosts


@pytest.mark.parametrize(
    ("agent", "status", "code", "field"),
    [
        (given(hostkey=None), 409, "hostkey-required", "agent.hostkey"),
        (given(password_file="missing"), 404, "unknown-secret", "agent.password_file"),
        (given(key_file="outside"), 409, "secret-outside", "agent.key_file"),
    ],
)
def test_an_agent_that_cannot_be_used_is_refused_and_nothing_changes(
    w: World, agent: AgentRequest, status: int, code: str, field: str
) -> None:
    config = settings(w)
    (config["agent_secrets_dir"] / "outside").symlink_to("/etc/hostname")  # type: ignore[operator]

    async def scenario(svc: Service) -> ServiceError:
        with pytest.raises(ServiceError) as refused:
            await svc.add_host(PROVIDER, HostRequest(name="h4", agent=agent))
        assert "h4" not in {h.name for h in await svc.hosts(PROVIDER)}
        return refused.value

    refused = w.run(scenario, settings=config)
    assert (refused.status, refused.code, refused.field) == (status, code, field)
    assert "h4" not in w.hosts.hosts


@pytest.mark.parametrize(
    "fields",
    [
        {"password_file": "/etc/shadow"},
        {"key_file": ".."},
        {"hostkey": "not-a-key"},
        {"address": "-x"},
        {"namespace": "../x"},
    ],
)
def test_an_agent_request_names_only_files_of_the_secrets_directory(fields: dict[str, str]) -> None:
    with pytest.raises(ValidationError):
        AgentRequest(**{"address": "192.0.2.4", **fields})


def test_an_agent_the_configuration_names_or_one_given_before_does_not_change(w: World) -> None:
    configured = AgentAccess(host="h3", address="192.0.2.3", hostkey=HOSTKEY)

    async def scenario(svc: Service) -> list[str]:
        codes = []
        for host, agent in (
            ("h3", H4),
            ("h4", H4),
            ("h4", H4.model_copy(update={"address": "192.0.2.9"})),
        ):
            try:
                await svc.add_host(PROVIDER, HostRequest(name=host, agent=agent))
            except Conflict as err:
                assert err.field == "agent"
                codes.append(err.code)
        return codes

    codes = w.run(scenario, settings={**settings(w), "agents": [configured]})
    assert codes == ["agent-configured", "agent-exists"]
    assert (stored_access(w, "h3"), stored_access(w, "h4")["address"]) == (None, "192.0.2.4")  # type: ignore[index]


@pytest.mark.parametrize(
    ("ipv4", "ipv6", "family"),
    [("0.0.0.0/0", None, "ipv4"), ("10.61.1.128/25", None, "ipv4"), (None, "::/0", "ipv6")],
)
def test_a_subnet_another_network_of_the_tenant_holds_is_a_conflict(
    w: World, ipv4: str | None, ipv6: str | None, family: str
) -> None:
    """409 subnet-in-use, as a name or a VNI in use (the same body fits in another tenant),
    naming the network that holds it; nothing changes (schemathesis sent 0.0.0.0/0 and got
    a 400, which says the request itself is malformed)."""
    request = NetworkRequest(name="n9", vni=690, ipv4=ipv4, ipv6=ipv6, hosts=["h1"])

    async def scenario(svc: Service) -> ServiceError:
        with pytest.raises(ServiceError) as refused:
            await svc.create_network(ACME, "acme", request)
        assert all(n.name != "n9" for n in (await svc.inventory()).topology.networks)
        return refused.value

    refused = w.run(scenario)
    assert (refused.status, refused.code, refused.field) == (409, "subnet-in-use", family)
    assert "of network 'lan1' in tenant 'acme'" in refused.reason, refused.reason
