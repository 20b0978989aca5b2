"""Backup and upgrade rehearsed as docs/deploy.md says: the previous release (the commit
before packaging by role) installed from its own wheel makes an agent's state (a network and
a VR made over NETCONF, its SSH host key) and a controller's (its database through that
release's migrations, inventory, provider and tenant tokens); both are stopped and backed up
with tar; the new wheel is installed over it, `vnet controller migrate` runs Alembic, and the
new agent and controller start on that state: nothing is lost, the host key is the one
pinned before, old tokens still work (now over HTTPS)."""

from __future__ import annotations

import json
import secrets
import subprocess
import tarfile
from pathlib import Path
from typing import Any

from tests.deployment_support import Machine, Site
from tests.install_support import ENV, UV, build, install
from vnet.tools import processes
from vnet.tools.wait import wait_until

from .agent_support import NETWORK_XML, netconf_connect
from .conftest import ROOT, require_tools

# The previous release: the last commit before the packages by role. Move it forward with
# each release, so every upgrade path that users take is rehearsed.
PREVIOUS = "6602323b3cec4a056939dffbe4aa12eee2a17656"
NS_ROUTERS = "urn:vnet:yang:vnet-router"
VR = (
    f'<config><routers xmlns="{NS_ROUTERS}"><router><name>kept</name>'
    "<interface><name>eth0</name><network>n1</network><ipv4>10.1.0.254/24</ipv4></interface>"
    "</router></routers></config>"
)
INVENTORY = """name: upgrade
hosts: [{name: r1}, {name: r2}]
links: [{a: r1, b: r2, rate: 100mbit}]
tenants: [{name: acme, routing: auto}]
networks: [{name: lan, tenant: acme, vni: 700, ipv4: 10.70.0.0/24, ipv6: "fd00:70::/64"}]
"""


def previous_wheel(out: Path) -> Path:
    """The previous release's wheel, built from its commit as `make dist` built it then."""
    source = out / "source"
    source.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", PREVIOUS], check=True, capture_output=True
    )
    subprocess.run(["tar", "-x", "-C", str(source)], input=archive.stdout, check=True)
    subprocess.run(
        [UV, "build", "-q", "--wheel", "--out-dir", str(out), str(source)],
        check=True,
        env=ENV,
        timeout=600,
    )
    return next(out.glob("vnet-*.whl"))


def start_agent(site: Site, ns: str, vnet: Path, config: Path, state: Path) -> Any:
    (state / "agent.ready").unlink(missing_ok=True)
    log = (site.root / "agent.log").open("ab")
    proc = processes.spawn(
        ns,
        [str(vnet), "agent", "run", "--config", str(config)],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    site.children.append(proc)
    wait_until((state / "agent.ready").exists, 120, "the agent ready", give_up=lambda: proc.poll())
    return proc


def start_controller(
    site: Site, vnet: Path, config: Path, state: Path
) -> tuple[Any, dict[str, Any]]:
    (state / "controller.ready").unlink(missing_ok=True)
    log = (site.root / "controller.log").open("ab")
    argv = [str(vnet), "controller", "run", "--config", str(config)]
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=ENV)
    site.children.append(proc)
    ready = state / "controller.ready"
    wait_until(ready.exists, 120, "the controller ready", give_up=lambda: proc.poll())
    return proc, json.loads(ready.read_text())


