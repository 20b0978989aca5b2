"""The four management interfaces of paper 000, each with the client a user would use.

Every interface does the same four operations on a list of VRs: create (admin
state down: defined, not started), start (admin state up), retrieve (the VR
with its state) and remove. As in the paper, SNMP and RESTCONF handle each VR
in its own request, NETCONF all of them in one RPC. `fresh()` opens a new
session of the same kind, so that its set-up can be counted on the wire.

- SNMPv2c, SNMPv3 (authPriv SHA/AES): pysnmp's manager API (vnet.bench.snmp);
  create is one SET with createAndGo rows, retrieve one GETBULK of the VR's
  13 objects, remove one SET destroying the row.
- NETCONF over SSH: ncclient; edit-config of running, get with a subtree filter.
- RESTCONF over HTTPS: vnet.client's RestconfClient (httpx); POST, PATCH, GET, DELETE.
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from vnet.bench.client import NS
from vnet.bench.mgmt import MgmtBenchError
from vnet.bench.netconf.config import NC

NETWORK = "n1"  # the cycle VRs' network (10.1.0.0/16 in vnet.bench.netconf.config)


@dataclass(frozen=True)
class Vr:
    """A VR of the benchmark: one interface eth0 in `network`, an address no other VR has
    (`address`, or one worked out from the index in NETWORK)."""

    index: int
    network: str = NETWORK
    address: str | None = None

    @property
    def name(self) -> str:
        return f"b{self.index}"  # the name vnet.bench.snmp.workload.create_pairs gives

    @property
    def ipv4(self) -> str:
        if self.address is not None:
            return self.address
        # 10.1.100.1 and up (indexes 30001..69000): clear of vnet.bench.netconf.config's
        third, fourth = divmod(self.index - 30000, 250)
        return f"10.1.{100 + third}.{fourth + 1}/16"


class Interface(ABC):
    """One management interface with an open session."""

    name: str

    @abstractmethod
    def create(self, vrs: list[Vr]) -> None: ...

    @abstractmethod
    def start(self, vrs: list[Vr]) -> None: ...

    @abstractmethod
    def retrieve(self, vrs: list[Vr]) -> None:
        """Read the VRs back; MgmtBenchError if the answer does not show them."""

    @abstractmethod
    def remove(self, vrs: list[Vr]) -> None: ...

    @abstractmethod
    def fresh(self) -> Interface:
        """A new session of the same kind, set up (caller closes it)."""

    @abstractmethod
    def close(self) -> None: ...

    def operation(self, op: str) -> Callable[[list[Vr]], None]:
        return {
            "create": self.create,
            "start": self.start,
            "retrieve": self.retrieve,
            "remove": self.remove,
        }[op]


# -- SNMP --------------------------------------------------------------------------------


class Snmp(Interface):
    def __init__(self, name: str, version: str, make_client: Callable[[], Any], warm: bool = True):
        self.name, self.version, self.make_client = name, version, make_client
        self.client = make_client()
        if warm:  # v3: engine discovery and key localisation now, not in the first operation
            self.client.bulk(self.version, ["1.3.6.1.2.1.1"], 1)

    def create(self, vrs: list[Vr]) -> None:
        from vnet.bench.snmp.workload import create_pairs

        for vr in vrs:
            self.client.set(self.version, create_pairs(vr.index, 2, vr.network, vr.ipv4))

    def start(self, vrs: list[Vr]) -> None:
        from vnet.bench.snmp.workload import admin_pairs

        for vr in vrs:
            self.client.set(self.version, admin_pairs(vr.index, 1))

    def retrieve(self, vrs: list[Vr]) -> None:
        from vnet.bench.snmp.workload import getbulk_oids

        for vr in vrs:
            _, out = self.client.bulk(self.version, getbulk_oids(vr.index), 1)
            if len(out) != 13 or str(out[0][1]) != f"b{vr.index}":
                raise MgmtBenchError(f"{self.name}: GETBULK of VR {vr.index} returned {out}")

    def remove(self, vrs: list[Vr]) -> None:
        from vnet.bench.snmp.workload import destroy_pairs

        for vr in vrs:
            self.client.set(self.version, destroy_pairs(vr.index))

    def fresh(self) -> Snmp:
        return Snmp(self.name, self.version, self.make_client, warm=False)

    def close(self) -> None:
        self.client.close()


# -- NETCONF ---------------------------------------------------------------------------------


def _router(vr: Vr, op: str = "", admin: str | None = "down", full: bool = True) -> str:
    attr = f' nc:operation="{op}"' if op else ""
    body = f"<name>{vr.name}</name>"
    if full:
        body += f"<index>{vr.index}</index>"
    if admin:
        body += f"<admin-state>{admin}</admin-state>"
    if full:
        body += (
            f"<interface><name>eth0</name><network>{vr.network}</network>"
            f"<ipv4>{vr.ipv4}</ipv4></interface>"
        )
    return f"<router{attr}>{body}</router>"


def _config(routers: list[str]) -> str:
    return f'<config xmlns:nc="{NC}"><routers xmlns="{NS}">{"".join(routers)}</routers></config>'


class Netconf(Interface):
    """ncclient over SSH, against the agent or another NETCONF server of the same module."""

    def __init__(self, name: str, connect: Callable[[], Any], state: bool = True):
        self.name, self.connect, self.state = name, connect, state
        self.m = connect()

    def _edit(self, xml: str) -> None:
        self.m.edit_config(target="running", config=xml)

    def create(self, vrs: list[Vr]) -> None:
        self._edit(_config([_router(vr, "create") for vr in vrs]))

    def start(self, vrs: list[Vr]) -> None:
        self._edit(_config([_router(vr, admin="up", full=False) for vr in vrs]))

    def retrieve(self, vrs: list[Vr]) -> None:
        names = "".join(f"<router><name>{vr.name}</name></router>" for vr in vrs)
        reply = self.m.get(filter=("subtree", f'<routers xmlns="{NS}">{names}</routers>'))
        found = reply.data.findall(f".//{{{NS}}}router")
        if len(found) != len(vrs):
            raise MgmtBenchError(f"{self.name}: get of {len(vrs)} VRs returned {len(found)}")
        if self.state and reply.data.findtext(f".//{{{NS}}}oper-state") is None:
            raise MgmtBenchError(f"{self.name}: get returned no oper-state")

    def remove(self, vrs: list[Vr]) -> None:
        self._edit(_config([_router(vr, "delete", admin=None, full=False) for vr in vrs]))

    def fresh(self) -> Netconf:
        return Netconf(self.name, self.connect, self.state)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.m.close_session()


# -- RESTCONF ----------------------------------------------------------------------------


class Restconf(Interface):
    """vnet.client.RestconfClient (httpx) over HTTPS; one request per VR."""

    name = "RESTCONF"

    def __init__(self, endpoint: Any, warm: bool = True):
        from vnet.client import RestconfClient

        self.endpoint = endpoint
        self.client = RestconfClient(endpoint)
        if warm:  # the TCP connection and TLS handshake now, not in the first operation
            self.client.request("GET", "/restconf/yang-library-version")

    def create(self, vrs: list[Vr]) -> None:
        from vnet.model import VirtualRouter

        for vr in vrs:
            self.client.create_router(
                VirtualRouter.model_validate(
                    {
                        "name": vr.name,
                        "host": "h1",
                        "index": vr.index,
                        "admin_state": "down",
                        "interfaces": [{"name": "eth0", "network": vr.network, "ipv4": vr.ipv4}],
                    }
                )
            )

    def start(self, vrs: list[Vr]) -> None:
        for vr in vrs:
            self.client.set_admin(vr.name, "up")

    def retrieve(self, vrs: list[Vr]) -> None:
        for vr in vrs:
            if self.client.router(vr.name) is None:
                raise MgmtBenchError(f"RESTCONF: GET of {vr.name} found nothing")

    def remove(self, vrs: list[Vr]) -> None:
        for vr in vrs:
            self.client.delete_router(vr.name)

    def fresh(self) -> Restconf:
        return Restconf(self.endpoint, warm=False)

    def close(self) -> None:
        self.client.close()
