"""A three-host managed lab for the controller's agents layer (issue 12, part 6), the pieces
a connection leaves on each host (computed by vnet's model, as the controller does), and an
independent view of the agents (raw ncclient over the lab's management network)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

from ncclient import manager
from ruamel.yaml import YAML

from vnet.client import Endpoint
from vnet.controller.agents.realise import HostChange
from vnet.lab import lab as labmod
from vnet.model import build_topology
from vnet.model.host_pieces import connection_pieces

from .agent_support import netconf_connect
from .conftest import Labs, unique_lab

HOSTS = ("h1", "h2", "h3")
_ids = itertools.count(1)  # connection ids (SIDs) unique across the module's tests
LAB = """\
name: {name}
hosts: [{{name: h1}}, {{name: h2}}, {{name: h3}}]
links:
  - {{a: h1, b: h2, rate: 1gbit}}
  - {{a: h2, b: h3, rate: 1gbit}}
management:
  user: admin
tenants:
  - {{name: acme, routing: auto}}
networks:
  - {{name: lan1, tenant: acme, vni: 501, ipv4: 10.51.1.0/24, ipv6: "fd00:51:1::/64"}}
  - {{name: c12, tenant: acme, vni: 502, ipv4: 10.51.2.0/24, ipv6: "fd00:51:2::/64"}}
  - {{name: c23, tenant: acme, vni: 503, ipv4: 10.51.3.0/24, ipv6: "fd00:51:3::/64"}}
  - {{name: lan3, tenant: acme, vni: 504, ipv4: 10.51.4.0/24, ipv6: "fd00:51:4::/64"}}
routers:
  - name: r1
    host: h1
    interfaces:
      - {{network: lan1, ipv4: 10.51.1.254/24, ipv6: "fd00:51:1::fe/64"}}
      - {{network: c12, ipv4: 10.51.2.1/24, ipv6: "fd00:51:2::1/64"}}
  - name: r2
    host: h2
    interfaces:
      - {{network: c12, ipv4: 10.51.2.2/24, ipv6: "fd00:51:2::2/64"}}
      - {{network: c23, ipv4: 10.51.3.2/24, ipv6: "fd00:51:3::2/64"}}
  - name: r3
    host: h3
    interfaces:
      - {{network: c23, ipv4: 10.51.3.3/24, ipv6: "fd00:51:3::3/64"}}
      - {{network: lan3, ipv4: 10.51.4.254/24, ipv6: "fd00:51:4::fe/64"}}
endhosts:
  - {{name: pc1, host: h1, network: lan1, ipv4: 10.51.1.1/24, ipv6: "fd00:51:1::1/64"}}
  - {{name: pc3, host: h3, network: lan3, ipv4: 10.51.4.3/24, ipv6: "fd00:51:4::3/64"}}
"""


class Lab:
    def __init__(self, name: str, path: Path):
        self.name, self.path = name, path

    def endpoints(self) -> dict[str, Endpoint]:
        """The controller's view: vnet.client Endpoints built from the lab's record."""
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
            data = m.get_config(
                "running", filter=("subtree", '<srv6 xmlns="urn:vnet:yang:vnet-router"/>')
            ).data_ele
        return {el.text for el in data.iter("{urn:vnet:yang:vnet-router}name")}

    def changes(self, *names: str) -> dict[str, list[HostChange]]:
        """Per connection name: the HostChanges that realise it along r1 -> r2 -> r3, as
        vnet's model computes them (each with an id of its own)."""
        data = YAML(typ="safe").load(self.path.read_text())
        data["connections"] = []
        for name in names:
            number = next(_ids)
            data["connections"].append(
                {
                    "name": name,
                    "id": number,
                    "a": "pc1",
                    "b": "pc3",
                    "protocol": "udp",
                    "dst_port": 5000 + number,
                    "bandwidth": "10mbit",
                    "path": ["r1", "r2", "r3"],
                }
            )
        pieces = connection_pieces(build_topology(data))
        return {
            name: [
                HostChange(host, put=(srv6.connection(name),), locators=tuple(srv6.locators))
                for host, srv6 in sorted(pieces.items())
            ]
            for name in names
        }


def start_lab(module_labs: Labs) -> Iterator[Lab]:
    """For a module fixture: the lab up for the module's tests, taken down after them."""
    name = unique_lab()
    path = module_labs.tmp / f"{name}.yaml"
    path.write_text(LAB.format(name=name))
    module_labs.names.append(name)
    labmod.up(path)
    yield Lab(name, path)
