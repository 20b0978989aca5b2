"""A small inventory for the controller's tests: three hosts in a triangle, two tenants.

    h1 ---- h2 ---- h3        links h1-h2 and h2-h3 at 1 Gbit/s, h1-h3 at 100 Mbit/s
     \\_____________/

Tenant acme has a VR on each host (r1, r2, r3), all in network "core" (IPv6 and IPv4), and
end hosts pc1 (h1, behind r1), pc2 (h2, behind r2) and pc3 (h3, behind r3). Tenant other
has one VR and one end host on h1, and a VR on h3 (o3) that shares no network with acme's.
"""

from __future__ import annotations

import copy
import functools
from typing import Any

from ruamel.yaml import YAML

from vnet.model import build_topology
from vnet.model.controller_config import AgentAccess
from vnet.model.topology import Topology

GBIT = 1_000_000_000
MBIT = 1_000_000


# The three-host managed lab of the Service's tests (a triangle; tenant beta on h2), a
# str.format template of its name. The VRs carry static routes to each other's SRv6
# locators (fc00:1:<k>::/48, as `vnet.model.srv6.locator` numbers them): a lab derives these
# only for tenants with connections in its own file, and the controller's are not.
TRIANGLE_LAB = """\
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


def triangle(name: str = "tri") -> Topology:
    """TRIANGLE_LAB as a checked topology, a new one at each call."""
    return build_topology(copy.deepcopy(_triangle_data(name)))


@functools.cache
def _triangle_data(name: str) -> dict[str, Any]:
    # parsed once per process: ruamel's YAML parser (pure Python here) took about 40 ms,
    # and the controller's tests on hosts in memory build a triangle for each case
    return YAML(typ="safe").load(TRIANGLE_LAB.format(name=name))  # type: ignore[no-any-return]


def data() -> dict[str, Any]:
    def lan(name: str, tenant: str, k: int) -> dict[str, Any]:
        return {
            "name": name,
            "tenant": tenant,
            "vni": 100 + k,
            "ipv4": f"10.{k}.0.0/24",
            "ipv6": f"fd00:{k}::/64",
        }

    def vr(name: str, host: str, nets: list[tuple[str, int]], index: int) -> dict[str, Any]:
        return {
            "name": name,
            "host": host,
            "interfaces": [
                {"network": n, "ipv4": f"10.{k}.0.{index}/24", "ipv6": f"fd00:{k}::{index:x}/64"}
                for n, k in nets
            ],
        }

    def pc(name: str, host: str, net: str, k: int) -> dict[str, Any]:
        return {
            "name": name,
            "host": host,
            "network": net,
            "ipv4": f"10.{k}.0.100/24",
            "ipv6": f"fd00:{k}::100/64",
        }

    return {
        "name": "ctl",
        "hosts": [{"name": "h1"}, {"name": "h2"}, {"name": "h3"}],
        "links": [
            {"a": "h1", "b": "h2", "rate": "1gbit"},
            {"a": "h2", "b": "h3", "rate": "1gbit"},
            {"a": "h1", "b": "h3", "rate": "100mbit"},
        ],
        "tenants": [{"name": "acme", "routing": "auto"}, {"name": "other"}],
        "networks": [
            lan("core", "acme", 10),
            lan("lan1", "acme", 1),
            lan("lan2", "acme", 2),
            lan("lan3", "acme", 3),
            lan("olan", "other", 20),
            lan("ocore", "other", 21),
        ],
        "routers": [
            vr("r1", "h1", [("lan1", 1), ("core", 10)], 1),
            vr("r2", "h2", [("core", 10), ("lan2", 2)], 2),
            vr("r3", "h3", [("core", 10), ("lan3", 3)], 3),
            vr("o1", "h1", [("olan", 20), ("ocore", 21)], 1),
            vr("o3", "h3", [("ocore", 21)], 3),
        ],
        "endhosts": [
            pc("pc1", "h1", "lan1", 1),
            pc("pc2", "h2", "lan2", 2),
            pc("pc3", "h3", "lan3", 3),
            pc("opc", "h1", "olan", 20),
        ],
    }


def topology(extra: dict[str, Any] | None = None) -> Topology:
    return build_topology({**data(), **(extra or {})})


def agents() -> list[AgentAccess]:
    return [
        AgentAccess(host=h, address=f"172.30.0.{k}", password_file=f"/etc/vnet/{h}.pw")
        for k, h in enumerate(("h1", "h2", "h3"), start=1)
    ]
