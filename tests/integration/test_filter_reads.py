"""Removing many connections from a host reads the kernel's u32 filters once per interface,
not once per filter: a filter is deleted by the number the kernel gave it, which only a
read tells (an agent plans from what its last commit left, which holds no numbers). The
read decodes the kernel's messages itself (rtquery.U32Dump); pyroute2 reads the same."""

from __future__ import annotations

import socket
from typing import Any

from ruamel.yaml import YAML

from vnet.model import build_topology
from vnet.substrate import Kernel, converge, lab_placement, realize
from vnet.substrate.tc import AddTcFilter, DeleteTcFilter, read_filters
from vnet.substrate.u32 import selector_match

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
        assert kernel.requests["u32_filters"] == len(interfaces), dict(kernel.requests)
    with Kernel() as kernel:
        assert converge(kernel, one, where, dry_run=True) == [], "filters left behind"
        converge(kernel, full, where)
        for ns, dev, parent in interfaces:
            index = kernel.index(ns, dev)
            mine = read_filters(kernel, ns, dev, index, parent)
            assert len(mine) == CONNECTIONS
            assert described(mine) == by_pyroute2(kernel, ns, index, parent)


Described = set[tuple[int, int, int, int, object]]


def described(filters: set[Any]) -> Described:
    return {(f.handle, f.prio, f.protocol, f.classid, f.match) for f in filters}


def by_pyroute2(kernel: Kernel, ns: str, index: int, parent: int) -> Described:
    """The same filters as pyroute2 decodes them (the selector's payload read raw: pyroute2
    0.9 decodes its keys 4 bytes off)."""
    out = set()
    for msg in kernel.filters(ns, index, parent):
        options = msg.get_attr("TCA_OPTIONS")
        sel = options.get_attr("TCA_U32_SEL") if options is not None else None
        if msg.get("kind") != "u32" or sel is None:
            continue
        raw = bytes(sel.data[sel.offset + 4 : sel.offset + sel.length])
        info = msg["info"]
        classid = options.get_attr("TCA_U32_CLASSID")
        out.add(
            (msg["handle"], info >> 16, socket.ntohs(info & 0xFFFF), classid, selector_match(raw))
        )
    return out


def lab_states(labs: Labs, numbers: list[list[int]]) -> tuple[Any, list[Any]]:
    """The placement of a lab without agents, and its desired states with each list of
    connections (planned here as an agent does)."""
    name, path = labs.file("managed-connections.yaml")
    data = YAML(typ="safe").load(path.read_text())
    data.pop("management")
    states = []
    for these in numbers:
        data["connections"] = [connection(k) for k in these]
        states.append(realize(build_topology(data), lab_placement(name)))
    return lab_placement(name), states


class EntriesRead:
    """The u32 filters a Kernel read from the kernel (every one a dump or a get returned)."""

    def __init__(self, kernel: Kernel) -> None:
        self.count = 0
        reads = kernel.u32_filters

        def counted(*args: Any, **kwargs: Any) -> Any:
            found = reads(*args, **kwargs)
            self.count += len(found)
            return found

        kernel.u32_filters = counted  # type: ignore[method-assign]


def test_deleting_one_connection_reads_its_filters_alone(labs: Labs) -> None:
    """An agent's Kernel remembers the numbers its filters got (read, or taken when added):
    deleting one connection of many reads back that connection's filters (a get each, to
    confirm the number), not every filter of the interface."""
    everyone = list(range(CONNECTIONS))
    where, (full, fewer, again) = lab_states(labs, [everyone[:-1], everyone[1:-1], everyone])
    with Kernel() as kernel:  # the agent's, for all its commits
        converge(kernel, full, where)
        reads = EntriesRead(kernel)
        for before, after in ((full, fewer), (fewer, again), (again, fewer)):
            reads.count, kernel.requests["u32_filters"] = 0, 0
            ops = converge(kernel, after, where, before=before)
            deleted = [op for op in ops if isinstance(op, DeleteTcFilter)]
            assert reads.count == kernel.requests["u32_filters"] == len(deleted), (
                reads.count,
                len(deleted),
            )
    with Kernel() as kernel:
        assert converge(kernel, fewer, where, dry_run=True) == [], "filters left behind"


def test_a_number_that_changed_behind_the_agents_back_is_read_again(labs: Labs) -> None:
    """Two connections' filters deleted and added back by someone else, in the other order,
    swap their numbers:
    the agent's remembered number for one now names the other's filter, so its get does
    not confirm it, the interface is read, and the right filter goes."""
    where, (both, one) = lab_states(labs, [[0, 1], [1]])
    with Kernel() as kernel:
        converge(kernel, both, where)
        gone = sorted(both.tc_filters - one.tc_filters, key=lambda f: (f.ns, f.dev))
        swapped = [f for f in both.tc_filters if (f.ns, f.dev) == (gone[0].ns, gone[0].dev)]
        assert len(swapped) == 2, swapped
        with Kernel() as other:  # behind the agent's back
            for f in swapped:
                DeleteTcFilter(f).run(other)
            for f in sorted(swapped, key=lambda f: f not in gone):  # the other way round
                AddTcFilter(f).run(other)
        converge(kernel, one, where, before=both)
    with Kernel() as kernel:
        assert converge(kernel, one, where, dry_run=True) == [], "the wrong filter went"
