#!/usr/bin/env python3
"""How long one agent takes to configure one connection's pieces (issue 11's goal: p50 <= 15 ms).

A real `vnet agent` in a sandbox namespace, driven through vnet.client over NETCONF:
two VRs (ingress r1, egress r2), then N edits that each add one connection (its ingress
steering, segment list and shaper on r1, its End.DX4 on r2), then N edits that each
remove one. Each edit is timed from the client's side (request to <ok>: validation,
plan, kernel, persistence). For comparison, N edits that each add a VR with one interface.

    sudo .venv/bin/python scripts/measure_connection_config.py [N]
"""

from __future__ import annotations

import statistics
import sys
import time
from typing import Any

from vnet.client import Endpoint, NetconfClient
from vnet.lab.sandbox import ADDRESS, HostSandbox, SandboxAgent

P = "vnet-router:"


def base() -> dict[str, Any]:
    nets = [
        {"name": "n1", "tenant": "a", "vni": 11, "ipv4-prefix": "10.1.0.0/24"},
        {"name": "n2", "tenant": "a", "vni": 12, "ipv6-prefix": "fd02::/64"},
        {"name": "n3", "tenant": "a", "vni": 13, "ipv4-prefix": "10.3.0.0/24"},
    ]
    routers = [
        {
            "name": "r1",
            "interface": [
                {"name": "eth0", "network": "n1", "ipv4": "10.1.0.254/24"},
                {"name": "eth1", "network": "n2", "ipv6": "fd02::1/64"},
            ],
            "route": [{"destination": "fc00:1:2::/48", "next-hop": "fd02::2"}],
        },
        {
            "name": "r2",
            "interface": [
                {"name": "eth0", "network": "n2", "ipv6": "fd02::2/64"},
                {"name": "eth1", "network": "n3", "ipv4": "10.3.0.254/24"},
            ],
        },
    ]
    locators = [
        {"prefix": "fc00:1:1::/48", "router": "r1"},
        {"prefix": "fc00:1:2::/48", "router": "r2"},
    ]
    return {
        f"{P}virtual-networks": {"network": nets},
        f"{P}routers": {"router": routers},
        f"{P}srv6": {"locator": locators},
    }


def connection(k: int) -> dict[str, Any]:
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


def timed(client: NetconfClient, xml: str) -> float:
    t = time.perf_counter()
    client.edit(xml)
    return (time.perf_counter() - t) * 1000


def summary(what: str, ms: list[float]) -> str:
    q = statistics.quantiles(ms, n=10)
    return (
        f"{what:<28} n={len(ms):3d}  p50 {statistics.median(ms):6.1f} ms  "
        f"p90 {q[8]:6.1f} ms  min {min(ms):6.1f} ms  max {max(ms):6.1f} ms"
    )


def main(n: int) -> None:
    from vnet.model.yang.encode import tree_to_xml

    host = HostSandbox()
    agent = SandboxAgent(host, {}, user="admin", password="bench")
    try:
        host.create()
        agent.start("netconf")
        ep = Endpoint(ADDRESS, agent.ports["netconf"], "admin", "bench", host.namespace)
        with NetconfClient(ep) as client:
            client.edit_tree(base())
            ns = 'xmlns="urn:vnet:yang:vnet-router"'
            add, remove, vrs = [], [], []
            for k in range(1, n + 1):
                xml = tree_to_xml({f"{P}srv6": {"connection": [connection(k)]}})
                add.append(timed(client, xml))
            for k in range(1, n + 1):
                xml = (
                    f'<srv6 {ns}><connection nc:operation="delete"><name>c{k}</name>'
                    "</connection></srv6>"
                )
                remove.append(timed(client, xml))
            for k in range(1, n + 1):
                xml = (
                    f"<routers {ns}><router><name>v{k}</name><interface><name>eth0</name>"
                    f"<network>n1</network><ipv4>10.1.0.{k + 1}/24</ipv4></interface>"
                    "</router></routers>"
                )
                vrs.append(timed(client, xml))
        print(summary("add one connection's pieces", add))
        print(summary("remove one connection", remove))
        print(summary("add one VR (reference)", vrs))
    finally:
        agent.stop()
        problems = host.cleanup()
        if problems:
            print("left behind:", problems, file=sys.stderr)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 50)
