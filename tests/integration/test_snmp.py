"""SNMP against a real agent, with the Net-SNMP command-line tools as the client
(snmpget, snmpset, snmpbulkget, snmpwalk, snmpbulkwalk, snmptrapd) and ncclient
for the NETCONF side of the same datastore."""

from __future__ import annotations

import contextlib
import glob
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import ncclient.transport.session
import pytest
from ncclient import manager

from vnet.agent.snmp import oids
from vnet.lab import processes
from vnet.substrate import Kernel, nsfs, observe
from vnet.tools.wait import WaitTimeout, wait_until

from .agent_support import (
    NETWORK_XML,
    AgentUnderTest,
    running_agent,
    start_agent_process,
    stop_agent,
)
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


class Trapd:
    """snmptrapd inside the agent's namespace with a private configuration, stopped by PID."""

    def __init__(self, a: AgentUnderTest, tmp: Path):
        self.dir = tmp / "snmptrapd"
        self.dir.mkdir()
        self.log = self.dir / "traps.log"
        engine_id = json.loads((a.state_dir / "snmp-engine.json").read_text())["engine_id"]
        (self.dir / "snmptrapd.conf").write_text(
            "authCommunity log traps\n"
            # v3 traps: the agent is the authoritative engine; informs: snmptrapd is
            f"createUser -e 0x{engine_id} trapper SHA trapauth1 AES trappriv1\n"
            "createUser trapper SHA trapauth1 AES trappriv1\n"
            "authUser log trapper priv\n"
        )
        self.proc = processes.spawn(
            a.namespace,
            [
                "env",
                "MIBS=",
                f"SNMP_PERSISTENT_DIR={self.dir}",
                "snmptrapd",
                "-f",
                "-C",
                "-c",
                str(self.dir / "snmptrapd.conf"),
                "-Lf",
                str(self.log),
                "-On",
                "-F",
                "TRAP %P|%v\n",
                f"udp:127.0.0.1:{TRAP_PORT}",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_until(
            lambda: "NET-SNMP version" in self.text(),
            10,
            "snmptrapd starts",
            give_up=lambda: "snmptrapd exited" if self.proc.poll() is not None else None,
        )

    def text(self) -> str:
        return self.log.read_text() if self.log.exists() else ""

    def lines(self, pattern: str) -> list[str]:
        return [ln for ln in self.text().splitlines() if re.search(pattern, ln)]

    def wait_for(self, pattern: str, count: int, timeout: float = 10) -> list[str]:
        """The lines that match, once `count` do or `timeout` passed (the caller checks)."""
        with contextlib.suppress(WaitTimeout):
            wait_until(lambda: len(self.lines(pattern)) >= count, timeout, "traps logged")
        return self.lines(pattern)

    def stop(self) -> None:
        processes.stop_child(self.proc)


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AgentUnderTest]:
    require_tools("snmpget", "snmpset", "snmpbulkget", "snmpwalk", "snmpbulkwalk", "snmptrapd")
    with running_agent(tmp_path_factory.mktemp("snmp"), frontends="netconf,snmp", snmp=SNMP) as a:
        with connect(a) as m:
            m.edit_config(target="running", config=NETWORK_XML)
        yield a


@pytest.fixture(scope="module")
def trapd(agent: AgentUnderTest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Trapd]:
    t = Trapd(agent, tmp_path_factory.mktemp("traps"))
    yield t
    t.stop()


@pytest.fixture(autouse=True)
def clean(agent: AgentUnderTest) -> Iterator[None]:
    yield
    with connect(agent) as m:
        data = m.get_config("running").data
        for name in [n.text for n in data.iterfind(f".//{{{NS}}}router/{{{NS}}}name")]:
            m.edit_config(target="running", config=vr_xml(name, op="remove"))


def connect(a: AgentUnderTest) -> manager.Manager:
    with nsfs.entered(a.namespace):
        return manager.connect(
            host=a.address,
            port=a.netconf_port,
            username=a.user,
            password=a.password,
            hostkey_verify=False,
            allow_agent=False,
            look_for_keys=False,
            timeout=10,
        )


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


@pytest.mark.parametrize(
    ("write", "read"),
    [(V2_RW, V2_RO), (V3, V3), (V3_SHA256, V3_RO)],
    ids=["v2c", "v3-sha-aes", "v3-sha256-aes"],
)
def test_create_get_bulkget_walk_destroy(
    agent: AgentUnderTest, write: list[str], read: list[str]
) -> None:
    idx = next_index(agent, read)
    assert idx == 1
    snmp(agent, "snmpset", write, *create_args(idx, "r1"))
    assert vr_namespaces(agent) == [agent.node_ns("r1")]
    addrs = ip(agent.node_ns("r1"), "-br", "addr")
    assert "10.1.0.254/24" in addrs

    got = values(
        snmp(
            agent,
            "snmpget",
            read,
            vr_col(oids.VR_NAME, idx),
            vr_col(oids.VR_ADMIN, idx),
            vr_col(oids.VR_STATUS, idx),
            d((*oids.VR_ENTRY, oids.VR_OPER, idx)),
            d(oids.CONFIGURED) + ".0",
            d(oids.NEXT_INDEX) + ".0",
        ).stdout
    )
    assert list(got.values()) == ["r1", "1", "1", "1", "1", "2"], got

    # one GETBULK for the VR's objects: the column OIDs before its row, one repetition
    cols = [d((*oids.VR_CONFIG_ENTRY, c, idx - 1)) for c in (2, 3, 4)] + [
        d((*oids.IF_CONFIG_ENTRY, c, idx, 0)) for c in (2, 3, 4)
    ]
    got = values(snmp(agent, "snmpbulkget", read, "-Cn0", "-Cr1", *cols).stdout)
    assert got == {
        vr_col(oids.VR_NAME, idx): "r1",
        vr_col(oids.VR_ADMIN, idx): "1",
        vr_col(oids.VR_STATUS, idx): "1",
        if_col(oids.IF_NAME, idx, 1): "eth0",
        if_col(oids.IF_NETWORK, idx, 1): "n1",
        if_col(oids.IF_IPV4, idx, 1): "10.1.0.254/24",
    }

    walked = values(snmp(agent, "snmpwalk", read, d(oids.OBJECTS)).stdout)
    bulkwalked = values(snmp(agent, "snmpbulkwalk", read, d(oids.OBJECTS)).stdout)
    assert walked.keys() == bulkwalked.keys()
    assert walked[vr_col(oids.VR_NAME, idx)] == "r1"
    assert walked[d((*oids.IF_STATS_ENTRY, oids.IFS_OPER, idx, 1))] == "1"  # up
    assert walked[d((*oids.NETWORK_ENTRY, oids.NET_IPV4, 10))] == "10.1.0.0/24"
    assert list(walked) == sorted(walked, key=lambda o: tuple(int(x) for x in o[1:].split(".")))

    snmp(agent, "snmpset", write, vr_col(oids.VR_STATUS, idx), "i", "6")
    assert vr_namespaces(agent) == []
    walked = values(snmp(agent, "snmpwalk", read, d(oids.OBJECTS)).stdout)
    assert not [o for o in walked if o.startswith(d(oids.VR_CONFIG_ENTRY) + ".")]


def test_snmp_and_netconf_see_the_same_routers(agent: AgentUnderTest) -> None:
    snmp(agent, "snmpset", V2_RW, *create_args(5, "viasnmp"))
    with connect(agent) as m:
        data = m.get(filter=("subtree", f'<routers xmlns="{NS}"/>')).data
        routers = {r.findtext(f"{{{NS}}}name"): r for r in data.iterfind(f".//{{{NS}}}router")}
        assert routers["viasnmp"].findtext(f"{{{NS}}}index") == "5"
        assert routers["viasnmp"].findtext(f".//{{{NS}}}ipv4") == "10.1.0.254/24"
        assert routers["viasnmp"].findtext(f"{{{NS}}}oper-state") == "running"
        m.edit_config(
            target="running",
            config=vr_xml(
                "vianc",
                extra=(
                    "<index>9</index><admin-state>down</admin-state><interface><name>e0</name>"
                    "<network>n2</network><ipv4>10.2.0.1/24</ipv4></interface>"
                ),
            ),
        )
    got = values(
        snmp(
            agent,
            "snmpget",
            V2_RO,
            vr_col(oids.VR_NAME, 9),
            vr_col(oids.VR_ADMIN, 9),
            if_col(oids.IF_NAME, 9, 1),
            if_col(oids.IF_NETWORK, 9, 1),
            d((*oids.VR_ENTRY, oids.VR_OPER, 9)),
        ).stdout
    )
    assert list(got.values()) == ["vianc", "2", "e0", "n2", "2"], got  # down -> stopped(2)
    # a change over SNMP to the NETCONF-made VR, seen over NETCONF
    snmp(agent, "snmpset", V2_RW, vr_col(oids.VR_ADMIN, 9), "i", "1")
    with connect(agent) as m:
        data = m.get_config("running").data
        vianc = next(
            r for r in data.iterfind(f".//{{{NS}}}router") if r.findtext(f"{{{NS}}}name") == "vianc"
        )
        assert vianc.findtext(f"{{{NS}}}admin-state") == "up"


def test_routes_over_snmp_are_routes_over_netconf(agent: AgentUnderTest) -> None:
    snmp(agent, "snmpset", V2_RW, *create_args(2, "router"))
    index = (2, 1, 4, 10, 9, 0, 0, 16)  # VR 2, ipv4, 4 octets, 10.9.0.0, /16
    hop = d((*oids.ROUTE_ENTRY, oids.RT_NEXT_HOP, *index))
    status = d((*oids.ROUTE_ENTRY, oids.RT_STATUS, *index))
    snmp(agent, "snmpset", V2_RW, hop, "s", "10.1.0.1", status, "i", "4")
    routes = ip(agent.node_ns("router"), "route")
    assert "10.9.0.0/16 via 10.1.0.1" in routes, routes
    with connect(agent) as m:
        xml = m.get_config("running").data_xml
        assert "<destination>10.9.0.0/16</destination>" in xml
        assert "<next-hop>10.1.0.1</next-hop>" in xml
        m.edit_config(
            target="running",
            config=vr_xml(
                "router",
                extra=(
                    "<route><destination>fd00:9::/48</destination><next-hop>fd00:1::1</next-hop>"
                    "</route><interface><name>eth0</name><ipv6>fd00:1::fe/64</ipv6></interface>"
                ),
            ),
        )
    walked = values(snmp(agent, "snmpbulkwalk", V3, d(oids.ROUTE_ENTRY[:-1])).stdout)
    v6 = (2, 2, 16, 0xFD, 0, 0, 9, *[0] * 12, 48)
    assert walked == {
        hop: "10.1.0.1",
        d((*oids.ROUTE_ENTRY, oids.RT_NEXT_HOP, *v6)): "fd00:1::1",
        status: "1",
        d((*oids.ROUTE_ENTRY, oids.RT_STATUS, *v6)): "1",
    }, walked
    snmp(agent, "snmpset", V2_RW, status, "i", "6")
    routes = ip(agent.node_ns("router"), "route")
    assert "10.9.0.0/16" not in routes, routes


def test_create_and_wait_goes_through_not_ready_and_not_in_service(agent: AgentUnderTest) -> None:
    idx = 3
    status = vr_col(oids.VR_STATUS, idx)
    snmp(agent, "snmpset", V2_RW, status, "i", "5")  # createAndWait
    assert values(snmp(agent, "snmpget", V2_RO, status).stdout)[status] == "3"  # notReady
    name = values(snmp(agent, "snmpget", V2_RO, vr_col(oids.VR_NAME, idx)).stdout)
    assert "No Such Instance" in name[vr_col(oids.VR_NAME, idx)]
    # the interface row of a VR that is not active yet
    snmp(
        agent,
        "snmpset",
        V2_RW,
        if_col(oids.IF_STATUS, idx, 1),
        "i",
        "5",
        if_col(oids.IF_NETWORK, idx, 1),
        "s",
        "n1",
    )
    snmp(agent, "snmpset", V2_RW, vr_col(oids.VR_NAME, idx), "s", "waiter")
    assert values(snmp(agent, "snmpget", V2_RO, status).stdout)[status] == "2"  # notInService
    with connect(agent) as m:
        assert "waiter" not in m.get_config("running").data_xml  # not configured yet
    assert vr_namespaces(agent) == []
    snmp(
        agent, "snmpset", V2_RW, if_col(oids.IF_STATUS, idx, 1), "i", "1", status, "i", "1"
    )  # both active in one SET
    assert values(snmp(agent, "snmpget", V2_RO, status).stdout)[status] == "1"
    with connect(agent) as m:
        assert "<name>waiter</name>" in m.get_config("running").data_xml
    assert vr_namespaces(agent) == [agent.node_ns("waiter")]
    snmp(agent, "snmpset", V2_RW, status, "i", "6")
    assert vr_namespaces(agent) == []


# snmpset arguments (after creating VR 1 named r1), the error Net-SNMP reports, the
# failed object; the datastore must not change
ERRORS = [
    ([vr_col(oids.VR_STATUS, 2), "s", "createAndGo"], "wrongType", vr_col(oids.VR_STATUS, 2)),
    ([vr_col(oids.VR_STATUS, 2), "i", "7"], "wrongValue", vr_col(oids.VR_STATUS, 2)),
    ([vr_col(oids.VR_STATUS, 2), "i", "3"], "wrongValue", vr_col(oids.VR_STATUS, 2)),
    ([vr_col(oids.VR_STATUS, 1), "i", "2"], "wrongValue", vr_col(oids.VR_STATUS, 1)),
    ([vr_col(oids.VR_ADMIN, 1), "i", "3"], "wrongValue", vr_col(oids.VR_ADMIN, 1)),
    (
        [vr_col(oids.VR_NAME, 2), "s", "name-too-long", vr_col(oids.VR_STATUS, 2), "i", "4"],
        "wrongLength",
        vr_col(oids.VR_NAME, 2),
    ),
    ([vr_col(oids.VR_STATUS, 0), "i", "4"], "noCreation", vr_col(oids.VR_STATUS, 0)),
    ([vr_col(oids.VR_STATUS, 65536), "i", "4"], "noCreation", vr_col(oids.VR_STATUS, 65536)),
    ([d(oids.HOST_NAME) + ".0", "s", "x"], "notWritable", d(oids.HOST_NAME) + ".0"),
    (
        [d((*oids.VR_ENTRY, oids.VR_OPER, 1)), "i", "1"],
        "notWritable",
        d((*oids.VR_ENTRY, oids.VR_OPER, 1)),
    ),
    (
        [vr_col(oids.VR_NAME, 1), "s", "r1", vr_col(oids.VR_STATUS, 1), "i", "4"],
        "inconsistentValue",
        vr_col(oids.VR_STATUS, 1),
    ),  # createAndGo on an existing row
    (
        [vr_col(oids.VR_STATUS, 2), "i", "4"],
        "inconsistentValue",
        vr_col(oids.VR_STATUS, 2),
    ),  # createAndGo without vnetVrName
    ([vr_col(oids.VR_STATUS, 2), "i", "1"], "inconsistentValue", vr_col(oids.VR_STATUS, 2)),
    ([vr_col(oids.VR_NAME, 1), "s", "other"], "inconsistentValue", vr_col(oids.VR_NAME, 1)),
    ([vr_col(oids.VR_NAME, 2), "s", "r2"], "inconsistentName", vr_col(oids.VR_NAME, 2)),
    # the datastore's validation refuses the activation
    (create_args(2, "r1", "10.1.0.253/24"), "inconsistentValue", vr_col(oids.VR_STATUS, 2)),
    (create_args(2, "r2", "10.9.0.1/24"), "inconsistentValue", vr_col(oids.VR_STATUS, 2)),
]


@pytest.mark.parametrize(
    ("args", "reason", "failed"), ERRORS, ids=[f"{e[1]}-{n}" for n, e in enumerate(ERRORS)]
)
def test_set_errors_follow_rfc_3416_and_2579(
    agent: AgentUnderTest, args: list[str], reason: str, failed: str
) -> None:
    snmp(agent, "snmpset", V2_RW, *create_args(1, "r1"))
    with connect(agent) as m:
        before = m.get_config("running").data_xml
    done = snmp(agent, "snmpset", V2_RW, *args, check=False)
    assert done.returncode != 0, done.stdout
    assert f"Reason: {reason}" in done.stderr, done.stderr
    assert f"Failed object: {failed}" in done.stderr, done.stderr
    with connect(agent) as m:
        assert m.get_config("running").data_xml == before
    assert vr_namespaces(agent) == [agent.node_ns("r1")]


@pytest.mark.parametrize(
    ("auth", "message"),
    [
        (["-v2c", "-c", "wrong"], "Timeout: No Response"),
        (
            v3("nobody", "authpass1", "privpass1"),
            "Unknown user name",
        ),
        (
            v3("admin3", "wrongpass", "privpass1"),
            "Authentication failure",
        ),
        (
            v3("admin3", "authpass1", "wrongpriv"),
            "Decryption error",
        ),
        (
            ["-v3", "-l", "authNoPriv", "-u", "admin3", "-a", "SHA", "-A", "authpass1"],
            "Unsupported security level",
        ),
        (["-v3", "-l", "noAuthNoPriv", "-u", "admin3"], "Unsupported security level"),
        (
            v3("admin3", "authpass1", "privpass1", auth="SHA-256"),
            "Authentication failure",
        ),  # wrong auth protocol
    ],
    ids=[
        "community",
        "user",
        "auth-password",
        "priv-password",
        "authNoPriv",
        "noAuthNoPriv",
        "auth-protocol",
    ],
)
def test_wrong_credentials_are_rejected(
    agent: AgentUnderTest, auth: list[str], message: str
) -> None:
    argv = [
        "env",
        "MIBS=",
        "snmpget",
        *auth,
        "-t",
        "0.5",
        "-r",
        "0",
        "127.0.0.1",
        d(oids.HOST_NAME) + ".0",
    ]
    done = processes.run(agent.namespace, argv, timeout=10)
    assert done.returncode != 0 and message in done.stderr, done.stderr + done.stdout
    assert "h1" not in done.stdout


@pytest.mark.parametrize("auth", [V2_RO, V3_RO], ids=["v2c-ro-community", "v3-ro-user"])
def test_read_only_principals_cannot_write(agent: AgentUnderTest, auth: list[str]) -> None:
    assert values(snmp(agent, "snmpget", auth, d(oids.HOST_NAME) + ".0").stdout) == {
        d(oids.HOST_NAME) + ".0": "h1"
    }
    done = snmp(agent, "snmpset", auth, *create_args(1, "r1"), check=False)
    assert "Reason: noAccess" in done.stderr, done.stderr
    assert vr_namespaces(agent) == []


def test_notifications_reach_snmptrapd(agent: AgentUnderTest, trapd: Trapd) -> None:
    created = f"OID: {d(oids.VR_CREATED)}"
    removed = f"OID: {d(oids.VR_REMOVED)}"
    snmp(agent, "snmpset", V2_RW, *create_args(4, "trapped"))
    lines = trapd.wait_for(re.escape(created) + ".*trapped", 3)
    # one v2c trap, one v3 trap, one v3 inform, each with the VR's name and admin state
    kinds = sorted(ln.split("|")[0] for ln in lines)
    assert kinds == [
        "TRAP INFORM, SNMP v3, user trapper, context ",
        "TRAP TRAP2, SNMP v2c, community traps",
        "TRAP TRAP2, SNMP v3, user trapper, context ",
    ], trapd.text()
    for ln in lines:
        assert f'{vr_col(oids.VR_NAME, 4)} = STRING: "trapped"' in ln
        assert f"{vr_col(oids.VR_ADMIN, 4)} = INTEGER: 1" in ln
        assert f"{d(oids.SYS_UPTIME)} = Timeticks:" in ln
    # a VR removed over NETCONF is confirmed over SNMP as well
    with connect(agent) as m:
        m.edit_config(target="running", config=vr_xml("trapped", op="delete"))
    lines = trapd.wait_for(re.escape(removed) + ".*trapped", 3)
    assert len(lines) == 3, trapd.text()


def test_mib_names_work_in_the_net_snmp_tools(agent: AgentUnderTest) -> None:
    base = base_mib_dir()
    snmp(agent, "snmpset", V2_RW, *create_args(1, "named"))
    argv = [
        "env",
        "MIBS=VNET-ROUTER-MIB",
        f"MIBDIRS={base}:{MIB_DIR}",
        "snmpget",
        *V2_RO,
        "127.0.0.1",
        "VNET-ROUTER-MIB::vnetVrName.1",
        "VNET-ROUTER-MIB::vnetVrRowStatus.1",
        "VNET-ROUTER-MIB::vnetVrOperState.1",
    ]
    done = processes.run(agent.namespace, argv, timeout=10)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert "VNET-ROUTER-MIB::vnetVrName.1 = STRING: named" in done.stdout, done.stdout
    assert "VNET-ROUTER-MIB::vnetVrRowStatus.1 = INTEGER: active(1)" in done.stdout
    assert "VNET-ROUTER-MIB::vnetVrOperState.1 = INTEGER: running(1)" in done.stdout


def test_engine_boots_persist_across_restarts(agent: AgentUnderTest) -> None:
    """Last in the file: it restarts the module's agent."""
    engine = [d(oids.ENGINE_ID), d(oids.ENGINE_BOOTS)]
    before = values(snmp(agent, "snmpget", V3, *engine).stdout)
    stop_agent(agent)
    agent.proc = start_agent_process(agent, "netconf,snmp")
    after = values(snmp(agent, "snmpget", V3, *engine).stdout)
    assert after[d(oids.ENGINE_ID)] == before[d(oids.ENGINE_ID)]
    assert int(after[d(oids.ENGINE_BOOTS)]) == int(before[d(oids.ENGINE_BOOTS)]) + 1


# -- the MIB module itself ------------------------------------------------------------


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


def smilint(base: str, level: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["smilint", "-l", str(level), str(MIB_DIR / "VNET-ROUTER-MIB.txt")],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "SMIPATH": base},
    )


def test_mib_passes_smilint() -> None:
    require_tools("smilint")
    base = base_mib_dir()
    done = smilint(base, 3)
    assert done.returncode == 0 and done.stdout + done.stderr == "", done.stdout + done.stderr
    # and at the strictest level, too
    done = smilint(base, 6)
    assert done.stdout + done.stderr == "", done.stdout + done.stderr


def test_mib_translates_with_net_snmp() -> None:
    require_tools("snmptranslate")
    base = base_mib_dir()
    assert shutil.which("snmptranslate")
    done = subprocess.run(
        ["snmptranslate", "-On", "VNET-ROUTER-MIB::vnetVrRowStatus.5"],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "MIBS": "VNET-ROUTER-MIB", "MIBDIRS": f"{base}:{MIB_DIR}"},
    )
    assert done.stdout.strip() == d((*oids.VR_CONFIG_ENTRY, oids.VR_STATUS, 5)), done.stderr
