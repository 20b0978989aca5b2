"""A generated substrate for the controller at sizes no lab can emulate: a leaf-spine of hosts.

`spines` hosts form a full mesh of fast links; every other host (a leaf) has two uplinks, to
two neighbouring spines, so every pair of leaves has a path of at most three links (leaf,
spine, spine, leaf: at most three SRv6 segments, as on the 40-end-host lab) and most have
several, so admission has real choices. Each tenant has a VR on every host, joined by one
IPv6 core network over all hosts (a connection's path runs through its tenant's VRs), and
on every leaf a LAN with `endhosts` end hosts whose default route is the leaf's VR.
Addresses: tenant t's LAN on leaf i is 10.(8t + i // 256).(i % 256).0/24, its core
fd00:t::/64, so a substrate holds up to 2048 leaves and 31 tenants.
"""

from __future__ import annotations

import math

from vnet.model.topology import (
    EndHost,
    PhysicalHost,
    Tenant,
    Topology,
    UnderlayLink,
    VirtualNetwork,
    VirtualRouter,
)

MAX_LEAVES = 2048
MAX_TENANTS = 31
LAN_MTU = 1300  # room for a connection's SRv6 header inside the underlay's 1500


def spine_count(hosts: int) -> int:
    """About half the square root of the hosts (10 for 400, 16 for 1000), at least 2."""
    return max(2, round(math.sqrt(hosts) / 2))


def leaf_spine(
    hosts: int,
    tenants: int = 2,
    endhosts: int = 2,
    leaf_rate: str = "10gbit",
    spine_rate: str = "40gbit",
    name: str = "sim",
) -> Topology:
    """`hosts` physical hosts (spines included), `tenants` tenants, `endhosts` per tenant per
    leaf. ValueError for a size it cannot address."""
    spines = spine_count(hosts)
    leaves = hosts - spines
    if leaves < 2 or leaves > MAX_LEAVES:
        raise ValueError(f"{hosts} hosts: a substrate has 2 to {MAX_LEAVES} leaves, not {leaves}")
    if not 1 <= tenants <= MAX_TENANTS or not 1 <= endhosts <= 30:
        raise ValueError("1 to 31 tenants and 1 to 30 end hosts per leaf")
    spine_names = [f"s{k}" for k in range(spines)]
    leaf_names = [f"h{i}" for i in range(leaves)]
    links = [
        UnderlayLink.model_validate({"a": spine_names[x], "b": spine_names[y], "rate": spine_rate})
        for x in range(spines)
        for y in range(x + 1, spines)
    ]
    links += [
        UnderlayLink.model_validate(
            {"a": leaf, "b": spine_names[(i + up) % spines], "rate": leaf_rate}
        )
        for i, leaf in enumerate(leaf_names)
        for up in (0, 1)
    ]
    topo = Topology(
        name=name,
        hosts=[PhysicalHost(name=h) for h in spine_names + leaf_names],
        links=links,
        tenants=[Tenant(name=f"t{t}") for t in range(tenants)],
    )
    for t in range(tenants):
        _tenant(topo, t, spine_names, leaf_names, endhosts)
    return Topology.model_validate(topo.model_dump())


def _tenant(topo: Topology, t: int, spines: list[str], leaves: list[str], endhosts: int) -> None:
    """Tenant t's core network over every host with a VR on every host (a connection's path
    runs through VRs of its tenant sharing a network over IPv6), and on each leaf a LAN whose
    end hosts route through that leaf's VR."""
    core = f"t{t}-core"
    topo.networks.append(
        VirtualNetwork.model_validate(
            {"name": core, "tenant": f"t{t}", "vni": t + 1, "ipv6": f"fd00:{t}::/64"}
        )
    )
    for k, host in enumerate(spines + leaves):
        interfaces = [{"network": core, "ipv6": f"fd00:{t}::{k + 1:x}/64"}]
        i = k - len(spines)
        if i >= 0:
            interfaces.append({"network": _lan(t, i), "ipv4": f"{_prefix(t, i)}.254/24"})
            _leaf_lan(topo, t, i, host, endhosts)
        topo.routers.append(
            VirtualRouter.model_validate(
                {"name": f"t{t}-r{host}", "host": host, "interfaces": interfaces}
            )
        )


def _lan(t: int, i: int) -> str:
    return f"t{t}-lan{i}"


def _prefix(t: int, i: int) -> str:
    return f"10.{8 * t + i // 256}.{i % 256}"


def _leaf_lan(topo: Topology, t: int, i: int, leaf: str, endhosts: int) -> None:
    """Tenant t's LAN on leaf i and its end hosts, each sending through the leaf's VR."""
    prefix = _prefix(t, i)
    topo.networks.append(
        VirtualNetwork.model_validate(
            {
                "name": _lan(t, i),
                "tenant": f"t{t}",
                "vni": MAX_TENANTS + t * MAX_LEAVES + i + 1,
                "ipv4": f"{prefix}.0/24",
                "mtu": LAN_MTU,
            }
        )
    )
    topo.endhosts.extend(
        EndHost.model_validate(
            {
                "name": f"t{t}-{leaf}-{e}",
                "host": leaf,
                "network": _lan(t, i),
                "ipv4": f"{prefix}.{e}/24",
                "routes": [{"to": "default", "via": f"{prefix}.254"}],
            }
        )
        for e in range(1, endhosts + 1)
    )
