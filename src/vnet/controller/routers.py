"""Which of the tenant's VRs carries a connection on each host of its path.

The first VR is the one end host a sends b's packets to (its gateway, as the model routes
them: `vnet.model.srv6.gateway`), so the steering rule sees them; the last one has an
interface in b's network to deliver to it (and is b's gateway towards a when the connection
is two-way, where the reverse tunnel starts); consecutive VRs share a network over IPv6,
so each segment is one hop away. Among several choices the VRs come in file order.
"""

from __future__ import annotations

from ipaddress import IPv4Address, IPv6Address

from vnet.controller.errors import BadRequest
from vnet.model.srv6 import gateway, interface_in, shared_network
from vnet.model.topology import EndHost, Topology, VirtualRouter

FAMILIES = (("ipv4", 4), ("ipv6", 6))


def choose_routers(
    topo: Topology,
    routers: list[VirtualRouter],
    a: EndHost,
    b: EndHost,
    path: tuple[str, ...],
    both_ways: bool,
) -> tuple[str, ...]:
    """The VR on each host of `path` (hosts, a's first) among `routers` (the tenant's, in
    file order); BadRequest naming where it fails."""
    tenant = topo.network(a.network).tenant
    mine = {host: [vr for vr in routers if vr.host == host] for host in path}
    first = _gateway_on(topo, a, b, path[0], "a")
    if both_ways:
        lasts = [_gateway_on(topo, b, a, path[-1], "b")]
    else:
        lasts = [vr for vr in mine[path[-1]] if interface_in(vr, b.network) is not None]
        if not lasts:
            raise BadRequest(
                f"tenant {tenant!r} has no VR on host {path[-1]!r} in {b.name!r}'s network"
                f" {b.network!r} to deliver to it",
                field="path",
            )
    chain = _Chain(mine, path, lasts)
    found = chain.walk(0, first)
    if found is None:
        k, stuck = chain.deepest
        raise BadRequest(
            f"path[{k + 1}] {path[k + 1]!r}: tenant {tenant!r} has no VR there that shares a"
            f" network over IPv6 with {stuck.name} on {path[k]!r}"
            + (" and leads on to b" if k + 2 < len(path) else f" and delivers to {b.name!r}"),
            field="path",
        )
    return tuple(vr.name for vr in found)


def _addresses(a: EndHost, b: EndHost) -> list[IPv4Address | IPv6Address]:
    """b's addresses in the families both end hosts have."""
    out = []
    for attr, _ in FAMILIES:
        if getattr(a, attr) is not None and getattr(b, attr) is not None:
            out.append(getattr(b, attr).ip)
    if not out:
        raise BadRequest(f"{a.name!r} and {b.name!r} have no address family in common", field="b")
    return out


def _gateway_on(topo: Topology, src: EndHost, dst: EndHost, host: str, end: str) -> VirtualRouter:
    """The VR `src` sends `dst`'s packets to, which must be on `host`."""
    chosen = None
    for ip in _addresses(src, dst):
        name = gateway(topo, src, ip)
        if name is None:
            raise BadRequest(f"{end}: {src.name!r} has no route to {dst.name!r} ({ip})", field=end)
        vr = topo.router(name)
        if vr.host != host:
            raise BadRequest(
                f"{src.name!r} sends packets for {ip} to {name} on host {vr.host!r}, so its"
                f" tunnel must start there, not on {host!r}",
                field="path",
            )
        if chosen is not None and chosen.name != vr.name:
            raise BadRequest(
                f"{end}: {src.name!r} sends IPv4 to {chosen.name} but IPv6 to {vr.name};"
                " a connection starts at one VR",
                field=end,
            )
        chosen = vr
    assert chosen is not None, "_addresses returns at least one address"
    return chosen


class _Chain:
    """Depth-first search for VRs along the hosts, remembering where it got furthest."""

    def __init__(
        self,
        mine: dict[str, list[VirtualRouter]],
        path: tuple[str, ...],
        lasts: list[VirtualRouter],
    ):
        self.mine, self.path, self.lasts = mine, path, lasts
        self.deepest: tuple[int, VirtualRouter] = (0, lasts[0])

    def walk(self, k: int, here: VirtualRouter) -> list[VirtualRouter] | None:
        if k == len(self.path) - 1:
            return [here]
        if k >= self.deepest[0]:
            self.deepest = (k, here)
        nexts = self.lasts if k + 1 == len(self.path) - 1 else self.mine[self.path[k + 1]]
        for nxt in nexts:
            if shared_network(here, nxt) is not None:
                rest = self.walk(k + 1, nxt)
                if rest is not None:
                    return [here, *rest]
        return None
