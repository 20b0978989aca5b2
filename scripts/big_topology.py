#!/usr/bin/env python3
"""Write a large topology file, to measure how checking scales (issue 17, finding 4).

    python3 scripts/big_topology.py 10000 > /tmp/big10k.yaml
    .venv/bin/python scripts/big_topology.py 10000 --check   # times the model's check alone

N physical hosts in a 4-ary tree of rated underlay links; per host one VR and one end host
in the host's own network; one tenant network with a guaranteed bandwidth spans eight hosts.
Writing the file needs the standard library only; --check needs vnet installed.
"""

import json
import sys
import time
from typing import Any


def topology_data(n: int) -> dict[str, Any]:
    def lan(i: int) -> str:
        return f"10.{i // 256}.{i % 256}"

    routers = []
    for i in range(n):
        interfaces = [{"network": f"n{i}", "ipv4": f"{lan(i)}.1/24"}]
        if i < 8:
            interfaces.append({"network": "core", "ipv4": f"172.16.0.{i + 1}/24"})
        routers.append({"name": f"r{i}", "host": f"h{i}", "interfaces": interfaces})
    networks = [
        {"name": f"n{i}", "tenant": "t", "vni": 1000 + i, "ipv4": f"{lan(i)}.0/24"}
        for i in range(n)
    ]
    networks.append(
        {"name": "core", "tenant": "t", "vni": 999, "ipv4": "172.16.0.0/24", "bandwidth": "100mbit"}
    )
    return {
        "name": "big",
        "hosts": [{"name": f"h{i}"} for i in range(n)],
        "links": [{"a": f"h{(i - 1) // 4}", "b": f"h{i}", "rate": "10gbit"} for i in range(1, n)],
        "tenants": [{"name": "t", "routing": "static"}],
        "networks": networks,
        "routers": routers,
        "endhosts": [
            {"name": f"e{i}", "host": f"h{i}", "network": f"n{i}", "ipv4": f"{lan(i)}.2/24"}
            for i in range(n)
        ],
    }


def yaml_lines(data: dict[str, Any]) -> list[str]:
    """Block sequences of flow mappings (JSON inside YAML), one item a line."""
    out = []
    for key, value in data.items():
        if isinstance(value, list):
            out.append(f"{key}:")
            out += [f"  - {json.dumps(item)}" for item in value]
        else:
            out.append(f"{key}: {json.dumps(value)}")
    return out


def time_check(n: int) -> None:
    from vnet.model import Topology
    from vnet.model.check import check

    topo = Topology.model_validate(topology_data(n))
    start = time.process_time()
    problems = check(topo)
    took = time.process_time() - start
    print(f"{n} hosts: check {took:.2f} s CPU, {len(problems)} problem(s)")


if __name__ == "__main__":
    if "--check" in sys.argv[2:]:
        time_check(int(sys.argv[1]))
    else:
        print("\n".join(yaml_lines(topology_data(int(sys.argv[1])))))
