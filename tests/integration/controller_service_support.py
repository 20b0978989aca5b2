"""A three-host managed lab (a triangle) and the controller's Service on it, over SQLite or
PostgreSQL, for tests/integration/test_controller_service*.py.

    h1 ---- 100 Mbit/s ---- h3        pc1 (h1, lan1) -> pc3 (h3, lan3): one hop direct,
      \\                    /          or two through h2 (r2)
       1 Gbit/s    1 Gbit/s
          \\          /
             h2                       tenant beta: its own VR and end host on h2

The VRs carry static routes to each other's SRv6 locators (fc00:1:<k>::/48, as
`vnet.model.srv6.locator` numbers them): a lab derives these only for tenants with
connections in its own file (`srv6.locator_routes`), and the controller's connections are
not in the file.

Everything the tests check on the agents is read with independent NETCONF sessions (raw
ncclient) or the kernel, never through the controller.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ncclient import manager
from ruamel.yaml import YAML
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from tests.controller_db_support import held_per_direction
from tests.controller_topology_support import TRIANGLE_LAB as LAB
from vnet.client import Endpoint
from vnet.controller import inventory
from vnet.controller.agents.netconf import NetconfSouthbound
from vnet.controller.db import make_engine, upgrade
from vnet.controller.db.models import Connection, ConnectionState, RequestJournal, Reservation
from vnet.controller.principal import Principal
from vnet.controller.service.core import Service
from vnet.lab import lab as labmod
from vnet.lab.access import agent_endpoint
from vnet.model import build_topology
from vnet.model.controller_config import ControllerConfig
from vnet.substrate.tc import VNET_MAJOR

from .agent_support import netconf_connect
from .conftest import Labs, unique_lab

HOSTS = ("h1", "h2", "h3")
PROVIDER = Principal("provider")
ACME = Principal("tenant", "acme")
BETA = Principal("tenant", "beta")
PC3 = "10.61.4.3"
SRV6_FILTER = ("subtree", '<srv6 xmlns="urn:vnet:yang:vnet-router"/>')


def ns(lab: str, node: str) -> str:
    return f"vnet-{lab}-{node}"


def shaper_class(number: int) -> int:
    """The classid of a connection's shaper at its ingress VR (76:<number>)."""
    return (VNET_MAJOR << 16) | number


class Lab:
    hosts = HOSTS

    def __init__(self, name: str, path: Path, tmp: Path):
        self.name, self.path, self.tmp = name, path, tmp

    def endpoints(self) -> dict[str, Endpoint]:
        out = {}
        for host in HOSTS:
            ep = agent_endpoint(self.name, host)
            out[host] = Endpoint(
                address=ep.address,
                port=ep.port,
                user=ep.user,
                password=ep.password,
                namespace=ep.namespace,
                timeout=20,
                host=host,
            )
        return out

    def topology(self) -> Any:
        return build_topology(YAML(typ="safe").load(self.path.read_text()))

    def connect(self, host: str) -> manager.Manager:
        """An independent NETCONF session (raw ncclient), not the controller's."""
        ep = agent_endpoint(self.name, host)
        return netconf_connect(ep.namespace, ep.address, ep.port, ep.user, ep.password)

    def running(self) -> dict[str, str]:
        """Every host's whole running configuration, as XML."""
        out = {}
        for host in HOSTS:
            with self.connect(host) as m:
                out[host] = m.get_config("running").data_xml
        return out

    def connection_names(self, host: str) -> set[str]:
        with self.connect(host) as m:
            data = m.get_config("running", filter=SRV6_FILTER).data_ele
        return {
            el.text or ""
            for el in data.iter("{urn:vnet:yang:vnet-router}name")
            if (el.text or "").startswith("vc")
        }

    def controller_pieces(self) -> dict[str, set[str]]:
        return {host: self.connection_names(host) for host in HOSTS}


def start_lab(module_labs: Labs) -> Iterator[Lab]:
    name = unique_lab()
    path = module_labs.tmp / f"{name}.yaml"
    path.write_text(LAB.format(name=name))
    module_labs.names.append(name)
    labmod.up(path)
    yield Lab(name, path, module_labs.tmp)


def prepare_database(lab: Lab, url: str) -> None:
    """Migrate and load the lab's topology as the controller's inventory."""
    upgrade(url)
    engine = make_engine(url)
    try:
        with Session(engine) as session, session.begin():
            inventory.load(session, lab.topology(), [])
    finally:
        engine.dispose()


