"""NACM over SNMP (Net-SNMP tools): an SNMPv3 user named like a user of the agent is
that user for NACM (a tenant administrator walks only its VRs and cannot create one
on another tenant's network); other v3 users and communities keep their VACM view.
Wrong SNMPv3 keys are throttled per source and user, other users unaffected."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import pytest

from vnet.lab.sandbox import HostSandbox, SandboxAgent
from vnet.model.mib import oids
from vnet.tools import processes

from .agent_support import netconf_connect
from .conftest import require_tools, unique_lab
from .snmp_support import d, if_col, v3, values, vr_col

NS = "urn:vnet:yang:vnet-router"
PORTS = {"netconf": 8833, "restconf": 8446, "snmp": 1161}
USERS = [
    {"name": "admin", "password": "adm1n-pw"},
    {"name": "alice", "password": "al1ce-pw", "tenant": "A"},
]
SNMP = {
    "users": [
        {"name": "alice", "auth_key": "aliceauth", "priv_key": "alicepriv"},
        {"name": "ops", "auth_key": "opsauth1", "priv_key": "opspriv1"},
    ]
}
ALICE = v3("alice", "aliceauth", "alicepriv")
OPS = v3("ops", "opsauth1", "opspriv1")
SETUP = f"""<config><virtual-networks xmlns="{NS}">
<network><name>na</name><tenant>A</tenant><vni>10</vni><ipv4-prefix>10.1.0.0/24</ipv4-prefix></network>
<network><name>nb</name><tenant>B</tenant><vni>20</vni><ipv4-prefix>10.2.0.0/24</ipv4-prefix></network>
</virtual-networks><routers xmlns="{NS}">
<router><name>ra</name><index>1</index><interface><name>eth0</name><network>na</network><ipv4>10.1.0.1/24</ipv4></interface></router>
<router><name>rb</name><index>2</index><interface><name>eth0</name><network>nb</network><ipv4>10.2.0.1/24</ipv4></interface></router>
</routers></config>"""


@pytest.fixture(scope="module")
def agent() -> Iterator[SandboxAgent]:
    require_tools("snmpget", "snmpset", "snmpwalk")
    host = HostSandbox(scope=unique_lab())
    sandbox = SandboxAgent(host, {"ports": PORTS, "users": USERS, "snmp": SNMP})
    try:
        host.create()
        sandbox.start("netconf,snmp")
        with netconf_connect(
            host.namespace, "127.0.0.1", PORTS["netconf"], "admin", "adm1n-pw"
        ) as m:
            m.edit_config(target="running", config=SETUP)
        yield sandbox
    finally:
        sandbox.stop(grace=5)
        problems = host.cleanup()
        assert not problems, f"the test left things behind: {problems}"


def _snmp(
    a: SandboxAgent, tool: str, auth: list[str], *args: str
) -> subprocess.CompletedProcess[str]:
    argv = ["env", "MIBS=", tool, *auth, "-On", "-Oq", "-t", "1", "-r", "0"]
    argv += [f"127.0.0.1:{PORTS['snmp']}", *args]
    return processes.run(a.host.namespace, argv, timeout=30)


def _vr_names(a: SandboxAgent, auth: list[str]) -> list[str]:
    done = _snmp(a, "snmpwalk", auth, d((*oids.VR_CONFIG_ENTRY, oids.VR_NAME)))
    assert done.returncode == 0, done.stderr
    return sorted(values(done.stdout).values())


def _create(idx: int, name: str, network: str, ipv4: str) -> list[str]:
    return [
        vr_col(oids.VR_NAME, idx), "s", name, vr_col(oids.VR_STATUS, idx), "i", "4",
        if_col(oids.IF_NETWORK, idx, 1), "s", network, if_col(oids.IF_IPV4, idx, 1), "s", ipv4,
        if_col(oids.IF_STATUS, idx, 1), "i", "4",
    ]  # fmt: skip


def test_v3_user_is_its_nacm_user(agent: SandboxAgent) -> None:
    assert _vr_names(agent, ALICE) == ["ra"]
    assert _vr_names(agent, OPS) == ["ra", "rb"]  # not an agent user: its VACM view
    done = _snmp(agent, "snmpset", ALICE, *_create(3, "rx", "nb", "10.2.0.9/24"))
    assert done.returncode != 0 and "noAccess" in done.stderr, done.stderr
    done = _snmp(agent, "snmpset", ALICE, *_create(4, "ra2", "na", "10.1.0.2/24"))
    assert done.returncode == 0, done.stderr
    assert _vr_names(agent, ALICE) == ["ra", "ra2"]


def test_wrong_v3_keys_are_throttled(agent: SandboxAgent) -> None:
    wrong = v3("alice", "wrongauth", "alicepriv")
    name = d(oids.HOST_NAME) + ".0"
    for _ in range(8):
        assert _snmp(agent, "snmpget", wrong, name).returncode != 0
    done = _snmp(agent, "snmpget", ALICE, name)  # the right keys, while throttled
    assert done.returncode != 0 and "Timeout" in done.stderr, done.stderr
    assert _snmp(agent, "snmpget", OPS, name).returncode == 0  # another user: at once
    log = agent.log.read_text()
    assert "SNMPv3: failed login for user 'alice' from 127.0.0.1" in log
    assert "SNMPv3: login for user 'alice' from 127.0.0.1 refused" in log
