"""Removing many connections from a host reads the kernel's u32 filters once per interface,
not once per filter: a filter is deleted by the number the kernel gave it, which only a
read tells (an agent plans from what its last commit left, which holds no numbers)."""

from __future__ import annotations

from typing import Any

from ruamel.yaml import YAML

from vnet.model import build_topology
from vnet.substrate import Kernel, converge, lab_placement, realize
from vnet.substrate.tc import DeleteTcFilter

from .conftest import Labs

CONNECTIONS = 20


def connection(k: int) -> dict[str, Any]:
    return {"name": f"c{k}", "a": "pc1", "b": "pc2", "protocol": "udp", "dst_port": 6000 + k,
            "bandwidth": "1mbit", "path": ["r1", "r2", "r3"]}  # fmt: skip


def test_removing_many_connections_reads_each_interface_s_filters_once(labs: Labs) -> None:
    name, path = labs.file("managed-connections.yaml")
    data = YAML(typ="safe").load(path.read_text())
    data.pop("management")  # the lab's own namespaces, no agents: planned here as an agent does
    where = lab_placement(name)
    data["connections"] = [connection(k) for k in range(CONNECTIONS)]
    full = realize(build_topology(data), where)
    data["connections"] = [connection(0)]  # its shaper root stays, so do the filters' tables
    one = realize(build_topology(data), where)
    with Kernel() as kernel:
        converge(kernel, full, where)
    with Kernel() as kernel:  # as an agent plans: from its last commit, which has no numbers
        ops = converge(kernel, one, where, before=full)
        deleted = [op for op in ops if isinstance(op, DeleteTcFilter)]
        interfaces = {(op.filter.ns, op.filter.dev, op.filter.parent) for op in deleted}
        assert len(deleted) >= CONNECTIONS - 1, len(deleted)
        assert kernel.requests["filters"] == len(interfaces), dict(kernel.requests)
    with Kernel() as kernel:
        assert converge(kernel, one, where, dry_run=True) == [], "filters left behind"
