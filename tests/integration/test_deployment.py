"""A deployment rehearsed without the lab, step by step as docs/deploy.md walks an operator
through it: three routers (bare namespaces; veth pairs as their underlay NICs ul-<peer> and
their management NIC), the built wheel installed per role, each agent started from its
/etc/vnet/agent.yaml as its unit runs it, its host key pinned in the controller's
configuration; two controllers (the second on another machine) on one PostgreSQL, as user
nobody without capabilities, over HTTPS; then, with the operator's commands through the API,
a tenant, its networks (VXLAN between the agents), VRs and end hosts (namespaces the test
makes, attached to the network's bridge), a guaranteed connection, and iperf3 at its rate."""

from __future__ import annotations

import json
import secrets
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from tests.deployment_support import (
    ETC_EXAMPLES,
    Machine,
    Site,
    inside,
    notify_socket,
    owned_by,
    service_argv,
    wait_ready,
)
from tests.install_support import build, install
from vnet.lab.topology_file import load_topology
from vnet.model.underlay import underlay_addressing
from vnet.tools import postgres
from vnet.tools.iperf3 import Iperf3Server, run_udp

from .conftest import require_tools

ROUTERS = ("r1", "r2", "r3")  # in a line: r1 - r2 - r3
LINKS = (("r1", "r2"), ("r2", "r3"))
LOOPBACK = {"r1": "10.200.0.1", "r2": "10.200.0.2", "r3": "10.200.0.3"}  # the VTEPs
MGMT = {"ctl": "192.0.2.1", "ctl2": "192.0.2.2", "r1": "192.0.2.11", "r2": "192.0.2.12",
        "r3": "192.0.2.13"}  # fmt: skip
SERVICE_USER = ("nobody", "nogroup")  # the controller unit's User=vnet on a real machine
YAML_SAFE = YAML(typ="safe")


@pytest.fixture(scope="module")
def root() -> Iterator[Path]:
    """A folder every user may traverse (the controller runs as nobody from the install)."""
    path = Path(tempfile.mkdtemp(prefix="vnet-deploy-"))
    path.chmod(0o755)
    yield path
    subprocess.run(["rm", "-rf", str(path)], check=False)


@pytest.fixture(scope="module")
def installs(root: Path) -> dict[str, Path]:
    wheel = build(root / "dist")
    return {
        role: install(wheel, role, root / "opt" / role).parent for role in ("agent", "controller")
    }


def write(path: Path, data: dict[str, Any], mode: int) -> None:
    with path.open("w") as f:
        YAML().dump(data, f)
    path.chmod(mode)


def example(name: str) -> dict[str, Any]:
    return dict(YAML_SAFE.load((ETC_EXAMPLES / name).read_text()))


# -- the machines ------------------------------------------------------------------------
def build_machines(site: Site) -> dict[str, Machine]:
    machines = {name: site.machine(name) for name in ("ctl", "ctl2", *ROUTERS)}
    switch = machines["ctl"]  # the management switch lives on the controller's machine
    inside(switch.ns, "ip", "link", "add", "sw0", "type", "bridge")
    inside(switch.ns, "ip", "addr", "add", f"{MGMT['ctl']}/24", "dev", "sw0")
    inside(switch.ns, "ip", "link", "set", "sw0", "up")
    for name in ("ctl2", *ROUTERS):
        m = machines[name]
        site.cable(m, switch, "mgmt0", f"p-{name}")
        inside(switch.ns, "ip", "link", "set", f"p-{name}", "master", "sw0")
        inside(m.ns, "ip", "addr", "add", f"{MGMT[name]}/24", "dev", "mgmt0")
    for j, (a, b) in enumerate(LINKS):  # docs/deploy.md: NICs named ul-<peer>, /31 each
        site.cable(machines[a], machines[b], f"ul-{b}", f"ul-{a}")
        inside(machines[a].ns, "ip", "addr", "add", f"10.200.0.{128 + 2 * j}/31", "dev", f"ul-{b}")
        inside(machines[b].ns, "ip", "addr", "add", f"10.200.0.{129 + 2 * j}/31", "dev", f"ul-{a}")
    routes = {"r1": ("10.200.0.129",) * 2, "r2": ("10.200.0.128", "10.200.0.131"),
              "r3": ("10.200.0.130",) * 2}  # fmt: skip
    for name in ROUTERS:
        m = machines[name]
        inside(m.ns, "ip", "addr", "add", f"{LOOPBACK[name]}/32", "dev", "lo")
        inside(m.ns, "sysctl", "-qw", "net.ipv4.ip_forward=1")
        others = [r for r in ROUTERS if r != name]
        for other, via in zip(others, routes[name], strict=True):
            inside(m.ns, "ip", "route", "add", f"{LOOPBACK[other]}/32", "via", via)
    return machines


