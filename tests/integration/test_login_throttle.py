"""Password guessing against a real agent is throttled per source and user (SSH with
ncclient, RESTCONF with curl), logged with the source, and another user's right
password still works at once; the agent's keys are private files."""

from __future__ import annotations

import stat
from collections.abc import Iterator

import pytest
from ncclient.transport.errors import AuthenticationError

from vnet.lab.sandbox import HostSandbox, SandboxAgent
from vnet.tools import processes

from .agent_support import netconf_connect
from .conftest import require_tools, unique_lab

PORTS = {"netconf": 8832, "restconf": 8445}
USERS = [{"name": "admin", "password": "adm1n-pw"}, {"name": "carol", "password": "car0l-pw"}]
GUESSES = 8  # more than the free failures (5)


@pytest.fixture(scope="module")
def agent() -> Iterator[SandboxAgent]:
    require_tools("curl")
    host = HostSandbox(scope=unique_lab())
    sandbox = SandboxAgent(host, {"ports": PORTS, "users": USERS})
    try:
        host.create()
        sandbox.start("netconf,restconf")
        yield sandbox
    finally:
        sandbox.stop(grace=5)
        problems = host.cleanup()
        assert not problems, f"the test left things behind: {problems}"


def _status(a: SandboxAgent, user: str, password: str) -> int:
    argv = ["curl", "-sk", "-o", "/dev/null", "-w", "%{http_code}", "-u", f"{user}:{password}"]
    argv.append(f"https://127.0.0.1:{PORTS['restconf']}/restconf/data/vnet-router:routers")
    return int(processes.run(a.host.namespace, argv, timeout=30).stdout)


def _ssh(a: SandboxAgent, user: str, password: str) -> bool:
    try:
        netconf_connect(
            a.host.namespace, "127.0.0.1", PORTS["netconf"], user, password
        ).close_session()
    except AuthenticationError:
        return False
    return True


def test_restconf_guessing_is_throttled(agent: SandboxAgent) -> None:
    statuses = [_status(agent, "carol", f"guess{n}") for n in range(GUESSES)]
    assert statuses[:5] == [401] * 5, statuses
    assert 429 in statuses[5:], statuses
    assert _status(agent, "carol", "car0l-pw") == 429  # the right password must wait too
    assert _status(agent, "admin", "adm1n-pw") in (200, 404)  # another user: at once
    log = agent.log.read_text()
    assert "RESTCONF: failed login for user 'carol' from 127.0.0.1" in log


def test_ssh_guessing_is_throttled(agent: SandboxAgent) -> None:
    results = [_ssh(agent, "carol", f"guess{n}") for n in range(GUESSES)]
    assert results == [False] * GUESSES
    assert not _ssh(agent, "carol", "car0l-pw")  # refused while throttled
    assert _ssh(agent, "admin", "adm1n-pw")  # another user: at once
    log = agent.log.read_text()
    assert "NETCONF/SSH: failed login for user 'carol' from 127.0.0.1" in log
    assert "NETCONF/SSH: login for user 'carol' from 127.0.0.1 refused" in log


def test_keys_are_private(agent: SandboxAgent) -> None:
    for name in ("ssh_host_ed25519_key", "restconf-key.pem"):
        paths = list(agent.state_dir.glob(name))
        assert paths, f"{name} not in {sorted(p.name for p in agent.state_dir.iterdir())}"
        assert stat.S_IMODE(paths[0].stat().st_mode) == 0o600
