"""What SNMP's engine does around the MIB, against a real agent: who may ask (communities,
USM users, VACM views), notifications to snmptrapd, snmpEngineBoots across restarts, and
the MIB module itself (smilint, Net-SNMP's MIB parser)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from lxml import etree

from vnet.model.mib import oids
from vnet.tools import processes
from vnet.tools.wait import WaitTimeout, wait_until

from .agent_support import AgentUnderTest, start_agent_process, stop_agent
from .conftest import require_tools
from .snmp_support import (  # noqa: F401  (agent_fixture, clean_fixture: pytest fixtures)
    MIB_DIR,
    NS,
    TRAP_PORT,
    V2_RO,
    V2_RW,
    V3,
    V3_RO,
    agent_fixture,
    base_mib_dir,
    clean_fixture,
    create_args,
    d,
    ip,
    snmp,
    v3,
    values,
    vr_col,
    vr_namespaces,
    vr_xml,
)


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
def trapd(agent: AgentUnderTest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Trapd]:
    t = Trapd(agent, tmp_path_factory.mktemp("traps"))
    yield t
    t.stop()


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
    with agent.netconf() as m:
        m.edit_config(target="running", config=vr_xml("trapped", op="delete"))
    lines = trapd.wait_for(re.escape(removed) + ".*trapped", 3)
    assert len(lines) == 3, trapd.text()


UNDERLAY_XML = (
    f'<config><underlay xmlns="{NS}"%s><interface><name>ul0</name><rate>100000000</rate>'
    "<reserved>1000000</reserved></interface></underlay></config>"
)
REMOVE = ' xmlns:nc="urn:ietf:params:xml:ns:netconf:base:1.0" nc:operation="remove"'


def _oper_status(m: Any) -> str | None:
    data = m.get(("subtree", f'<underlay xmlns="{NS}"/>')).data
    return data.findtext(f".//{{{NS}}}interface/{{{NS}}}oper-status")


def _underlay_event(listener: Any) -> tuple[str | None, str | None]:
    event = listener.take_notification(timeout=10)
    assert event is not None, "no notification within 10 s"
    found = etree.fromstring(event.notification_xml.encode()).find(f".//{{{NS}}}underlay-event")
    assert found is not None, event.notification_xml
    return found.findtext(f"{{{NS}}}interface"), found.findtext(f"{{{NS}}}oper-status")


def test_an_underlay_link_that_fails_and_returns_is_told(
    agent: AgentUnderTest, trapd: Trapd
) -> None:
    """Its carrier lost, then back: a NETCONF underlay-event each time, IF-MIB linkDown and
    linkUp to every trap target, and the state in <get>."""
    ns = agent.namespace
    ip(ns, "link", "add", "ul0", "type", "veth", "peer", "name", "ul0p")
    try:
        ip(ns, "link", "set", "ul0", "up")
        ip(ns, "link", "set", "ul0p", "up")
        with agent.netconf() as m, agent.netconf() as listener:
            m.edit_config(target="running", config=UNDERLAY_XML % "")
            listener.create_subscription()
            wait_until(lambda: _oper_status(m) == "up", 5, "ul0 up with a carrier")
            index = json.loads(ip(ns, "-j", "link", "show", "ul0"))[0]["ifindex"]
            ip(ns, "link", "set", "ul0p", "down")  # the far end fails: ul0 loses its carrier
            assert _underlay_event(listener) == ("ul0", "down")
            assert _oper_status(m) == "down"
            down = trapd.wait_for(f'OID: {re.escape(d(oids.LINK_DOWN))}.*"ul0"', 3)
            ip(ns, "link", "set", "ul0p", "up")
            assert _underlay_event(listener) == ("ul0", "up")
            up = trapd.wait_for(f'OID: {re.escape(d(oids.LINK_UP))}.*"ul0"', 3)
            m.edit_config(target="running", config=UNDERLAY_XML % REMOVE)
    finally:
        ip(ns, "link", "del", "ul0")
    assert len(down) == 3 and len(up) == 3, trapd.text()  # v2c trap, v3 trap, v3 inform
    for line, status in [*((ln, 2) for ln in down), *((ln, 1) for ln in up)]:
        oper = d((*oids.IF_ENTRY, oids.IF_OPER_STATUS, index))
        assert f"{oper} = INTEGER: {status}" in line, line
        assert f'{d((*oids.IF_X_NAME, index))} = STRING: "ul0"' in line, line


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