# -- the agents ----------------------------------------------------------------------------
def agent_config(site: Site, m: Machine, controller_key: str) -> Path:
    config = example("agent.yaml")
    config.update(
        host=m.name,
        address=MGMT[m.name],
        vtep=LOOPBACK[m.name],
        state_dir=str(m.var / "agent"),
        users=[{"name": "vnet", "authorized_keys": [controller_key]}],
        # only because these machines share one kernel: each agent's objects apart
        scope=f"{site.tag}{m.name}",
        namespace_prefix=f"{m.ns}-",
    )
    path = m.etc / "agent.yaml"
    write(path, config, 0o600)
    return path


def start_agent(site: Site, m: Machine, prefix: Path) -> str:
    """The agent's key (`vnet agent hostkey`, run on the router), then its service."""
    vnet = str(prefix / "bin" / "vnet")
    hostkey = inside(m.ns, vnet, "agent", "hostkey", "--config", str(m.etc / "agent.yaml"))
    log, notify = m.root / "agent.log", m.root / "notify"
    with notify_socket(notify) as sock:
        proc = site.start(service_argv("vnet-agent.service", prefix, m.etc), m.ns, log, notify)
        wait_ready(sock, proc, log)
    return hostkey.stdout.strip()


# -- the controllers -----------------------------------------------------------------------
def controller_files(m: Machine, database: str, agents: list[dict[str, Any]], key: Path) -> None:
    inventory = example("inventory.yaml")
    inventory.update(
        hosts=[{"name": r} for r in ROUTERS],
        links=[{"a": a, "b": b, "rate": "100mbit"} for a, b in LINKS],
    )
    inventory.pop("tenants")  # the tenant comes through the API
    write(m.etc / "inventory.yaml", inventory, 0o640)
    config = example("controller.yaml")
    config.update(
        state_dir=str(m.var / "controller"),
        database=database,
        listen=MGMT[m.name],
        inventory=str(m.etc / "inventory.yaml"),
        agents=[{**a, "key_file": str(key)} for a in agents],
    )
    write(m.etc / "controller.yaml", config, 0o640)
    (m.var / "controller").mkdir(mode=0o700)
    owned_by(m.var, *SERVICE_USER)
    for path in m.etc.iterdir():  # root:vnet 0640 on a real machine
        owned_by(path, "root", SERVICE_USER[1])


def start_controller(site: Site, m: Machine, prefix: Path) -> dict[str, Any]:
    log, notify = m.root / "controller.log", m.root / "notify"
    argv = service_argv("vnet-controller.service", prefix, m.etc, run_as=SERVICE_USER)
    with notify_socket(notify) as sock:
        proc = site.start(argv, m.ns, log, notify)
        wait_ready(sock, proc, log)
    ready = json.loads((m.var / "controller" / "controller.ready").read_text())
    assert ready["url"] == f"https://{MGMT[m.name]}:8480", ready
    assert "SHA-256 fingerprint" in log.read_text()  # what an operator compares
    return ready


def operator(m: Machine, prefix: Path, ready: dict[str, Any], *args: str) -> Any:
    """A `vnet` command of docs/deploy.md on the controller's machine, its answer as JSON."""
    env = [
        f"VNET_CONTROLLER={ready['url']}",
        f"VNET_CONTROLLER_TOKEN_FILE={ready['provider_token_file']}",
        f"VNET_CONTROLLER_CA={ready['certificate']}",
    ]
    done = inside(m.ns, "env", *env, str(prefix / "bin" / "vnet"), *args, "--json")
    return json.loads(done.stdout)


# -- the tenant's machines -----------------------------------------------------------------
def customer(
    site: Site, router: Machine, name: str, vni: int, addresses: list[str], gateways: list[str]
) -> str:
    """A tenant's machine: a namespace cabled to the network's bridge vb<VNI> on `router`."""
    pc = site.machine(name)
    site.cable(router, pc, f"c-{name}", "eth0", mtu=1300)
    inside(router.ns, "ip", "link", "set", f"c-{name}", "master", f"vb{vni}")
    for addr, via in zip(addresses, gateways, strict=True):
        inside(pc.ns, "ip", "addr", "add", addr, "dev", "eth0", *(["nodad"] if ":" in addr else []))
        inside(pc.ns, "ip", "route", "add", "default", "via", via)
    return pc.ns


def test_a_deployment_without_the_lab(root: Path, installs: dict[str, Path]) -> None:
    require_tools("iperf3", "setpriv", "ssh-keygen")
    site = Site(f"vd{secrets.token_hex(2)}", root / "machines")
    with postgres.running() as pg:
        try:
            deploy_and_carry_traffic(site, pg, installs)
        finally:
            site.close()


