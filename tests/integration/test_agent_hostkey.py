"""Pinning an agent's SSH host key: `vnet agent hostkey` prints the key the agent serves
(what the controller's agents[].hostkey takes), a wrong pin is refused with what to do, and
trust on first use, when chosen, keeps the key first seen and refuses a different one after."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import asyncssh
import pytest

from vnet.client import AuthError, Endpoint, connect_manager
from vnet.client.hostkeys import entry_name
from vnet.tools.sshkeys import key_base64

from .agent_support import AgentUnderTest, running_agent
from .conftest import VNET


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AgentUnderTest]:
    with running_agent(tmp_path_factory.mktemp("hostkey"), frontends="netconf") as a:
        yield a


def endpoint(a: AgentUnderTest, **kw: object) -> Endpoint:
    return Endpoint(a.address, a.netconf_port, a.user, a.password, a.namespace, timeout=10, **kw)  # type: ignore[arg-type]


def printed_key(a: AgentUnderTest) -> str:
    argv = [VNET, "agent", "hostkey", "--config", str(a.state_dir / "agent.yaml")]
    done = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=60)
    assert done.stdout.startswith("ssh-ed25519 AAAA") and len(done.stdout.split()) == 2, done
    return done.stdout.strip()


def other_key() -> str:
    return asyncssh.generate_private_key("ssh-ed25519").export_public_key().decode().strip()


def test_the_printed_key_is_the_one_served_and_a_wrong_pin_is_refused(
    agent: AgentUnderTest,
) -> None:
    pinned = key_base64(printed_key(agent))
    with connect_manager(endpoint(agent, hostkey=pinned)) as m:
        assert m.connected
    with pytest.raises(AuthError, match=r"not the one pinned.*vnet agent hostkey"):
        connect_manager(endpoint(agent, hostkey=key_base64(other_key())))


def test_trust_on_first_use_keeps_the_first_key_and_refuses_another(
    agent: AgentUnderTest, tmp_path: Path
) -> None:
    known = tmp_path / "agents.known_hosts"
    ep = endpoint(agent, known_hosts=str(known))
    with connect_manager(ep) as m:
        assert m.connected
    kind, key = printed_key(agent).split()
    assert known.read_text() == f"{entry_name(ep)} {kind} {key}\n"
    assert known.stat().st_mode & 0o777 == 0o600
    with connect_manager(ep) as m:  # the kept key, pinned
        assert m.connected
    known.write_text(f"{entry_name(ep)} {other_key()}\n")  # as if the agent's key changed
    with pytest.raises(AuthError, match="not the one pinned"):
        connect_manager(ep)
