"""The services as an operator installs them (docs/deploy.md): the systemd units pass
`systemd-analyze verify` and carry their hardening; the /etc/vnet examples are valid
configurations; a broken configuration exits 78 (which the units do not restart on) with
the error on stderr, the journal's; readiness reaches systemd through $NOTIFY_SOCKET."""

from __future__ import annotations

import configparser
import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from vnet.lab.topology_file import load_topology
from vnet.model.agent_config import AgentConfig
from vnet.model.controller_config import ControllerConfig

DEPLOY = Path(__file__).resolve().parents[2] / "src" / "vnet" / "deploy"
UNITS = DEPLOY / "systemd"
ETC = DEPLOY / "etc"
VNET = str(Path(sys.executable).parent / "vnet")
INSTALLED = "/opt/vnet/bin/vnet"  # where the units expect the package (docs/deploy.md)
EX_CONFIG = 78


def installed_here(unit: Path, tmp_path: Path) -> Path:
    """The unit with ExecStart pointing at this environment's vnet (verify checks that the
    program exists)."""
    out = tmp_path / unit.name
    out.write_text(unit.read_text().replace(INSTALLED, VNET))
    return out


def verify(*units: Path) -> subprocess.CompletedProcess[str]:
    argv = ["systemd-analyze", "verify", "--man=no", *map(str, units)]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60)


def service(unit: Path) -> configparser.SectionProxy:
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read_string(unit.read_text())
    return parser["Service"]


@pytest.fixture(autouse=True)
def _systemd_analyze() -> None:
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze is not installed (Debian's systemd package)")


def test_the_units_verify_and_a_broken_one_does_not(tmp_path: Path) -> None:
    units = [installed_here(u, tmp_path) for u in sorted(UNITS.glob("*.service"))]
    assert [u.name for u in units] == ["vnet-agent.service", "vnet-controller.service"]
    done = verify(*units)
    assert done.returncode == 0 and not done.stderr.strip(), done
    broken = tmp_path / "vnet-broken.service"
    broken.write_text(units[0].read_text().replace(VNET, "bin/vnet"))  # not an absolute path
    assert verify(broken).returncode != 0


def test_the_units_are_hardened_and_restart_only_what_a_restart_can_fix() -> None:
    for name in ("vnet-agent.service", "vnet-controller.service"):
        svc = service(UNITS / name)
        assert svc["Type"] == "notify" and svc["UMask"] == "0077", name
        assert svc["NoNewPrivileges"] == "yes" and svc["Restart"] == "on-failure", name
        assert str(EX_CONFIG) in svc["RestartPreventExitStatus"].split(), name
        assert svc["ExecStart"].startswith(INSTALLED), name
    controller = service(UNITS / "vnet-controller.service")
    assert controller["User"] == "vnet" and controller["CapabilityBoundingSet"] == ""
    assert controller["ProtectSystem"] == "strict" and controller["PrivateTmp"] == "yes"
    agent = service(UNITS / "vnet-agent.service")
    assert "User" not in agent  # root: namespaces are mounted in the initial namespaces
    caps = set(agent["CapabilityBoundingSet"].split())
    assert {"CAP_NET_ADMIN", "CAP_SYS_ADMIN"} <= caps and "CAP_SYS_MODULE" not in caps
    # a mount namespace of its own would hide its /run/netns mounts from the host and drop
    # them at a restart: none of the settings that imply one (systemd.exec(5))
    private = {"ProtectSystem", "ProtectHome", "PrivateTmp", "PrivateMounts", "ReadOnlyPaths",
               "ReadWritePaths", "ProtectKernelModules", "ProtectKernelLogs", "PrivateDevices",
               "ProtectKernelTunables", "ProtectControlGroups", "TemporaryFileSystem"}  # fmt: skip
    assert not private & set(agent), private & set(agent)


def test_the_etc_examples_are_valid_configurations() -> None:
    yaml = YAML(typ="safe")
    agent = AgentConfig.model_validate(yaml.load((ETC / "agent.yaml").read_text()))
    controller = ControllerConfig.model_validate(yaml.load((ETC / "controller.yaml").read_text()))
    inventory = load_topology(ETC / "inventory.yaml")
    assert agent.state_dir == Path("/var/lib/vnet/agent")
    assert controller.state_dir == Path("/var/lib/vnet/controller")
    assert {a.host for a in controller.agents} == {h.name for h in inventory.hosts}
    assert all(a.hostkey for a in controller.agents) and not controller.trust_on_first_use


@pytest.mark.parametrize(
    ("role", "text", "reason"),
    [
        ("agent", "users: []\n", "users"),
        ("agent", "host: [unclosed\n", "agent configuration"),
        ("controller", "state_dir: /tmp/x\nport: 0\n", "port"),
        ("controller", "state_dir: /tmp/x\nagents: [{host: r1, address: 192.0.2.1}]\n",
         "not pinned"),
    ],
)  # fmt: skip
def test_a_broken_configuration_exits_78_saying_why(
    tmp_path: Path, role: str, text: str, reason: str
) -> None:
    config = tmp_path / f"{role}.yaml"
    config.write_text(text.replace("/tmp/x", str(tmp_path / "state")))
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text("name: x\nhosts: [{name: r1}]\n")
    if "agents" in text:
        config.write_text(config.read_text() + f"inventory: {inventory}\n")
    argv = [VNET, role, "run", "--config", str(config)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert done.returncode == EX_CONFIG, done
    assert reason in done.stderr and "Traceback" not in done.stderr, done.stderr
    written = sorted((tmp_path / "state").rglob("*"))  # nothing made: no database, no token
    assert written == [], written


def test_the_controller_tells_systemd_it_is_ready(tmp_path: Path) -> None:
    notify = tmp_path / "notify"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(str(notify))
        sock.settimeout(60)
        with socket.socket() as free:
            free.bind(("127.0.0.1", 0))
            port = free.getsockname()[1]
        argv = [VNET, "controller", "run", "--state-dir", str(tmp_path / "s"), "--port", str(port)]
        env = {**os.environ, "NOTIFY_SOCKET": str(notify)}
        proc = subprocess.Popen(argv, env=env, stderr=subprocess.DEVNULL)
        try:
            message = sock.recv(4096).decode()
            ready = json.loads((tmp_path / "s" / "controller.ready").read_text())
        finally:
            proc.terminate()
            assert proc.wait(30) == 0
    assert message.startswith("READY=1\n") and ready["url"] in message, message
