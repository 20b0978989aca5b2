"""A managed lab of hosts in a line for the controller's agents layer (issue 12, part 6), the pieces
a connection leaves on each host (computed by vnet's model, as the controller does), and an
independent view of the agents (raw ncclient over the lab's management network)."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ncclient import manager

from vnet.client import Endpoint
from vnet.controller.agents.realise import HostChange
from vnet.lab import lab as labmod
from vnet.lab.access import agent_endpoint
from vnet.model import build_topology
from vnet.model.host_pieces import connection_pieces

from .agent_support import netconf_connect
from .conftest import Labs, unique_lab

HOSTS = ("h1", "h2", "h3")
_ids = itertools.count(1)  # connection ids (SIDs) unique across a lab's uses


def line_lab(name: str, hosts: int) -> dict[str, Any]:
    """Hosts h1..hN in a line; tenant acme's VR r<i> on h<i>, consecutive VRs sharing a
    network (c12 between r1 and r2 with a guarantee); end host pc1 behind r1, pc<N>
    behind r<N>."""
    nets = ["lan1"] + [f"c{i}{i + 1}" for i in range(1, hosts)] + [f"lan{hosts}"]

    def net(k: int) -> dict[str, Any]:
        return {
            "name": nets[k],
            "tenant": "acme",
            "vni": 501 + k,
            "ipv4": f"10.51.{k + 1}.0/24",
            "ipv6": f"fd00:51:{k + 1}::/64",
        } | ({"bandwidth": "500mbit"} if nets[k] == "c12" else {})  # an HTB class on h1-h2

    def itf(k: int, last: int) -> dict[str, str]:
        return {
            "network": nets[k],
            "ipv4": f"10.51.{k + 1}.{last}/24",
            "ipv6": f"fd00:51:{k + 1}::{last:x}/64",
        }

    routers = [
        {"name": f"r{i}", "host": f"h{i}", "interfaces": [itf(i - 1, 200 + i), itf(i, i)]}
        for i in range(1, hosts + 1)
    ]
    return {
        "name": name,
        "hosts": [{"name": f"h{i}"} for i in range(1, hosts + 1)],
        "links": [{"a": f"h{i}", "b": f"h{i + 1}", "rate": "1gbit"} for i in range(1, hosts)],
        "management": {"user": "admin"},
        "tenants": [{"name": "acme", "routing": "auto"}],
        "networks": [net(k) for k in range(len(nets))],
        "routers": routers,
        "endhosts": [
            {
                "name": "pc1",
                "host": "h1",
                "network": "lan1",
                "ipv4": "10.51.1.1/24",
                "ipv6": "fd00:51:1::1/64",
            },
            {
                "name": f"pc{hosts}",
                "host": f"h{hosts}",
                "network": nets[-1],
                "ipv4": f"10.51.{len(nets)}.1/24",
                "ipv6": f"fd00:51:{len(nets)}::1/64",
            },
        ],
    }


class Lab:
    def __init__(self, name: str, path: Path, hosts: int = len(HOSTS)):
        self.name, self.path = name, path
        self.hosts = tuple(f"h{i}" for i in range(1, hosts + 1))

    def endpoints(self) -> dict[str, Endpoint]:
        """The controller's view: vnet.client Endpoints built from the lab's record."""
        out = {}
        for host in self.hosts:
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

    def connect(self, host: str) -> manager.Manager:
        """An independent NETCONF session (raw ncclient), not the controller's."""
        ep = agent_endpoint(self.name, host)
        return netconf_connect(ep.namespace, ep.address, ep.port, ep.user, ep.password)

    def running(self) -> dict[str, str]:
        """Every host's whole running configuration, as XML."""
        out = {}
        for host in self.hosts:
            with self.connect(host) as m:
                out[host] = m.get_config("running").data_xml
        return out

    def connection_names(self, host: str) -> set[str]:
        with self.connect(host) as m:
            data = m.get_config(
                "running", filter=("subtree", '<srv6 xmlns="urn:vnet:yang:vnet-router"/>')
            ).data_ele
        return {el.text for el in data.iter("{urn:vnet:yang:vnet-router}name")}

    def changes(self, *names: str, bandwidth: str = "10mbit") -> dict[str, list[HostChange]]:
        """Per connection name: the HostChanges that realise it along r1 -> ... -> rN, as
        vnet's model computes them (each with an id of its own)."""
        data = json.loads(self.path.read_text())
        last = len(self.hosts)
        data["connections"] = []
        for name in names:
            number = next(_ids)
            data["connections"].append(
                {
                    "name": name,
                    "id": number,
                    "a": "pc1",
                    "b": f"pc{last}",
                    "protocol": "udp",
                    "dst_port": 5000 + number,
                    "bandwidth": bandwidth,
                    "path": [f"r{i}" for i in range(1, last + 1)],
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


def start_lab(module_labs: Labs, hosts: int = len(HOSTS)) -> Iterator[Lab]:
    """For a module fixture: the lab up for the module's tests, taken down after them."""
    name = unique_lab()
    path = module_labs.tmp / f"{name}.yaml"
    path.write_text(json.dumps(line_lab(name, hosts)))  # JSON is YAML
    module_labs.names.append(name)
    labmod.up(path)
    yield Lab(name, path, hosts)
