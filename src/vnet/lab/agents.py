"""One `vnet agent` per emulated physical host, started and stopped by the lab.

The lab makes the substrate (hosts, underlay, networks, end hosts, the
management network); each host's agent owns that host's VRs. The lab hands
each agent its share of the file through the agent's public interface: an
AgentConfig file and a startup configuration (`vnet agent run --startup`),
which the agent validates like an edit. It learns what a running agent holds
over NETCONF, never from the agent's files. The file's VRs are then managed
exactly like VRs created later over NETCONF or RESTCONF. An agent is reached
on its host's management address, from inside the lab's management namespace.
"""

from __future__ import annotations

import json
import secrets
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vnet.lab.access import AGENT_CONFIG, handed_config, pinned_hostkey
from vnet.lab.record import LabRecord
from vnet.model import Topology, host_configs
from vnet.model.agent_config import AgentConfig, Ports, User
from vnet.model.host_pieces import with_guarantees
from vnet.model.management import MANAGEMENT_NODE, host_address
from vnet.model.underlay import underlay_addressing
from vnet.model.yang import host as yang_host
from vnet.model.yang.guarantees import SRV6, connections_of, locators_of
from vnet.model.yang.module import ROUTERS
from vnet.substrate.placement import underlay_port_name
from vnet.tools import processes
from vnet.tools.durable import replace_durably
from vnet.tools.wait import WaitTimeout, wait_until

if TYPE_CHECKING:
    from vnet.client import Endpoint

NETCONF_PORT = 830
RESTCONF_PORT = 443
STARTUP = "startup.json"  # the share of the file the lab hands over (RFC 7951)


def agent_scope(lab: str, host: str) -> str:
    return f"{lab}.{host}"


def agent_dir(record_dir: Path, lab: str, host: str) -> Path:
    return record_dir / lab / "agents" / host


def lab_password(topo: Topology, record: LabRecord) -> str:
    assert topo.management is not None
    return topo.management.password or record.agent_password or secrets.token_urlsafe(12)


def agent_config(topo: Topology, host: str, directory: Path, password: str) -> AgentConfig:
    assert topo.management is not None
    return AgentConfig(
        host=host,
        address=str(host_address(topo, host)),
        ports=Ports(netconf=NETCONF_PORT, restconf=RESTCONF_PORT),
        state_dir=directory,
        users=[User(name=topo.management.user, password=password)],
        scope=agent_scope(topo.name, host),
        namespace_prefix=f"vnet-{topo.name}-",
        vtep=str(underlay_addressing(topo).loopback[host]),
        provision_networks=False,
    )


def client_endpoint(topo_name: str, config: AgentConfig, timeout: float = 30) -> Endpoint:
    """How the lab reaches an agent: from the management namespace."""
    from vnet.client import Endpoint  # ncclient and httpx only when an agent is asked

    user = config.users[0]
    return Endpoint(
        address=config.address,
        port=config.ports.netconf,
        user=user.name,
        password=user.password,
        namespace=f"vnet-{topo_name}-{MANAGEMENT_NODE}",
        timeout=timeout,
        hostkey=pinned_hostkey(config.state_dir),
    )


def merge_file_routers(
    stored: dict[str, Any], from_file: dict[str, Any], previous_file_routers: set[str]
) -> dict[str, Any]:
    """The agent's new stored tree: the file's networks and VRs, plus VRs made through the agent.

    A VR the file defined before but no longer does is removed; VRs created
    over NETCONF/RESTCONF (never in the file) stay.
    """
    file_routers = {r["name"]: r for r in yang_host.routers_of(from_file)}
    kept = [
        r
        for r in yang_host.routers_of(stored)
        if r["name"] not in file_routers and r["name"] not in previous_file_routers
    ]
    tree = {k: v for k, v in from_file.items() if k != ROUTERS}
    routers = [*file_routers.values(), *kept]
    if routers:
        tree[ROUTERS] = {"router": routers}
    return tree


def merge_file_connections(
    stored: dict[str, Any], merged: dict[str, Any], previous_file_connections: set[str]
) -> dict[str, Any]:
    """`merged` (the file's share with the kept VRs) plus the connections made through the
    agent, as VRs are kept: a connection the file defined before but no longer does goes.
    Locators and connections made through the agent stay only while their VRs do."""
    routers = {r["name"] for r in yang_host.routers_of(merged)}
    file_conns = {c["name"] for c in connections_of(merged)}
    kept = [
        c
        for c in connections_of(stored)
        if c["name"] not in file_conns
        and c["name"] not in previous_file_connections
        and _piece_routers(c) <= routers
    ]
    file_prefixes = {x["prefix"] for x in locators_of(merged)}
    locators = [
        x
        for x in locators_of(stored)
        if x["prefix"] not in file_prefixes and x["router"] in routers
    ]
    if not kept and not locators:
        return merged
    srv6 = dict(merged.get(SRV6, {}))
    srv6["locator"] = [*locators_of(merged), *locators]
    srv6["connection"] = [*connections_of(merged), *kept]
    return {**merged, SRV6: {k: v for k, v in srv6.items() if v}}