def make_service(lab: Lab, url: str, **agent_options: Any) -> Service:
    config = ControllerConfig(
        state_dir=lab.tmp / f"controller-{uuid.uuid4().hex[:8]}",
        database=url,
        reconcile_interval=3600,
        utilisation_interval=0.5,
        confirm_timeout=30,
    )
    return Service(config, make_engine(url), NetconfSouthbound(lab.endpoints()), **agent_options)


async def close(service: Service) -> None:
    await service.stop()
    await service.agents.close()
    service.db.engine.dispose()


def run(coro: Any) -> Any:
    return asyncio.run(coro)


# -- what the database says, read independently of the service --------------------------------
def number_of(url: str, name: str) -> int:
    """The live connection's number: its pieces' id (SID field, shaper classid minor)."""
    engine = make_engine(url)
    try:
        with Session(engine) as session:
            query = select(Connection.number).where(
                Connection.name == name, Connection.state != ConnectionState.RELEASED
            )
            return int(session.scalars(query).one())
    finally:
        engine.dispose()


def class_packets(shaper: Any) -> int:
    """Packets the HTB class `shaper` (a ClassRef) has sent, read from the kernel."""
    from vnet.substrate import Kernel

    with Kernel() as k:
        for c in k.classes(shaper.ns, k.index(shaper.ns, shaper.dev)):
            if c["handle"] == shaper.classid:
                return int((c.get_nested("TCA_STATS2", "TCA_STATS_BASIC") or {})["packets"])
    return 0


def reservation_generations(engine: Engine, name: str) -> list[int]:
    """The generations of every reservation row (released or not) of the live `name`."""
    with Session(engine) as session:
        query = (
            select(Reservation.generation)
            .join(Connection, Connection.id == Reservation.connection_id)
            .where(Connection.name == name, Connection.state != ConnectionState.RELEASED)
            .distinct()
            .order_by(Reservation.generation)
        )
        return list(session.scalars(query))


def live_connections(engine: Engine) -> dict[str, str]:
    """vc<id> -> state, for every connection not released."""
    with Session(engine) as session:
        rows = session.execute(
            select(Connection.id, Connection.state).where(
                Connection.state != ConnectionState.RELEASED
            )
        )
        return {f"vc{i}": state.value for i, state in rows}


def unfinished_requests(engine: Engine) -> list[str]:
    with Session(engine) as session:
        query = select(RequestJournal.request_id).where(
            RequestJournal.phase.not_in(("done", "failed"))
        )
        return list(session.scalars(query))


def database_state(engine: Engine) -> tuple[Any, ...]:
    """What a refused request must leave as it was: the live connections (state and
    generation) and what is held per link direction. (A refused request's attempt stays as
    history: a released row with a "failed" event.)"""
    with Session(engine) as session:
        rows = session.execute(
            select(Connection.id, Connection.state, Connection.generation)
            .where(Connection.state != ConnectionState.RELEASED)
            .order_by(Connection.id)
        ).all()
    return tuple(rows), tuple(sorted(held_per_direction(engine).items()))


def shaper_rate(lab: Lab, number: int) -> int:
    """The rate (bit/s) of a connection's shaper on r1's interface towards h3, from the kernel."""
    from vnet.substrate import Kernel
    from vnet.substrate.tc import _htb_rate

    namespace = ns(lab.name, "r1")
    with Kernel() as k:
        for c in k.classes(namespace, k.index(namespace, "eth2")):
            if c["handle"] == shaper_class(number):
                return _htb_rate(c, "rate")
    raise LookupError(f"no shaper 76:{number:x} on r1 eth2")


def shaper_rates(lab: Lab) -> dict[str, list[int]]:
    """r1's connection shapers (classes 76:*) per interface towards the underlay (eth1: c12
    towards h2, eth2: c13 towards h3), their rates in bit/s, from the kernel."""
    from vnet.substrate import Kernel
    from vnet.substrate.tc import _htb_rate

    namespace = ns(lab.name, "r1")
    out: dict[str, list[int]] = {}
    with Kernel() as k:
        for dev in ("eth1", "eth2"):
            classes = k.classes(namespace, k.index(namespace, dev))
            out[dev] = [_htb_rate(c, "rate") for c in classes if c["handle"] >> 16 == VNET_MAJOR]
    return out
