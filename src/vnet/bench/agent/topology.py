"""How checking a topology scales (issue 17: 10k hosts in a few seconds).

A generated topology of N physical hosts in a 4-ary tree of rated underlay links; per
host one VR and one end host in the host's own network; one tenant network with a
guaranteed bandwidth spans eight hosts. Parsed into the model (pydantic) and then
checked (vnet.model.check), each timed in CPU seconds of this process, so load from
other processes on the machine does not count; and the whole path of a topology file
(`vnet lab`'s reader: YAML, model, check) for reference.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from vnet.bench.results import BenchResult

METRIC = "topology"
PARSE, CHECK, FILE = "parse into the model", "check", "read the file (YAML, model, check)"


def declare(result: BenchResult, hosts: int) -> None:
    result.declare(
        METRIC,
        "s",
        x_label=f"{hosts} hosts",
        plot="bar",
        description=f"A generated topology of {hosts} hosts (4-ary tree of links, a VR, an end "
        "host and a network per host): CPU seconds to parse it into the model and to check it, "
        "and to read it as a topology file (YAML included).",
    )


def topology_data(n: int) -> dict[str, Any]:
    """The topology file's data for `n` hosts (as YAML would load it)."""

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


def yaml_text(data: dict[str, Any]) -> str:
    """A topology file: block sequences of flow mappings (JSON inside YAML), one item a line."""
    out = []
    for key, value in data.items():
        if isinstance(value, list):
            out.append(f"{key}:")
            out += [f"  - {json.dumps(item)}" for item in value]
        else:
            out.append(f"{key}: {json.dumps(value)}")
    return "\n".join(out) + "\n"


def measure(result: BenchResult, hosts: int) -> None:
    from vnet.lab.topology_file import parse_topology_text
    from vnet.model import Topology
    from vnet.model.check import check

    data = topology_data(hosts)
    text = yaml_text(data)
    start = time.process_time()
    parse_topology_text(text, Path(f"generated-{hosts}-hosts.yaml"))  # what `vnet lab` reads
    result.record(METRIC, "vnet", time.process_time() - start, x=FILE)
    start = time.process_time()
    topo = Topology.model_validate(data)
    result.record(METRIC, "vnet", time.process_time() - start, x=PARSE)
    start = time.process_time()
    problems = check(topo)
    result.record(METRIC, "vnet", time.process_time() - start, x=CHECK)
    if problems:
        result.note(f"the generated topology of {hosts} hosts has problems: {problems[:3]}")
