"""Every benchmark `vnet bench` knows, by name. Add one here and it gets a command."""

from __future__ import annotations

from vnet.bench.agent import AgentBench
from vnet.bench.build import BuildBench
from vnet.bench.contract import Benchmark
from vnet.bench.controller import ControllerBench
from vnet.bench.dataplane import DataplaneBench
from vnet.bench.failover import FailoverBench
from vnet.bench.forwarding import ForwardingBench
from vnet.bench.metrics import MetricsBench
from vnet.bench.mgmt import MgmtBench
from vnet.bench.netconf import NetconfBench
from vnet.bench.qos import QosBench
from vnet.bench.resources import ResourcesBench
from vnet.bench.sdn import SdnBench
from vnet.bench.snmp import SnmpBench

BENCHMARKS: dict[str, type[Benchmark]] = {
    b.name: b
    for b in (
        BuildBench,
        DataplaneBench,
        ForwardingBench,
        QosBench,
        ResourcesBench,
        NetconfBench,
        SnmpBench,
        MgmtBench,
        SdnBench,
        AgentBench,
        ControllerBench,
        FailoverBench,
        MetricsBench,
    )
}


def get(name: str) -> Benchmark:
    """A fresh instance of the benchmark `name`; KeyError if there is none."""
    return BENCHMARKS[name]()