def run(*argv: str | Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([str(a) for a in argv], capture_output=True, text=True, env=ENV)
    assert done.returncode == 0, done
    return done


def stop(site: Site, proc: Any) -> None:
    processes.stop_child(proc, grace=15)
    site.children.remove(proc)


def api(ready: dict[str, Any], token: str, path: str) -> Any:
    ca = ["--cacert", ready["certificate"]] if ready.get("certificate") else []
    done = subprocess.run(
        [
            "curl",
            "-sS",
            "--fail-with-body",
            *ca,
            "-H",
            f"Authorization: Bearer {token}",
            ready["url"] + "/api/v1" + path,
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done
    return json.loads(done.stdout)


def routers(ns: str, password: str) -> str:
    with netconf_connect(ns, "127.0.0.1", 8830, "admin", password) as m:
        return m.get_config("running").data_xml


def test_upgrade_from_the_previous_release_keeps_everything(tmp_path: Path) -> None:
    require_tools("curl", "tar")
    root = tmp_path
    old_bin = install(previous_wheel(root / "old"), "bench", root / "opt")  # then: one package
    site = Site(f"vu{secrets.token_hex(2)}", root / "machines")
    try:
        rehearse(site, root, old_bin)
    finally:
        site.close()


def write_configs(site: Site, router: Machine, root: Path, password: str) -> tuple[Path, Path]:
    """The agent's and the controller's configuration files (kept across the upgrade)."""
    agent = {
        "host": "r1",
        "state_dir": str(router.var / "agent"),
        "ports": {"netconf": 8830, "restconf": 8443},
        "users": [{"name": "admin", "password": password}],
        "scope": f"{site.tag}r1",
        "namespace_prefix": f"{router.ns}-",
    }
    (router.etc / "agent.yaml").write_text(json.dumps(agent))
    (root / "inventory.yaml").write_text(INVENTORY)
    inventory = str(root / "inventory.yaml")
    settings = {"state_dir": str(root / "controller"), "port": 18480, "inventory": inventory}
    (root / "controller.yaml").write_text(json.dumps(settings))
    return router.etc / "agent.yaml", root / "controller.yaml"


def rehearse(site: Site, root: Path, bin_dir: Path) -> None:
    router = site.machine("r1")
    password = secrets.token_hex(8)
    agent_yaml, controller_yaml = write_configs(site, router, root, password)
    agent_state, controller_state = router.var / "agent", root / "controller"
    vnet = bin_dir / "vnet"

    # the previous release makes its state
    agent = start_agent(site, router.ns, vnet, agent_yaml, agent_state)
    with netconf_connect(router.ns, "127.0.0.1", 8830, "admin", password) as m:
        m.edit_config(target="running", config=NETWORK_XML)
        m.edit_config(target="running", config=VR)
    before = routers(router.ns, password)
    key_before = (agent_state / "ssh_host_ed25519_key").read_bytes()
    old_controller, old = start_controller(site, vnet, controller_yaml, controller_state)
    assert old["url"].startswith("http://")  # that release served plain HTTP
    provider = Path(old["provider_token_file"]).read_text().strip()
    create = ["controller", "token", "create", "--config", str(controller_yaml)]
    tenant = run(vnet, *create, "--role", "tenant", "--tenant", "acme").stdout.strip()
    held = {p: api(old, provider, p) for p in ("/hosts", "/links", "/networks", "/tenants")}

    # docs/deploy.md, "Backup and upgrade": stop, back up, install, migrate, start
    stop(site, old_controller)
    stop(site, agent)
    run("tar", "-C", agent_state.parent, "-czf", root / "agent.tgz", "agent")
    run("tar", "-C", controller_state.parent, "-czf", root / "controller.tgz", "controller")
    with tarfile.open(root / "agent.tgz") as backup:
        assert backup.getmember("agent/ssh_host_ed25519_key").isfile()
    wheel = build(root / "new")
    python = str(bin_dir / "python")
    upgrade = ["pip", "install", "-q", "--reinstall-package", "vnet", "--python", python]
    run(UV, *upgrade, f"{wheel}[all]")
    migrated = run(vnet, "controller", "migrate", "--config", str(controller_yaml))
    assert migrated.returncode == 0 and "current schema" in migrated.stdout, migrated

    start_agent(site, router.ns, vnet, agent_yaml, agent_state)
    assert routers(router.ns, password) == before  # the datastore, as it was
    assert (agent_state / "ssh_host_ed25519_key").read_bytes() == key_before  # pins stay valid
    _, new = start_controller(site, vnet, controller_yaml, controller_state)
    assert new["url"].startswith("https://") and new["certificate"]
    assert {p: as_before(api(new, provider, p), held[p]) for p in held} == held
    assert api(new, tenant, "/whoami") == {"role": "tenant", "tenant": "acme"}


def as_before(now: Any, before: Any) -> Any:
    """`now` with only the fields `before` had: a release may add fields to an answer (a
    client that knows only the old ones reads the same), never drop or change one."""
    if isinstance(before, dict) and isinstance(now, dict):
        return {k: as_before(now[k], v) if k in now else None for k, v in before.items()}
    if isinstance(before, list) and isinstance(now, list) and len(now) == len(before):
        return [as_before(n, b) for n, b in zip(now, before, strict=True)]
    return now
