"""What each host's agent must carry for one admitted connection direction.

The controller admits a path of hosts; on each host one VR of the tenant forwards
the connection. From that path and the VRs' locators this builds the model's own
per-host types (`vnet.model.host_guarantees`), the same ones a lab derives from
its topology (`vnet.model.host_pieces`), with the SIDs of `vnet.model.srv6`:

- the first VR: Ingress (5-tuple steering rule, segment list, shaper);
- the VRs in between: Transit with their End SID for this connection;
- the last VR: Egress with End.DX4/End.DX6 to the destination end host.

The segment list is [End of hop 1, ..., End of hop n-1, DX of hop n]: as many
SIDs as the path has links, which is what `cost.link_cost` charges for.
One call is one direction; a two-way connection asks twice, ends swapped.
"""

from __future__ import annotations

from dataclasses import dataclass
from ipaddress import IPv4Address, IPv6Address, IPv6Network
from typing import Any

from vnet.model.connection import Protocol
from vnet.model.host_guarantees import ConnectionPieces, Egress, Ingress, Transit
from vnet.model.srv6 import FUNC_DX4, FUNC_DX6, FUNC_END, sid


@dataclass(frozen=True)
class Hop:
    """The VR that forwards the connection on one host of its path."""

    host: str
    router: str
    locator: IPv6Network
    network: str  # the VR's network towards the next hop (ingress: where the shaper sits)


@dataclass(frozen=True)
class Ends:
    """The end hosts and the flow of one connection direction."""

    source: IPv4Address | IPv6Address
    destination: IPv4Address | IPv6Address
    lan_network: str  # the source end host's network at the ingress VR
    egress_network: str  # the destination end host's network at the egress VR
    protocol: Protocol | None = None
    source_port: int | None = None
    destination_port: int | None = None


def host_pieces(
    name: str, connection_id: int, bandwidth: int, hops: list[Hop], ends: Ends
) -> dict[str, ConnectionPieces]:
    """host -> the connection's pieces on it, for a path of at least two hosts."""
    _check(hops, ends)
    dx = FUNC_DX4 if isinstance(ends.destination, IPv4Address) else FUNC_DX6
    transit_sids = [sid(h.locator, connection_id, FUNC_END) for h in hops[1:-1]]
    egress_sid = sid(hops[-1].locator, connection_id, dx)
    first, last = hops[0], hops[-1]
    ingress = Ingress(
        router=first.router,
        lan_network=ends.lan_network,
        network=first.network,
        source=ends.source,
        destination=ends.destination,
        protocol=ends.protocol,
        source_port=ends.source_port,
        destination_port=ends.destination_port,
        segments=[*transit_sids, egress_sid],
        bandwidth=bandwidth,
    )
    egress = Egress(
        router=last.router, sid=egress_sid, network=ends.egress_network, next_hop=ends.destination
    )
    parts: dict[str, dict[str, list[Any]]] = {h.host: {} for h in hops}
    parts[first.host]["ingress"] = [ingress]
    parts[last.host]["egress"] = [egress]
    for hop, end_sid in zip(hops[1:-1], transit_sids, strict=True):
        parts[hop.host]["transit"] = [Transit(router=hop.router, sid=end_sid, network=hop.network)]
    # validated on construction: a bad port or bandwidth fails here, naming the field
    return {host: ConnectionPieces(name=name, id=connection_id, **p) for host, p in parts.items()}


def _check(hops: list[Hop], ends: Ends) -> None:
    if len(hops) < 2:
        raise ValueError(f"a path of {len(hops)} host(s): an SRv6 connection needs two or more")
    hosts = [h.host for h in hops]
    if len(set(hosts)) != len(hosts):
        raise ValueError(f"path {hosts} visits a host twice")
    if ends.source.version != ends.destination.version:
        raise ValueError(
            f"source {ends.source} and destination {ends.destination}: families differ"
        )