def _piece_routers(conn: dict[str, Any]) -> set[str]:
    return {p["router"] for kind in ("ingress", "transit", "egress") for p in conn.get(kind, [])}


def stored_tree(topo: Topology, config: AgentConfig, directory: Path) -> dict[str, Any]:
    """What the agent holds: asked over NETCONF if it answers, else the startup
    configuration last handed to it (which it keeps unless that changes)."""
    from vnet.client import ConnectError, NetconfClient

    try:
        with NetconfClient(client_endpoint(topo.name, config, timeout=10)) as client:
            return client.get_config()
    except ConnectError:
        startup = directory / STARTUP
        return json.loads(startup.read_text()) if startup.exists() else {}


def prepare(
    topo: Topology,
    host: str,
    directory: Path,
    password: str,
    previous_file_routers: set[str],
    previous_file_connections: frozenset[str] = frozenset(),
) -> bool:
    """Write the agent's config and startup configuration; True if they changed
    (a running agent must then restart to take them)."""
    directory.mkdir(parents=True, exist_ok=True)
    directory.chmod(0o700)  # the config holds a password
    config = agent_config(topo, host, directory, password)
    stored = stored_tree(topo, config, directory)
    # every network, with MTU and VTEPs; its VRs; its link ends' classes and connection pieces
    share = yang_host.tree(with_guarantees(topo, host_configs(topo)[host], underlay_port_name))
    tree = merge_file_routers(stored, share, previous_file_routers)
    tree = merge_file_connections(stored, tree, previous_file_connections)
    config_path = directory / AGENT_CONFIG
    old_config = config_path.read_text() if config_path.exists() else None
    new_config = config.model_dump_json(indent=1)
    if tree == stored and new_config == old_config:
        return False
    # whole or not at all (an `up` killed here leaves what the next one compares against)
    replace_durably(config_path, new_config.encode())
    replace_durably(directory / STARTUP, json.dumps(tree, indent=1).encode())
    return True


# The agent (and the lab's controller) runs only once `release` says its PID is recorded:
# the shell waits for a line on its stdin, then execs the agent (same PID, same start time).
# If `vnet lab up` dies before that, the pipe closes, `read` fails and the shell exits: no
# agent runs unrecorded.
GATE = ["/bin/sh", "-c", 'read -r _ && exec "$0" "$@" </dev/null']


def start(topo: Topology, host: str, directory: Path) -> subprocess.Popen[bytes]:
    """Spawn the host's agent, held at its gate until `release(child)`."""
    handed_config(directory).ready_path.unlink(missing_ok=True)
    log = (directory / "agent.log").open("ab")
    (directory / "agent.log.offset").write_text(str(log.tell()))  # where this start's log begins
    return processes.spawn(
        f"vnet-{topo.name}-{host}",
        [
            *GATE,
            *processes.python_module("vnet"),
            "agent",
            "run",
            *("--config", str(directory / AGENT_CONFIG), "--startup", str(directory / STARTUP)),
        ],
        stdout=log,
        stderr=log,
        stdin=subprocess.PIPE,
        start_new_session=True,  # outlives `vnet lab up`; stopped by PID by `vnet lab down`
    )


def release(child: subprocess.Popen[bytes]) -> None:
    """Let a started agent run: call once its PID is in the lab's record on disk."""
    assert child.stdin is not None
    child.stdin.write(b"recorded\n")
    child.stdin.close()


def wait_ready(
    started: dict[str, tuple[subprocess.Popen[bytes], Path]], timeout: float = 60
) -> None:
    """Until every agent has written its ready file, serving every front-end it was
    configured for; an agent that exits ends the wait."""
    pending = dict(started)
    configs = {host: handed_config(directory) for host, (_, directory) in started.items()}

    def all_ready() -> bool:
        for host in list(pending):
            if serves_all(configs[host]):
                del pending[host]
        return not pending

    def exited() -> str | None:
        for host, (proc, directory) in pending.items():
            if proc.poll() is not None:
                offset = int((directory / "agent.log.offset").read_text())
                tail = (directory / "agent.log").read_bytes()[offset:].decode()[-2000:]
                return f"the agent of host {host} exited with {proc.returncode}:\n{tail}"
        return None

    try:
        wait_until(all_ready, timeout, "agents ready", interval=0.05, give_up=exited)
    except WaitTimeout as err:
        if reason := exited():
            raise RuntimeError(reason) from None
        raise RuntimeError(
            f"agents of {', '.join(pending)} not ready after {timeout:.0f} s"
        ) from err


def serves_all(config: AgentConfig) -> bool:
    """The agent says it is ready and serves every front-end its config asks for."""
    ready = config.ready()
    return ready is not None and set(config.served_frontends) <= set(ready.frontends)
