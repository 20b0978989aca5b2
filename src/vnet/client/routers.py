"""A VR as the clients hand it over: vnet.model's VirtualRouter for its configuration,
`RouterState` for what the agent reports about it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from vnet.model import Topology, VirtualNetwork, VirtualRouter, yangdata
from vnet.model.yang.module import NETWORKS, ROUTERS

# The RFC 7951 entry <-> model mapping is yangdata's until model/yang/host.py
# holds it; only this module calls it, so the swap is here.


def router_entry(vr: VirtualRouter) -> dict[str, Any]:
    """The YANG list entry (RFC 7951) of a VirtualRouter."""
    tree = yangdata.tree_from_topology(Topology(routers=[vr]), {})
    entry = dict(tree[ROUTERS]["router"][0])
    if vr.index is None:
        entry.pop("index")
    return entry


def router_of(entry: dict[str, Any], host: str = "") -> VirtualRouter:
    data = yangdata.topology_data({ROUTERS: {"router": [entry]}}, host or "agent", "agent", 1)
    return VirtualRouter.model_validate(data["routers"][0])


def network_entry(net: VirtualNetwork, remote_vteps: list[str] | None = None) -> dict[str, Any]:
    tree = yangdata.tree_from_topology(Topology(networks=[net]), {net.name: remote_vteps or []})
    return dict(tree[NETWORKS]["network"][0])


def network_of(entry: dict[str, Any]) -> VirtualNetwork:
    data = yangdata.topology_data({NETWORKS: {"network": [entry]}}, "agent", "agent", 1)
    return VirtualNetwork.model_validate(data["networks"][0])


@dataclass(frozen=True)
class InterfaceState:
    name: str
    network: str | None
    oper_status: str | None
    statistics: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class RouterState:
    """A VR as the agent reports it: its configuration and, if asked, its state."""

    router: VirtualRouter
    oper_state: str | None
    uptime: int | None
    route_count: int | None
    interfaces: list[InterfaceState]
    entry: dict[str, Any]  # the agent's RFC 7951 entry, as `vnet vr --json` prints it

    @property
    def name(self) -> str:
        return self.router.name

    @classmethod
    def from_entry(cls, entry: dict[str, Any], host: str = "") -> RouterState:
        def num(value: Any) -> int | None:
            return int(value) if value is not None else None

        return cls(
            router=router_of(entry, host),
            oper_state=entry.get("oper-state"),
            uptime=num(entry.get("uptime")),
            route_count=num(entry.get("route-count")),
            interfaces=[
                InterfaceState(
                    i["name"],
                    i.get("network"),
                    i.get("oper-status"),
                    {k: int(v) for k, v in i.get("statistics", {}).items()},
                )
                for i in entry.get("interface", [])
            ],
            entry=entry,
        )
