"""The built wheel installed by role into clean virtual environments (`make dist`; uv venv;
uv pip install the local wheel with one extra), each running what its role runs: the agent
serving NETCONF from a configuration file, the controller serving its API, the benchmarks'
commands. The agent's install holds no SQL, Jinja or plotting library, and its process
imports nothing of the controller, the benchmarks or the lab; a command whose extra is
missing names the extra to install."""

from __future__ import annotations

import json
import secrets
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.install_support import build, install, installed
from vnet.lab.sandbox import HostSandbox
from vnet.tools.wait import wait_until

from .agent_support import netconf_connect
from .console_support import free_port

CONTROLLER_ONLY = {"sqlalchemy", "alembic", "psycopg", "jinja2", "ncclient", "httpx"}
BENCH_ONLY = {"numpy", "scipy", "matplotlib"}
# what `vnet agent run` loads with every front-end, printed by the installed interpreter
AGENT_IMPORTS = """
import json, sys
import vnet.cli.agent_cmds, vnet.agent.main
from vnet.agent.frontends import FRONTENDS
for load in FRONTENDS.values():
    load()
print(json.dumps(sorted(sys.modules)))
"""


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(tmp_path_factory.mktemp("dist"))


@pytest.fixture
def sandbox() -> Iterator[HostSandbox]:
    host = HostSandbox()
    host.create()
    yield host
    assert not host.cleanup()


def run(*argv: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=120)


def test_agent_role_serves_netconf_without_the_controllers_libraries(
    wheel: Path, tmp_path: Path, sandbox: HostSandbox
) -> None:
    bin_dir = install(wheel, "agent", tmp_path / "venv")
    assert not installed(bin_dir) & (CONTROLLER_ONLY | BENCH_ONLY)
    loaded = json.loads(run(bin_dir / "python", "-c", AGENT_IMPORTS).stdout)
    foreign = [m for m in loaded if m.split(".")[:2] in (["vnet", "controller"], ["vnet", "bench"])]
    assert not foreign and "vnet.agent.netconf.server" in loaded, foreign

    password = secrets.token_hex(8)
    config = tmp_path / "agent.yaml"
    state = tmp_path / "state"
    config.write_text(
        json.dumps(
            {
                "host": "r1",
                "state_dir": str(state),
                "scope": sandbox.scope,
                "namespace_prefix": sandbox.prefix,
                "ports": {"netconf": 8830, "restconf": 8443, "snmp": 8161},
                "users": [{"name": "admin", "password": password}],
            }
        )
    )
    log = tmp_path / "agent.log"
    proc = sandbox.spawn([str(bin_dir / "vnet"), "agent", "run", "--config", str(config)], log)
    sandbox.wait("vnet agent", (state / "agent.ready").exists, proc, log)
    with netconf_connect(sandbox.namespace, "127.0.0.1", 8830, "admin", password) as m:
        library = '<yang-library xmlns="urn:ietf:params:xml:ns:yang:ietf-yang-library"/>'
        assert "vnet-router" in m.get(filter=("subtree", library)).data_xml


@pytest.mark.parametrize(
    ("argv", "extra"),
    [
        (("controller", "run", "--state-dir", "{tmp}/c"), "controller"),
        (
            ("conn", "list", "--controller", "https://127.0.0.1:1", "--token-file", "{tmp}/t"),
            "controller",
        ),
        (("bench", "netconf", "--out", "{tmp}/out"), "bench"),
    ],
)
def test_a_command_without_its_extra_names_it(
    wheel: Path, tmp_path_factory: pytest.TempPathFactory, argv: tuple[str, ...], extra: str
) -> None:
    bin_dir = agent_install(wheel, tmp_path_factory)
    tmp = tmp_path_factory.mktemp("cmd")
    done = run(bin_dir / "vnet", *(a.format(tmp=tmp) for a in argv))
    assert done.returncode == 1, done
    assert f"pip install 'vnet[{extra}]'" in done.stderr and "Traceback" not in done.stderr, done


_AGENT_INSTALL: dict[str, Path] = {}


def agent_install(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One agent-only install shared by the refusals (each install takes seconds)."""
    if "bin" not in _AGENT_INSTALL:
        _AGENT_INSTALL["bin"] = install(wheel, "agent", tmp_path_factory.mktemp("agent") / "v")
    return _AGENT_INSTALL["bin"]


def test_controller_role_serves_its_api(wheel: Path, tmp_path: Path) -> None:
    bin_dir = install(wheel, "controller", tmp_path / "venv")
    assert not installed(bin_dir) & BENCH_ONLY
    assert "pyroute2" not in installed(bin_dir)  # the controller never touches a kernel
    port = free_port()
    state = tmp_path / "state"
    argv = [bin_dir / "vnet", "controller", "run", "--state-dir", state, "--port", str(port)]
    log = (tmp_path / "controller.log").open("wb")
    proc = subprocess.Popen([str(a) for a in argv], stdout=log, stderr=subprocess.STDOUT)
    try:
        ready = state / "controller.ready"
        wait_until(ready.exists, 60, "the controller ready", give_up=lambda: proc.poll())
        info = json.loads(ready.read_text())
        token = Path(info["provider_token_file"]).read_text().strip()
        done = run(
            *curl_args(info), "-H", f"Authorization: Bearer {token}", info["url"] + "/api/v1/whoami"
        )
        assert json.loads(done.stdout)["role"] == "provider", done
    finally:
        proc.terminate()
        proc.wait(30)


def curl_args(ready: dict[str, str]) -> list[str]:
    """curl, verifying the controller's certificate when it serves HTTPS."""
    ca = ready.get("certificate")
    return ["curl", "-sS", "--fail-with-body", *(["--cacert", ca] if ca else [])]


def test_bench_role_lists_and_explains_its_benchmarks(wheel: Path, tmp_path: Path) -> None:
    bin_dir = install(wheel, "bench", tmp_path / "venv")
    assert installed(bin_dir) >= BENCH_ONLY
    for name in ("build", "netconf", "qos", "controller", "report"):
        done = run(bin_dir / "vnet", "bench", name, "--help")
        assert done.returncode == 0 and "Usage: vnet bench " + name in done.stdout, done
