"""Configuring one SRv6 connection's pieces on one agent (issue 11: p50 <= 15 ms).

Two VRs (ingress r1, egress r2) with a locator each; then one edit per connection
adding its pieces (steering, segment list and shaper on r1, End.DX4 on r2), one edit
per connection removing it, and, for reference, one edit per VR adding a VR with one
interface. Each edit is timed from the client's side, request to <ok> (validation,
plan, kernel, persistence), through vnet.client.
"""

from __future__ import annotations

import time
from typing import Any

from vnet.bench.agent.sandbox import endpoint, sandboxed_agent
from vnet.bench.client import NS
from vnet.bench.results import BenchResult
from vnet.client import NetconfClient
from vnet.model.yang.encode import tree_to_xml

P = "vnet-router:"
METRIC = "connection_edit"
ADD, REMOVE, VR = "add one connection", "remove one connection", "add one VR (reference)"


def declare(result: BenchResult) -> None:
    result.declare(
        METRIC,
        "ms",
        x_label="one edit-config",
        plot="bar",
        description="One edit-config adding one SRv6 connection's pieces (ingress steering, "
        "segment list and shaper on r1, End.DX4 on r2), one removing it, and one adding a VR "
        "with one interface for reference; request to <ok>, through vnet.client.",
    )


def base() -> dict[str, Any]:
    """Three networks, ingress r1 and egress r2, a locator on each."""
    nets = [
        {"name": "n1", "tenant": "a", "vni": 11, "ipv4-prefix": "10.1.0.0/24"},
        {"name": "n2", "tenant": "a", "vni": 12, "ipv6-prefix": "fd02::/64"},
        {"name": "n3", "tenant": "a", "vni": 13, "ipv4-prefix": "10.3.0.0/24"},
    ]
    r1 = [
        {"name": "eth0", "network": "n1", "ipv4": "10.1.0.254/24"},
        {"name": "eth1", "network": "n2", "ipv6": "fd02::1/64"},
    ]
    r2 = [
        {"name": "eth0", "network": "n2", "ipv6": "fd02::2/64"},
        {"name": "eth1", "network": "n3", "ipv4": "10.3.0.254/24"},
    ]
    route = [{"destination": "fc00:1:2::/48", "next-hop": "fd02::2"}]
    return {
        f"{P}virtual-networks": {"network": nets},
        f"{P}routers": {
            "router": [
                {"name": "r1", "interface": r1, "route": route},
                {"name": "r2", "interface": r2},
            ]
        },
        f"{P}srv6": {
            "locator": [
                {"prefix": "fc00:1:1::/48", "router": "r1"},
                {"prefix": "fc00:1:2::/48", "router": "r2"},
            ]
        },
    }


def connection(k: int) -> dict[str, Any]:
    """Connection k: UDP to port 5000+k steered from n1 over n2 to its own End.DX4 SID."""
    sid = f"fc00:1:2:{k:x}::4"
    ingress = {
        "router": "r1",
        "destination": "10.3.0.1",
        "source": "10.1.0.1",
        "protocol": "udp",
        "destination-port": 5000 + k,
        "lan-network": "n1",
        "network": "n2",
        "segment": [sid],
        "bandwidth": "10000000",
    }
    egress = {"sid": sid, "router": "r2", "network": "n3", "next-hop": "10.3.0.1"}
    return {"name": f"c{k}", "id": k, "ingress": [ingress], "egress": [egress]}


def _timed(client: NetconfClient, xml: str) -> float:
    start = time.perf_counter()
    client.edit(xml)
    return (time.perf_counter() - start) * 1000


def measure(result: BenchResult, count: int) -> None:
    """`count` connections added, then removed, then `count` reference VRs added."""
    with sandboxed_agent(result, "connection") as agent, NetconfClient(endpoint(agent)) as client:
        client.edit_tree(base())
        for k in range(1, count + 1):
            xml = tree_to_xml({f"{P}srv6": {"connection": [connection(k)]}})
            result.record(METRIC, "vnet", _timed(client, xml), x=ADD)
        for k in range(1, count + 1):
            xml = (
                f'<srv6 xmlns="{NS}"><connection nc:operation="delete"><name>c{k}</name>'
                "</connection></srv6>"
            )
            result.record(METRIC, "vnet", _timed(client, xml), x=REMOVE)
        for k in range(1, count + 1):
            xml = (
                f'<routers xmlns="{NS}"><router><name>v{k}</name><interface><name>eth0</name>'
                f"<network>n1</network><ipv4>10.1.0.{k + 1}/24</ipv4></interface>"
                "</router></routers>"
            )
            result.record(METRIC, "vnet", _timed(client, xml), x=VR)
