"""A real `vnet agent run` inside a namespace of its own, for front-end tests.

The agent owns everything under its scope; stopping it by PID and removing
its namespaces (marked with that scope) leaves nothing behind.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vnet.lab import processes
from vnet.substrate import Kernel, KernelState, nsfs, observe, plan
from vnet.substrate.apply import apply

from .conftest import VNET, unique_lab

NETWORK_XML = """<config><virtual-networks xmlns="urn:vnet:yang:vnet-router"><network>
<name>n1</name><tenant>a</tenant><vni>10</vni><ipv4-prefix>10.1.0.0/24</ipv4-prefix>
<ipv6-prefix>fd00:1::/64</ipv6-prefix></network><network><name>n2</name><tenant>a</tenant>
<vni>11</vni><ipv4-prefix>10.2.0.0/24</ipv4-prefix></network></virtual-networks></config>"""


@dataclass
class AgentUnderTest:
    scope: str
    namespace: str  # the "physical host" the agent runs in
    address: str
    netconf_port: int
    restconf_port: int
    user: str
    password: str
    state_dir: Path
    proc: subprocess.Popen[bytes]

    @property
    def prefix(self) -> str:
        return f"vnet-{self.scope}-"

    def node_ns(self, vr: str) -> str:
        return self.prefix + vr


def _wait_ready(state_dir: Path, proc: subprocess.Popen[bytes], timeout: float = 20) -> None:
    ready = state_dir / "agent.ready"
    deadline = time.monotonic() + timeout
    while not ready.exists():
        if proc.poll() is not None:
            raise AssertionError(
                f"agent exited with {proc.returncode}: {(state_dir / 'agent.log').read_text()}"
            )
        if time.monotonic() > deadline:
            raise AssertionError("agent did not become ready in time")
        time.sleep(0.05)


def start_agent_process(a: AgentUnderTest, frontends: str) -> subprocess.Popen[bytes]:
    (a.state_dir / "agent.ready").unlink(missing_ok=True)  # a killed agent leaves it behind
    log = (a.state_dir / "agent.log").open("ab")
    proc = processes.spawn(
        a.namespace,
        [
            VNET,
            "agent",
            "run",
            "--config",
            str(a.state_dir / "agent.yaml"),
            "--frontends",
            frontends,
        ],
        stdout=log,
        stderr=log,
    )
    _wait_ready(a.state_dir, proc)
    return proc


def stop_agent(a: AgentUnderTest) -> None:
    processes.stop_child(a.proc, grace=5)
    (a.state_dir / "agent.ready").unlink(missing_ok=True)


@contextmanager
def running_agent(
    tmp: Path, frontends: str = "netconf,restconf", snmp: dict[str, Any] | None = None
) -> Iterator[AgentUnderTest]:
    """`snmp`: the agent configuration's `snmp:` section (communities, users, targets)."""
    scope = unique_lab()
    host_ns = f"vnet-{scope}-host"
    nsfs.create(host_ns)
    subprocess.run(["ip", "-n", host_ns, "link", "set", "lo", "up"], check=True)
    state_dir = tmp / f"agent-{scope}"
    state_dir.mkdir()
    config = {
        "host": "h1",
        "address": "127.0.0.1",
        "state_dir": str(state_dir),
        "scope": scope,
        "namespace_prefix": f"vnet-{scope}-",
        "ports": {"netconf": 8830, "restconf": 8443},
        "restconf_plain_http": False,
        "users": [{"name": "admin", "password": "s3cret"}],
    }
    if snmp is not None:
        config["snmp"] = snmp
    (state_dir / "agent.yaml").write_text(json.dumps(config))  # JSON is YAML
    a = AgentUnderTest(scope, host_ns, "127.0.0.1", 8830, 8443, "admin", "s3cret", state_dir, None)  # type: ignore[arg-type]
    try:
        a.proc = start_agent_process(a, frontends)
        yield a
    finally:
        if a.proc is not None:
            stop_agent(a)
        # remove what the agent made (its scope's marks), then its host namespace
        with Kernel() as k:
            obs = observe(k, scope, f"vnet-{scope}-")
            apply(plan(KernelState(), obs.state), k)
        nsfs.remove(host_ns)
        leftovers = nsfs.list_names(f"vnet-{scope}-")
        assert not leftovers, f"agent test left namespaces: {leftovers}"
