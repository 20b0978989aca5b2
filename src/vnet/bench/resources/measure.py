"""One end host limited to a share of a core against an unlimited one, both sending
with iperf3 as fast as they can to a third, one after the other, in one lab.

Both senders have a cgroup (the unlimited one with no limit in it), so the
CPU time each used comes from the same counter. Runs alternate (unlimited,
limited, unlimited, ...) so that a change in the machine's load hits both.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from vnet.lab import lab as labmod
from vnet.model import Topology, build_topology
from vnet.substrate import lab_placement
from vnet.substrate.cgroup import usage
from vnet.tools import iperf3
from vnet.tools.cgroupfs import group_name

BENCH_LAB = "benchres"
SINK = "10.77.0.9"
# the sink serves each sender on its own port, so that a late server never mixes them up
PORTS = {"unlimited": 5301, "limited": 5302}


def topology(cpu: float, cpuset: str | None) -> Topology:
    limited: dict[str, Any] = {"cpu": cpu}
    if cpuset is not None:
        limited["cpuset"] = cpuset
    data = {
        "name": BENCH_LAB,
        "hosts": [{"name": "h1"}],
        "tenants": [{"name": "bench"}],
        "networks": [{"name": "n1", "tenant": "bench", "vni": 77, "ipv4": "10.77.0.0/24"}],
        "endhosts": [
            # an empty `resources`: a group that only counts (no limit)
            {"name": "unlimited", "host": "h1", "network": "n1", "ipv4": "10.77.0.2/24",
             "resources": {}},
            {"name": "limited", "host": "h1", "network": "n1", "ipv4": "10.77.0.3/24",
             "resources": limited},
            {"name": "sink", "host": "h1", "network": "n1", "ipv4": f"{SINK}/24"},
        ],
    }  # fmt: skip
    return build_topology(data, source="bench resources")


@dataclass(frozen=True)
class SendRun:
    sender: str
    mbit: float  # what the sender sent (TCP: received payload, equal once steady)
    cores: float  # CPU time its group used per second of wall time


def send(sender: str, seconds: float, protocol: str) -> SendRun:
    ns = lab_placement(BENCH_LAB).node_ns(sender)
    group = group_name(ns, BENCH_LAB)
    before, t0 = usage(group).cpu_time_ns or 0, time.perf_counter()
    if protocol == "udp":  # 64-byte datagrams: one system call each, all sender CPU
        udp, _ = iperf3.run_udp(ns, SINK, None, seconds, 64, port=PORTS[sender])
        mbit = udp.sent_mbit
    else:
        tcp, _ = iperf3.run_tcp(ns, SINK, seconds, port=PORTS[sender])
        mbit = tcp.mbit
    wall = time.perf_counter() - t0
    used = (usage(group).cpu_time_ns or 0) - before
    return SendRun(sender, mbit, used / 1e9 / wall)


class Lab:
    """The bench lab and the sink's iperf3 servers, for the life of a `with` block."""

    def __init__(self, cpu: float, cpuset: str | None) -> None:
        self.topo = topology(cpu, cpuset)
        self._servers: list[iperf3.Iperf3Server] = []

    def __enter__(self) -> Lab:
        # a previous interrupted run: start from nothing (a no-op when there is none; not
        # running_labs(), which reads every lab's namespaces while others delete theirs)
        labmod.down(BENCH_LAB)
        labmod.up("", topology=self.topo)
        try:
            sink = lab_placement(BENCH_LAB).node_ns("sink")
            for port in PORTS.values():
                server = iperf3.Iperf3Server(sink, port)
                server.__enter__()
                self._servers.append(server)
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        for server in reversed(self._servers):
            server.__exit__()
        labmod.down(BENCH_LAB)
