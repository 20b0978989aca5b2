"""The kernel's limit on the ports of one bridge, checked before anything is created.

A bridge numbers its ports with BR_PORT_BITS = 10 bits and keeps number 0 for
itself (net/bridge/br_private.h, br_if.c: find_portno), so it takes at most
1023 ports; the 1024th `ip link set ... master` fails with "Exchange full"
(EXFULL). Without this check, 1100 VRs on one network failed after 56 s at
the bridge's last port and were rolled back (issue 17, finding 6).

Every virtual network is one bridge per host that carries it; its ports are
the VXLAN device (when other hosts carry the network too), one veth per VR
interface and one per end host on that host. The lab's management bridge has
one port per physical host.
"""

from __future__ import annotations

from collections.abc import Callable

from vnet.model.errors import Loc, Problem
from vnet.model.topology import Topology

BRIDGE_MAX_PORTS = 1023  # 2**BR_PORT_BITS - 1: port number 0 is the bridge's own


def bridge_port_problems(topo: Topology, has_vxlan: Callable[[str, str], bool]) -> list[Problem]:
    """The first VR interface or end host past a bridge's last port, per bridge.

    `has_vxlan(network, host)`: whether the network's bridge on that host also
    holds a VXLAN device (which then takes one of the ports).
    """
    ports: dict[tuple[str, str], int] = {}
    problems: list[Problem] = []

    def take(network: str, host: str, loc: Loc, subject: str) -> None:
        key = (network, host)
        if key not in ports:
            ports[key] = 1 if has_vxlan(network, host) else 0
        ports[key] += 1
        if ports[key] == BRIDGE_MAX_PORTS + 1:  # report each bridge once, where it overflows
            vxlan = " (one of them its VXLAN device)" if has_vxlan(network, host) else ""
            problems.append(
                Problem(
                    loc,
                    f"network {network!r} would need more than {BRIDGE_MAX_PORTS} ports on its "
                    f"bridge on host {host!r}{vxlan}, the kernel's limit for one bridge; "
                    "spread its members over more hosts or networks",
                    subject,
                )
            )

    for i, vr in enumerate(topo.routers):
        for k, itf in enumerate(vr.interfaces):
            take(
                itf.network,
                vr.host,
                ("routers", i, "interfaces", k, "network"),
                f"router {vr.name!r}",
            )
    for i, eh in enumerate(topo.endhosts):
        take(eh.network, eh.host, ("endhosts", i, "network"), f"end host {eh.name!r}")
    if topo.management is not None and len(topo.hosts) > BRIDGE_MAX_PORTS:
        problems.append(
            Problem(
                ("hosts", BRIDGE_MAX_PORTS),
                f"the management network's bridge takes one port per host, and the kernel "
                f"allows {BRIDGE_MAX_PORTS} ports on a bridge; this lab has "
                f"{len(topo.hosts)} hosts",
            )
        )
    return problems
