"""The pure domain model of vnet: objects, validation, derived values. Imports nothing of vnet."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from vnet.model.check import check, check_host
from vnet.model.errors import Problem, TopologyError
from vnet.model.host import HostConfig, NetworkOnHost, host_configs
from vnet.model.mtu import network_mtu
from vnet.model.rate import format_rate, parse_rate
from vnet.model.resolve import resolve
from vnet.model.topology import (
    EndHost,
    Interface,
    PhysicalHost,
    Route,
    Tenant,
    Topology,
    UnderlayLink,
    VirtualNetwork,
    VirtualRouter,
)

__all__ = [
    "EndHost",
    "HostConfig",
    "Interface",
    "NetworkOnHost",
    "PhysicalHost",
    "Problem",
    "Route",
    "Tenant",
    "Topology",
    "TopologyError",
    "UnderlayLink",
    "VirtualNetwork",
    "VirtualRouter",
    "build_topology",
    "check_host",
    "format_rate",
    "host_configs",
    "network_mtu",
    "parse_rate",
    "problems_from_pydantic",
]


def problems_from_pydantic(err: ValidationError) -> list[Problem]:
    problems = []
    for e in err.errors():
        loc = tuple(p for p in e["loc"] if not (isinstance(p, str) and "[" in p))
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] == "extra_forbidden":
            msg = "unknown field (check its spelling)"
        elif e["type"] == "missing":
            msg = "required field is missing"
        problems.append(Problem(loc, msg))
    return problems


def build_topology(data: Any, source: str = "topology") -> Topology:
    """Parse, check and resolve plain data; raise TopologyError listing every problem."""
    try:
        topo = Topology.model_validate(data)
    except ValidationError as err:
        raise TopologyError(problems_from_pydantic(err), source) from None
    problems = check(topo)
    if problems:
        raise TopologyError(problems, source)
    return resolve(topo)
