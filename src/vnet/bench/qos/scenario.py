"""The QoS benchmark's topology and flows: em-testbed's shape, shapers, one flow."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from vnet.bench.contract import BenchError, OptionError
from vnet.lab.probes import fping
from vnet.lab.shaping import ClassRef, FlowResult, run_flow
from vnet.model import Topology, build_topology, network_mtu
from vnet.model.srv6 import tunnels
from vnet.substrate import lab_placement
from vnet.substrate.realize import underlay_port_name

# The substrate's class handles, from this one place in the benchmark.
from vnet.substrate.realize_guarantees import network_minors
from vnet.substrate.tc import LINK_MAJOR, LINK_ROOT_CLASS, VNET_MAJOR, handle

LAB = "qos"
UDP_IPV4_OVERHEAD = 28  # IPv4 + UDP headers: datagram = MTU - 28
SWITCH_LOADS = [100, 900]
OFFER = 1.2
ACCURACY_LINK = "10gbit"
SWITCH_BANDWIDTH = "2gbit"
ISOLATION_SHARE = 0.3  # each tenant's guarantee, as a share of the link rate
FLOOD_TCP_STREAMS = 4
SRC, DST, B_SRC, B_DST = "hs", "hd", "b-hs", "b-hd"
PATH_A = ["R1", "MR1", "MR5", "MR12", "MR7", "MR2", "R2"]
PATH_B = ["R1", "MR3", "MR6", "MR9", "MR10", "MR4", "R2"]
CONNECTION = "bench"
VXLAN_FRAME_EXTRA = 14 + 50  # inner Ethernet + outer Ethernet/IPv4/UDP/VXLAN


def load_topology(file: Path) -> dict[str, Any]:
    data = YAML(typ="safe").load(file.read_text())
    data["name"] = LAB
    return data


def check_shape(data: dict[str, Any]) -> None:
    names = {e["name"] for e in data.get("endhosts", [])} | {
        r["name"] for r in data.get("routers", [])
    }
    missing = sorted({SRC, DST, B_SRC, B_DST, *PATH_A, *PATH_B} - names)
    if missing or len(data.get("links", [])) != 1:
        raise OptionError(
            "--file",
            "vnet bench qos needs a topology shaped like examples/em-testbed.yaml "
            f"(one underlay link; missing nodes: {', '.join(missing) or 'none'})",
        )


def gateway_network(topo: Topology, router: str, endhost: str) -> str:
    """The network `router` sends packets for `endhost` out of (its first hop)."""
    dst = next(e for e in topo.endhosts if e.name == endhost)
    vr = topo.router(router)
    route = next(r for r in vr.routes if dst.ipv4 and dst.ipv4.ip in r.destination)
    for itf in vr.interfaces:
        if itf.ipv4 is not None and route.via in itf.ipv4.network:
            return itf.network
    raise BenchError(f"{router} has no interface towards {route.via}")


def far_end(topo: Topology, router: str, network: str) -> tuple[str, str]:
    """The router across `network` from `router`, and its IPv4 address there."""
    other = topo.router(hop(topo, router, network)[1])
    itf = next(i for i in other.interfaces if i.network == network)
    assert itf.ipv4 is not None
    return other.name, str(itf.ipv4.ip)


def warm_up(src: str, address: str) -> None:
    """A few pings first: neighbour caches along a fresh path start empty."""
    fping(node_ns(src), address, count=3, interval_ms=20, timeout_ms=500)


def hop(topo: Topology, router: str, network: str) -> list[str]:
    """`router` and the other router on `network`."""
    others = [
        vr.name
        for vr in topo.routers
        if vr.name != router and any(i.network == network for i in vr.interfaces)
    ]
    return [router, *others[:1]]


def variant(
    base: dict[str, Any],
    *,
    link_rate: str | int | None = None,
    connection: dict[str, Any] | None = None,
    bandwidth: dict[str, Any] | None = None,
) -> Topology:
    """The file with another link rate, one connection and network bandwidths."""
    data = copy.deepcopy(base)
    if link_rate is not None:
        data["links"][0]["rate"] = link_rate
    data["connections"] = [connection] if connection else []
    for net in data["networks"]:
        for key in ("bandwidth", "ceil"):
            net.pop(key, None)
        net.update((bandwidth or {}).get(net["name"], {}))
    return build_topology(data, source=f"vnet bench qos ({LAB})")


def connection_spec(
    rate_mbit: float | str, path: list[str], bidirectional: bool = False
) -> dict[str, Any]:
    bw = rate_mbit if isinstance(rate_mbit, str) else f"{rate_mbit}mbit"
    spec = {"name": CONNECTION, "a": SRC, "b": DST, "bandwidth": bw, "path": path}
    return {**spec, "bidirectional": True} if bidirectional else spec


def node_ns(node: str) -> str:
    return lab_placement(LAB).node_ns(node)


def address_of(topo: Topology, endhost: str) -> str:
    eh = next(e for e in topo.endhosts if e.name == endhost)
    assert eh.ipv4 is not None
    return str(eh.ipv4.ip)


def connection_shaper(topo: Topology, reverse: bool = False) -> ClassRef:
    t = next(t for t in tunnels(topo) if t.connection == CONNECTION and t.reverse == reverse)
    return ClassRef(node_ns(t.ingress), t.out_ifname, handle(VNET_MAJOR, t.id))


def network_shaper(topo: Topology, network: str, from_router: str) -> ClassRef:
    link = topo.links[0]
    host = topo.router(from_router).host
    other = link.b if host == link.a else link.a
    minor = network_minors(topo)[network]
    return ClassRef(node_ns(host), underlay_port_name(other), handle(LINK_MAJOR, minor))


def link_root(shaper: ClassRef) -> ClassRef:
    """The root class of the underlay link a network's shaper sits on: all its traffic."""
    return ClassRef(shaper.ns, shaper.dev, LINK_ROOT_CLASS)


def udp_length(topo: Topology, endhost: str) -> int:
    eh = next(e for e in topo.endhosts if e.name == endhost)
    return network_mtu(topo, topo.network(eh.network)) - UDP_IPV4_OVERHEAD


def measure_flow(
    kind: str,
    proto: str,
    topo: Topology,
    rate_bps: float,
    seconds: float,
    shaper: ClassRef,
    port: int,
    sink: tuple[str, str],
    **extra: Any,
) -> FlowResult:
    """A flow from hs (connection) or b-hs (network) to `sink` (node, address)."""
    src = SRC if kind == "connection" else B_SRC
    node, address = sink
    return run_flow(
        node_ns(src),
        node_ns(node),
        address,
        seconds=seconds,
        protocol=proto,
        rate_bps=rate_bps,
        length=udp_length(topo, src) if proto == "udp" else None,
        port=port,
        shaper=shaper,
        ping_from=node_ns(src),
        ping_to=address,
        **extra,
    )


def rtt_of(flow: FlowResult) -> tuple[float, float, float] | None:
    p = flow.ping
    if p is None or not p.rtts_ms:
        return None
    return (p.stat("min"), p.stat("avg"), p.stat("max"))  # type: ignore[return-value]
