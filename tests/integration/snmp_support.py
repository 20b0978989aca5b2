"""What the SNMP integration tests share: an agent serving SNMP and NETCONF on one
datastore, the Net-SNMP tools run inside its namespace, and OIDs spelled as they print.

A test module uses the fixtures by importing them: `agent` (one agent per module,
with the network n1) and `clean` (autouse: no VR outlives a test)."""

from __future__ import annotations

import glob
import subprocess
from collections.abc import Iterator
from pathlib import Path

import ncclient.transport.session
import pytest

from vnet.model.mib import oids
from vnet.substrate import Kernel, observe
from vnet.tools import processes

from .agent_support import NETWORK_XML, AgentUnderTest, running_agent
from .conftest import require_tools

ncclient.transport.session.TICK = 0.001
ROOT = Path(__file__).resolve().parents[2]
MIB_DIR = ROOT / "src/vnet/model/mib"
NS = "urn:vnet:yang:vnet-router"
TRAP_PORT = 1162

SNMP = {
    "ro_communities": ["public"],
    "rw_communities": ["private"],
    "users": [
        {"name": "admin3", "auth_key": "authpass1", "priv_key": "privpass1"},
        {
            "name": "sha256",
            "auth_protocol": "SHA-256",
            "auth_key": "authpass2",
            "priv_key": "privpass2",
        },
        {"name": "reader", "auth_key": "readpass1", "priv_key": "readpriv1", "access": "ro"},
        {"name": "trapper", "auth_key": "trapauth1", "priv_key": "trappriv1", "access": "ro"},
    ],
    "targets": [
        {"address": "127.0.0.1", "port": TRAP_PORT, "community": "traps"},
        {"address": "127.0.0.1", "port": TRAP_PORT, "version": "v3", "user": "trapper"},
        {
            "address": "127.0.0.1",
            "port": TRAP_PORT,
            "version": "v3",
            "user": "trapper",
            "kind": "inform",
        },
    ],
}


def v3(user: str, auth_key: str, priv_key: str, auth: str = "SHA") -> list[str]:
    """Net-SNMP options for an SNMPv3 authPriv request with AES privacy."""
    principal = ["-v3", "-l", "authPriv", "-u", user]
    return [*principal, "-a", auth, "-A", auth_key, "-x", "AES", "-X", priv_key]


V2_RO = ["-v2c", "-c", "public"]
V2_RW = ["-v2c", "-c", "private"]
V3 = v3("admin3", "authpass1", "privpass1")
V3_SHA256 = v3("sha256", "authpass2", "privpass2", auth="SHA-256")
V3_RO = v3("reader", "readpass1", "readpriv1")


def d(oid: tuple[int, ...]) -> str:
    return "." + oids.dotted(oid)


def vr_col(c: int, idx: int) -> str:
    return d((*oids.VR_CONFIG_ENTRY, c, idx))


def if_col(c: int, idx: int, pos: int) -> str:
    return d((*oids.IF_CONFIG_ENTRY, c, idx, pos))


@pytest.fixture(scope="module", name="agent")
def agent_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AgentUnderTest]:
    require_tools("snmpget", "snmpset", "snmpbulkget", "snmpwalk", "snmpbulkwalk", "snmptrapd")
    with running_agent(tmp_path_factory.mktemp("snmp"), frontends="netconf,snmp", snmp=SNMP) as a:
        with a.netconf() as m:
            m.edit_config(target="running", config=NETWORK_XML)
        yield a


@pytest.fixture(autouse=True, name="clean")
def clean_fixture(agent: AgentUnderTest) -> Iterator[None]:
    yield
    with agent.netconf() as m:
        data = m.get_config("running").data
        for name in [n.text for n in data.iterfind(f".//{{{NS}}}router/{{{NS}}}name")]:
            m.edit_config(target="running", config=vr_xml(name, op="remove"))


def vr_xml(name: str, op: str = "", extra: str = "") -> str:
    attr = (
        (f' xmlns:nc="urn:ietf:params:xml:ns:netconf:base:1.0" nc:operation="{op}"') if op else ""
    )
    return (
        f'<config><routers xmlns="{NS}"><router{attr}><name>{name}</name>{extra}'
        "</router></routers></config>"
    )


def snmp(
    a: AgentUnderTest, tool: str, auth: list[str], *args: str, check: bool = True
) -> subprocess.CompletedProcess[str]:
    """A Net-SNMP tool inside the agent's namespace; numeric OIDs, no MIB files."""
    argv = ["env", "MIBS=", tool, *auth, "-On", "-Oq", "-t", "3", "-r", "1", "127.0.0.1", *args]
    done = processes.run(a.namespace, argv, timeout=30)
    if check:
        assert done.returncode == 0, f"{' '.join(argv)}\n{done.stdout}{done.stderr}"
    return done


def values(out: str) -> dict[str, str]:
    """'-On -Oq' output -> {OID: value}; strings lose their quotes."""
    found = {}
    for line in out.splitlines():
        oid, _, value = line.partition(" ")
        if oid.startswith("."):
            found[oid] = value.strip().strip('"')
    return found


def vr_namespaces(a: AgentUnderTest) -> list[str]:
    with Kernel() as k:
        return sorted(observe(k, a.scope, a.prefix).state.namespaces)


def ip(namespace: str, *args: str) -> str:
    """What `ip -n namespace ...` prints (the kernel's view, not the agent's)."""
    return subprocess.run(
        ["ip", "-n", namespace, *args], text=True, capture_output=True, check=True
    ).stdout


def next_index(a: AgentUnderTest, auth: list[str]) -> int:
    out = snmp(a, "snmpget", auth, d(oids.NEXT_INDEX) + ".0").stdout
    return int(values(out)[d(oids.NEXT_INDEX) + ".0"])


def create_args(idx: int, name: str, ipv4: str = "10.1.0.254/24") -> list[str]:
    """One SET creating a VR and its first interface (createAndGo for both rows)."""
    return [
        vr_col(oids.VR_NAME, idx),
        "s",
        name,
        vr_col(oids.VR_STATUS, idx),
        "i",
        "4",
        if_col(oids.IF_NETWORK, idx, 1),
        "s",
        "n1",
        if_col(oids.IF_IPV4, idx, 1),
        "s",
        ipv4,
        if_col(oids.IF_STATUS, idx, 1),
        "i",
        "4",
    ]


def base_mib_dir() -> str:
    """Where SNMPv2-SMI, SNMPv2-TC, SNMPv2-CONF and INET-ADDRESS-MIB are on this machine.

    Debian ships them only with Erlang's SNMP application (erlang-snmp, main) or
    snmp-mibs-downloader (non-free); scripts/bootstrap.sh installs erlang-snmp."""
    for candidate in [
        *sorted(glob.glob("/usr/lib/erlang/lib/snmp-*/mibs")),
        "/usr/share/snmp/mibs/ietf",
    ]:
        if all(
            glob.glob(f"{candidate}/{m}*")
            for m in ("SNMPv2-SMI", "SNMPv2-TC", "SNMPv2-CONF", "INET-ADDRESS-MIB")
        ):
            return candidate
    pytest.skip("no SNMPv2-SMI/SNMPv2-TC/INET-ADDRESS-MIB files (apt-get install erlang-snmp)")
