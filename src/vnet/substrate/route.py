"""Static routes vnet installs (protocol 118) in its namespaces."""

from __future__ import annotations

import socket
from dataclasses import dataclass

from vnet.substrate.kernel import Kernel
from vnet.substrate.marks import RTPROT_VNET, NsName, ip_cmd
from vnet.substrate.rtchange import RTN_UNICAST

MAIN_TABLE = 254


@dataclass(frozen=True)
class Route:
    ns: NsName
    dst: str
    via: str


@dataclass(frozen=True)
class AddRoute:
    route: Route

    def run(self, k: Kernel) -> None:
        r = self.route
        k.route(r.ns, "add", dst=r.dst, gateway=r.via, proto=RTPROT_VNET)

    def inverse(self) -> DeleteRoute:
        return DeleteRoute(self.route)

    def describe(self) -> str:
        r = self.route
        return f"{ip_cmd(r.ns)} route add {r.dst} via {r.via} proto 118"


@dataclass(frozen=True)
class DeleteRoute:
    route: Route

    def run(self, k: Kernel) -> None:
        r = self.route
        k.route(r.ns, "del", dst=r.dst, gateway=r.via, proto=RTPROT_VNET)

    def inverse(self) -> AddRoute:
        return AddRoute(self.route)

    def describe(self) -> str:
        r = self.route
        return f"{ip_cmd(r.ns)} route del {r.dst} via {r.via} proto 118"


def read(k: Kernel, ns: NsName) -> set[Route]:
    """vnet's gateway routes in `ns` (both families)."""
    return {
        Route(ns, r.dst, r.gateway)
        for family in (socket.AF_INET, socket.AF_INET6)
        for r in k.proto_routes(ns, family, RTPROT_VNET)
        if r.gateway is not None
    }


def count(k: Kernel, ns: NsName) -> int:
    """Unicast routes of the main table, whoever made them (what a VR's route count shows)."""
    return sum(
        k.route_count(ns, family, MAIN_TABLE, RTN_UNICAST)
        for family in (socket.AF_INET, socket.AF_INET6)
    )