def deploy_and_carry_traffic(site: Site, pg: postgres.Postgres, installs: dict[str, Path]) -> None:
    machines = build_machines(site)
    ctl, ctl2 = machines["ctl"], machines["ctl2"]
    key = ctl.etc / "controller_ed25519"
    inside(ctl.ns, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "vnet", "-f", str(key))
    public = (ctl.etc / "controller_ed25519.pub").read_text().strip()
    agents = []
    for name in ROUTERS:
        agent_config(site, machines[name], public)
        hostkey = start_agent(site, machines[name], installs["agent"])
        agents.append({"host": name, "address": MGMT[name], "user": "vnet", "hostkey": hostkey})
    database = pg.create_database("vnet")
    key.chmod(0o640)  # root:vnet, read by the controller's user
    ctl2.etc.joinpath("controller_ed25519").write_bytes(key.read_bytes())
    ctl2.etc.joinpath("controller_ed25519").chmod(0o640)
    for m in (ctl, ctl2):
        controller_files(m, database, agents, m.etc / "controller_ed25519")
    inventory = load_topology(ctl.etc / "inventory.yaml")
    assert underlay_addressing(inventory).loopback == LOOPBACK  # the rule agent.yaml states
    ready = start_controller(site, ctl, installs["controller"])
    other = start_controller(site, ctl2, installs["controller"])
    assert stat.S_IMODE(Path(ready["provider_token_file"]).stat().st_mode) == 0o600

    run = lambda *args: operator(ctl, installs["controller"], ready, *args)  # noqa: E731
    run("tenant", "create", "acme")
    # IPv6 in every network: connections are SRv6 tunnels between the tenant's VRs
    run("net", "create", "core", "--vni", "500", "--ipv4", "10.50.0.0/24",
        "--ipv6", "fd00:50::/64", "--tenant", "acme")  # fmt: skip
    for k in (1, 3):
        run("net", "create", f"lan{k}", "--vni", f"50{k}", "--ipv4", f"10.50.{k}.0/24",
            "--ipv6", f"fd00:50:{k}::/64", "--host", f"r{k}", "--tenant", "acme")  # fmt: skip
    for k, router in enumerate(ROUTERS, start=1):
        lan = ["--interface", f"lan{k}=10.50.{k}.254/24,fd00:50:{k}::fe/64"] if k != 2 else []
        run("net", "vr", f"v{k}", "--host", router, "--interface",
            f"core=10.50.0.{k}/24,fd00:50::{k}/64", *lan, "--tenant", "acme")  # fmt: skip
    for k in (1, 3):
        run("net", "endhost", f"pc{k}", "--host", f"r{k}", "--interface",
            f"lan{k}=10.50.{k}.1/24,fd00:50:{k}::1/64", "--gateway", f"10.50.{k}.254",
            "--gateway", f"fd00:50:{k}::fe", "--tenant", "acme")  # fmt: skip
    # the core network is VXLAN on every router, towards the other two VTEPs
    for name in ROUTERS:
        fdb = inside(machines[name].ns, "bridge", "fdb", "show", "dev", "vx500").stdout
        assert all(LOOPBACK[o] in fdb for o in ROUTERS if o != name), (name, fdb)
    pc1, pc3 = (
        customer(site, machines[f"r{k}"], f"pc{k}", 500 + k,
                 [f"10.50.{k}.1/24", f"fd00:50:{k}::1/64"], [f"10.50.{k}.254", f"fd00:50:{k}::fe"])
        for k in (1, 3)
    )  # fmt: skip
    answer = run("conn", "request", "video", "pc1", "pc3", "--bandwidth", "20mbit",
                 "--bidirectional", "--tenant", "acme")  # fmt: skip
    assert answer["connection"]["path"] == list(ROUTERS), answer
    # the second controller, on the same database, sees what the first made
    seen = operator(ctl2, installs["controller"], other, "conn", "list", "--tenant", "acme")
    assert [(c["name"], c["status"]) for c in seen] == [("video", "established")], seen
    # the guarantee counts the tunnels' headers on the wire: goodput a little under 20
    with Iperf3Server(pc3, port=5201):
        at_rate, _ = run_udp(pc1, "10.50.3.1", 20, duration=3, length=1200, port=5201)
    with Iperf3Server(pc3, port=5201):
        beyond, _ = run_udp(pc1, "10.50.3.1", 40, duration=3, length=1200, port=5201)
    assert 15 < at_rate.mbit <= 20.5 and at_rate.loss_percent < 20, at_rate
    assert 12 < beyond.mbit < 24, beyond  # held at the guarantee
