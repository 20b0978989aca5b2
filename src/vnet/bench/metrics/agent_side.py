"""The agent's side: one real `vnet agent run` holding N VRs and M connections' pieces.

The agent serves NETCONF and RESTCONF in a sandbox namespace of its own. Its
configuration is loaded over NETCONF (vnet.client), in edits of BATCH, as a client
would: the two VRs and locators of vnet.bench.agent.connection's base, N VRs with one
interface each on a network of their own, then M SRv6 connections' pieces (ingress
steering, segment list and shaper on r1, End.DX4 on r2), as the controller sends them.
Then its `GET /metrics` and, for reference, `GET /restconf/data` are scraped over HTTPS
(HTTP Basic, the agent's self-signed certificate pinned).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx

from vnet.bench.agent.connection import P, base, connection
from vnet.bench.agent.sandbox import endpoint, sandboxed_agent
from vnet.bench.contract import BenchError
from vnet.bench.metrics.scrape import Target
from vnet.bench.results import BenchResult
from vnet.client import NetconfClient
from vnet.client.controller import tls_verify
from vnet.client.restconf import JSON
from vnet.lab.sandbox import ADDRESS, SandboxAgent

BATCH = 100  # VRs or connections per edit-config
NETWORK = {"name": "nv", "tenant": "a", "vni": 20, "ipv4-prefix": "10.64.0.0/16"}
METRICS, DATA = "agent /metrics", "agent /restconf/data"
TIMEOUT = 600.0  # seconds: /restconf/data of 1000 VRs on a busy machine


def vr(k: int) -> dict[str, Any]:
    """VR k with one interface on the VRs' own network."""
    address = f"10.64.{k // 200}.{k % 200 + 1}/16"
    return {"name": f"v{k}", "interface": [{"name": "eth0", "network": "nv", "ipv4": address}]}


def batches(count: int, size: int = BATCH) -> Iterator[range]:
    """1..count in ranges of `size`."""
    for first in range(1, count + 1, size):
        yield range(first, min(first + size, count + 1))


def load(agent: SandboxAgent, vrs: int, connections: int, step: Callable[[str], None]) -> float:
    """The configuration, edit by edit; returns its seconds."""
    start = time.perf_counter()
    tree = base()
    tree[f"{P}virtual-networks"]["network"].append(NETWORK)
    with NetconfClient(endpoint(agent)) as client:
        client.edit_tree(tree)
        for part in batches(vrs):
            step(f"VRs {part.start}-{part.stop - 1} of {vrs}")
            client.edit_tree({f"{P}routers": {"router": [vr(k) for k in part]}})
        for part in batches(connections):
            step(f"connections {part.start}-{part.stop - 1} of {connections}")
            client.edit_tree({f"{P}srv6": {"connection": [connection(k) for k in part]}})
    return time.perf_counter() - start


def check(data: dict[str, Any], vrs: int, connections: int) -> None:
    """The agent holds what was loaded: N + 2 VRs (r1, r2) and M connections."""
    data = data.get("ietf-restconf:data", {})
    routers = len(data.get(f"{P}routers", {}).get("router", []))
    found = len(data.get(f"{P}srv6", {}).get("connection", []))
    if routers != vrs + 2 or found != connections:
        raise BenchError(
            f"the agent holds {routers} VRs and {found} connections, "
            f"not {vrs + 2} and {connections}"
        )


@contextmanager
def agent_targets(
    result: BenchResult, vrs: int, connections: int, step: Callable[[str], None]
) -> Iterator[list[Target]]:
    """The loaded agent's two endpoints, its client closed and the agent stopped after."""
    with sandboxed_agent(result, "agent", frontends="netconf,restconf") as agent:
        step("loading the agent")
        seconds = load(agent, vrs, connections, step)
        result.note(
            f"agent: {vrs} VRs and {connections} connections loaded over NETCONF in edits of "
            f"{BATCH} in {seconds:.1f} s"
        )
        if agent.proc is None:
            raise BenchError("the agent did not start")
        with httpx.Client(
            base_url=f"https://{ADDRESS}:{agent.ports['restconf']}",
            auth=(agent.user, agent.password),
            verify=tls_verify(str(agent.config.restconf_cert_path)),
            timeout=TIMEOUT,
        ) as client:
            ns, pid = agent.host.namespace, agent.proc.pid
            data = Target(DATA, client, "/restconf/data", pid, ns, {"Accept": JSON})
            check(data.get().json(), vrs, connections)
            yield [Target(METRICS, client, "/metrics", pid, ns), data]
