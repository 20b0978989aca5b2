"""A VR as the clients hand it over: vnet.model's VirtualRouter for its configuration,
`RouterState` for what the agent reports about it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from vnet.model import VirtualRouter
from vnet.model.yang.host import router_of


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
            router=router_of(entry, host or "agent"),
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
