"""The data both servers get: networks and VRs as the same NETCONF XML, and the plan."""

from __future__ import annotations

import math
from dataclasses import dataclass

from vnet.bench.client import NS
from vnet.model.yang.module import NETCONF_NS as NC

PORTS_PER_NETWORK = 500  # a Linux bridge takes at most 1024 ports
OPS_INDEX, BULK_INDEX = 60001, 50001  # explicit VR indexes, so both servers hold the same data


# -- the data: networks and VRs, the same XML for both servers -----------------------------------


def network_count(vrs: int) -> int:
    """Networks needed so that no bridge gets more than PORTS_PER_NETWORK ports (2 per VR pair)."""
    return 2 * max(1, math.ceil(vrs / PORTS_PER_NETWORK))


def networks_config(count: int) -> str:
    nets = "".join(
        f"<network><name>n{j}</name><tenant>bench</tenant><vni>{1000 + j}</vni>"
        f"<ipv4-prefix>10.{j}.0.0/16</ipv4-prefix></network>"
        for j in range(1, count + 1)
    )
    return f'<config><virtual-networks xmlns="{NS}">{nets}</virtual-networks></config>'


def _address(network: int, slot: int) -> str:
    """A unique host address in 10.<network>.0.0/16 for slot 0, 1, 2, ..."""
    return f"10.{network}.{slot // 200}.{slot % 200 + 1}/16"


def router_xml(name: str, index: int, slot: int, networks: int, op: str = "") -> str:
    """One VR with two interfaces in a pair of networks; `slot` spreads VRs over pairs."""
    pair = slot % (networks // 2)
    first, second = 2 * pair + 1, 2 * pair + 2
    where = slot // (networks // 2)
    attr = f' xmlns:nc="{NC}" nc:operation="{op}"' if op else ""
    if op == "delete":
        return f"<router{attr}><name>{name}</name></router>"
    return (
        f"<router{attr}><name>{name}</name><index>{index}</index>"
        f"<interface><name>eth0</name><network>n{first}</network>"
        f"<ipv4>{_address(first, where)}</ipv4></interface>"
        f"<interface><name>eth1</name><network>n{second}</network>"
        f"<ipv4>{_address(second, where)}</ipv4></interface></router>"
    )


def routers_config(routers: list[str]) -> str:
    return f'<config><routers xmlns="{NS}">{"".join(routers)}</routers></config>'


def one_router_filter(name: str) -> tuple[str, str]:
    return ("subtree", f'<routers xmlns="{NS}"><router><name>{name}</name></router></routers>')


@dataclass(frozen=True)
class Batch:
    """VRs named prefix1..prefixN with indexes first_index.., in slots 0..N-1."""

    prefix: str
    count: int
    first_index: int
    networks: int

    def names(self) -> list[str]:
        return [f"{self.prefix}{i + 1}" for i in range(self.count)]

    def create(self, start: int = 0, stop: int | None = None) -> str:
        stop = self.count if stop is None else stop
        return routers_config(
            [
                router_xml(
                    f"{self.prefix}{i + 1}", self.first_index + i, i, self.networks, "create"
                )
                for i in range(start, stop)
            ]
        )

    def delete(self, start: int = 0, stop: int | None = None) -> str:
        stop = self.count if stop is None else stop
        return routers_config(
            [
                router_xml(f"{self.prefix}{i + 1}", 0, i, self.networks, op="delete")
                for i in range(start, stop)
            ]
        )


@dataclass(frozen=True)
class Plan:
    ops: int  # create/retrieve/remove cycles of one VR
    bulk: int  # VRs in the one-edit-config create
    vrs: int  # VRs loaded for get-config
    chunk: int  # VRs per edit-config when loading them
    repeat: int  # samples per bulk measurement
    netconfd: bool

    @property
    def networks(self) -> int:
        return network_count(max(self.vrs, self.bulk, 1))
