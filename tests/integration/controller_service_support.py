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
from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session

from vnet.client import Endpoint
from vnet.controller import inventory
from vnet.controller.agents.realise import Agents
from vnet.controller.db import make_engine, upgrade
from vnet.controller.db.models import Connection, ConnectionState, Link, RequestJournal, Reservation
from vnet.controller.principal import Principal
from vnet.controller.service.core import Service
from vnet.lab import lab as labmod
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
LAB = """\
name: {name}
hosts: [{{name: h1}}, {{name: h2}}, {{name: h3}}]
links:
  - {{a: h1, b: h2, rate: 1gbit}}
  - {{a: h2, b: h3, rate: 1gbit}}
  - {{a: h1, b: h3, rate: 100mbit}}
management:
  user: admin
tenants:
  - {{name: acme, routing: auto}}
  - {{name: beta, routing: auto}}
networks:
  - {{name: lan1, tenant: acme, vni: 601, ipv4: 10.61.1.0/24, ipv6: "fd00:61:1::/64"}}
  - {{name: c12, tenant: acme, vni: 602, ipv4: 10.61.2.0/24, ipv6: "fd00:61:2::/64"}}
  - {{name: c23, tenant: acme, vni: 603, ipv4: 10.61.3.0/24, ipv6: "fd00:61:3::/64"}}
  - {{name: lan3, tenant: acme, vni: 604, ipv4: 10.61.4.0/24, ipv6: "fd00:61:4::/64"}}
  - {{name: c13, tenant: acme, vni: 605, ipv4: 10.61.5.0/24, ipv6: "fd00:61:5::/64"}}
  - {{name: blan, tenant: beta, vni: 611, ipv4: 10.62.1.0/24, ipv6: "fd00:62:1::/64"}}
routers:
  - name: r1
    host: h1
    interfaces:
      - {{network: lan1, ipv4: 10.61.1.254/24, ipv6: "fd00:61:1::fe/64"}}
      - {{network: c12, ipv4: 10.61.2.1/24, ipv6: "fd00:61:2::1/64"}}
      - {{network: c13, ipv4: 10.61.5.1/24, ipv6: "fd00:61:5::1/64"}}
    routes:
      - {{to: "fc00:1:2::/48", via: "fd00:61:2::2"}}
      - {{to: "fc00:1:3::/48", via: "fd00:61:5::3"}}
  - name: r2
    host: h2
    interfaces:
      - {{network: c12, ipv4: 10.61.2.2/24, ipv6: "fd00:61:2::2/64"}}
      - {{network: c23, ipv4: 10.61.3.2/24, ipv6: "fd00:61:3::2/64"}}
    routes:
      - {{to: "fc00:1:1::/48", via: "fd00:61:2::1"}}
      - {{to: "fc00:1:3::/48", via: "fd00:61:3::3"}}
  - name: r3
    host: h3
    interfaces:
      - {{network: c23, ipv4: 10.61.3.3/24, ipv6: "fd00:61:3::3/64"}}
      - {{network: lan3, ipv4: 10.61.4.254/24, ipv6: "fd00:61:4::fe/64"}}
      - {{network: c13, ipv4: 10.61.5.3/24, ipv6: "fd00:61:5::3/64"}}
    routes:
      - {{to: "fc00:1:1::/48", via: "fd00:61:5::1"}}
      - {{to: "fc00:1:2::/48", via: "fd00:61:3::2"}}
  - name: rb
    host: h2
    interfaces:
      - {{network: blan, ipv4: 10.62.1.254/24, ipv6: "fd00:62:1::fe/64"}}
endhosts:
  - {{name: pc1, host: h1, network: lan1, ipv4: 10.61.1.1/24, ipv6: "fd00:61:1::1/64"}}
  - {{name: pc3, host: h3, network: lan3, ipv4: 10.61.4.3/24, ipv6: "fd00:61:4::3/64"}}
  - {{name: qb, host: h2, network: blan, ipv4: 10.62.1.1/24, ipv6: "fd00:62:1::1/64"}}
"""


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
            ep = labmod.agent_endpoint(self.name, host)
            out[host] = Endpoint(
                address=ep.address,
                port=ep.netconf_port,
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
        ep = labmod.agent_endpoint(self.name, host)
        return netconf_connect(ep.namespace, ep.address, ep.netconf_port, ep.user, ep.password)

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
    agents = Agents(lab.endpoints(), confirm_timeout=30, **agent_options)
    return Service(config, make_engine(url), agents)


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


def held_per_direction(engine: Engine) -> dict[tuple[str, bool], int]:
    with Session(engine) as session:
        query = (
            select(Link.name, Reservation.forward, func.sum(Reservation.bps))
            .join(Link, Link.id == Reservation.link_id)
            .where(Reservation.released.is_(None))
            .group_by(Link.name, Reservation.forward)
        )
        return {(n, bool(f)): int(t) for n, f, t in session.execute(query)}


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
