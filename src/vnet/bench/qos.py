"""vnet bench qos: guaranteed bandwidth, measured the way paper 001's Table 3 does.

Against a topology shaped like examples/em-testbed.yaml (tenants alpha and beta,
hs -> R1 ... R2 -> hd and b-hs -> b-R1 ... b-R2 -> b-hd, the two disjoint core
paths), run as lab "qos":

1. Accuracy. For each rate R (1, 10, 100, 500, 1000, 2000 Mbit/s): a connection
   hs -> hd over the first core path with bandwidth R (its shaper: R1's HTB class),
   and beta's first network with bandwidth R (its shaper: the class on the
   underlay link). TCP and UDP are offered at 1.2 R. Achieved is read two ways:
   the layer-2 bytes the shaper's class let through while the flow was steady,
   and the payload iperf3's receiver got. fping measures the delay meanwhile,
   through the same shaper. The underlay link is raised to 10 Gbit/s in this
   phase so that the 2 Gbit/s row fits (em-testbed's link is 1 Gbit/s).
2. Isolation. The file's link rate; alpha and beta each get 30% of it guaranteed
   on their first network (both may borrow up to the link rate); beta sends
   exactly its guarantee while alpha floods, with UDP at 1.2x the link rate and
   with 4 greedy TCP streams (GSO makes TCP cheap per byte, so it fills the link
   where the machine cannot forward the UDP flood). Both flows end at the router
   across the link (MR1, b-MR1), the fewest hops that still cross it. Beta's
   share of its guarantee, its loss and delay are compared with beta alone;
   how full the link really was (alpha + beta against its rate) is logged.
3. Path switch. UDP at 100 and 900 Mbit/s through a connection; halfway the
   path moves to the other core path (`vnet lab up` of the edited topology:
   new SIDs, next hops resolved, one `ip route replace`, old SIDs after a
   drain). Lost datagrams are counted from iperf3's sequence numbers, next to
   runs without a switch, and separately what the receiving host dropped
   itself (a full socket buffer: a receiver starved of CPU, not the network).

The shaper's rate is read from its own counter, polled every 50 ms, over the
part of the run where the counter moves (vnet.lab.shaping).
"""

from __future__ import annotations

import copy
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from statistics import fmean
from typing import Any

import click
from ruamel.yaml import YAML

from vnet.bench.progress import BenchOptions, BenchProgress, bench_options
from vnet.bench.report import finish_run
from vnet.bench.results import BenchResult, tool_version
from vnet.cli import friendly_errors, needs_root
from vnet.lab import lab as labmod
from vnet.lab.probes import fping
from vnet.lab.shaping import ClassRef, FlowError, FlowResult, run_flow
from vnet.model import Topology, build_topology, network_mtu
from vnet.model.srv6 import tunnels
from vnet.substrate.realize import underlay_port_name
from vnet.substrate.realize_guarantees import network_minors
from vnet.substrate.tc import LINK_MAJOR, LINK_ROOT_CLASS, VNET_MAJOR, handle

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "em-testbed.yaml"
LAB = "qos"
RATES = [1, 10, 100, 500, 1000, 2000]
QUICK_RATES = [10, 100, 1000]
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
UDP_IPV4_OVERHEAD = 28  # IPv4 + UDP headers: datagram = MTU - 28
VXLAN_FRAME_EXTRA = 14 + 50  # inner Ethernet + outer Ethernet/IPv4/UDP/VXLAN


@dataclass
class Row:
    """One line of the Table 3 shape: means over the repeats."""

    path: str
    flow: str
    packet: int
    offered: float
    limit: float
    l2: list[float]
    payload: list[float]
    loss: list[float]
    rtt: list[tuple[float, float, float]]
    limited: int = 0  # runs in which the sender never filled the shaper


def _load(file: Path) -> dict[str, Any]:
    data = YAML(typ="safe").load(file.read_text())
    data["name"] = LAB
    return data


def _need(data: dict[str, Any]) -> None:
    names = {e["name"] for e in data.get("endhosts", [])} | {
        r["name"] for r in data.get("routers", [])
    }
    missing = sorted({SRC, DST, B_SRC, B_DST, *PATH_A, *PATH_B} - names)
    if missing or len(data.get("links", [])) != 1:
        raise click.ClickException(
            "vnet bench qos needs a topology shaped like examples/em-testbed.yaml "
            f"(one underlay link; missing nodes: {', '.join(missing) or 'none'})"
        )


def _gateway_network(topo: Topology, router: str, endhost: str) -> str:
    """The network `router` sends packets for `endhost` out of (its first hop)."""
    dst = next(e for e in topo.endhosts if e.name == endhost)
    vr = topo.router(router)
    route = next(r for r in vr.routes if dst.ipv4 and dst.ipv4.ip in r.destination)
    for itf in vr.interfaces:
        if itf.ipv4 is not None and route.via in itf.ipv4.network:
            return itf.network
    raise click.ClickException(f"{router} has no interface towards {route.via}")


def _far_end(topo: Topology, router: str, network: str) -> tuple[str, str]:
    """The router across `network` from `router`, and its IPv4 address there."""
    other = topo.router(_hop(topo, router, network)[1])
    itf = next(i for i in other.interfaces if i.network == network)
    assert itf.ipv4 is not None
    return other.name, str(itf.ipv4.ip)


def _warm(src: str, address: str) -> None:
    """A few pings first: neighbour caches along a fresh path start empty."""
    fping(_ns(src), address, count=3, interval_ms=20, timeout_ms=500)


def _hop(topo: Topology, router: str, network: str) -> list[str]:
    """`router` and the other router on `network`."""
    others = [
        vr.name
        for vr in topo.routers
        if vr.name != router and any(i.network == network for i in vr.interfaces)
    ]
    return [router, *others[:1]]


def _variant(
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


def _connection(rate_mbit: float | str, path: list[str]) -> dict[str, Any]:
    bw = rate_mbit if isinstance(rate_mbit, str) else f"{rate_mbit}mbit"
    return {"name": CONNECTION, "a": SRC, "b": DST, "bandwidth": bw, "path": path}


def _ns(node: str) -> str:
    return f"vnet-{LAB}-{node}"


def _addr(topo: Topology, endhost: str) -> str:
    eh = next(e for e in topo.endhosts if e.name == endhost)
    assert eh.ipv4 is not None
    return str(eh.ipv4.ip)


def _connection_shaper(topo: Topology) -> ClassRef:
    t = next(t for t in tunnels(topo) if t.connection == CONNECTION and not t.reverse)
    return ClassRef(_ns(t.ingress), t.out_ifname, handle(VNET_MAJOR, t.id))


def _network_shaper(topo: Topology, network: str, from_router: str) -> ClassRef:
    link = topo.links[0]
    host = topo.router(from_router).host
    other = link.b if host == link.a else link.a
    minor = network_minors(topo)[network]
    return ClassRef(_ns(host), underlay_port_name(other), handle(LINK_MAJOR, minor))


def _udp_length(topo: Topology, endhost: str) -> int:
    eh = next(e for e in topo.endhosts if e.name == endhost)
    return network_mtu(topo, topo.network(eh.network)) - UDP_IPV4_OVERHEAD


def _flow(
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
        _ns(src),
        _ns(node),
        address,
        seconds=seconds,
        protocol=proto,
        rate_bps=rate_bps,
        length=_udp_length(topo, src) if proto == "udp" else None,
        port=port,
        shaper=shaper,
        ping_from=_ns(src),
        ping_to=address,
        **extra,
    )


def _rtt(flow: FlowResult) -> tuple[float, float, float] | None:
    p = flow.ping
    if p is None or not p.rtts_ms:
        return None
    return (p.stat("min"), p.stat("avg"), p.stat("max"))  # type: ignore[return-value]


@click.command("qos")
@click.option(
    "--file",
    "file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=EXAMPLE,
    show_default="examples/em-testbed.yaml",
    help="Topology shaped like the paper's testbed.",
)
@click.option(
    "--rates",
    default=None,
    metavar="MBIT,...",
    help=f"Shaper rates in Mbit/s [default: {','.join(map(str, RATES))}; "
    f"--quick: {','.join(map(str, QUICK_RATES))}].",
)
@bench_options(duration=5.0, repeat=2, quick_duration=1.0, quick_repeat=1)
@needs_root
@friendly_errors
def qos(file: Path, rates: str | None, bench: BenchOptions) -> None:
    """Guaranteed bandwidth: shaper accuracy (paper 001, Table 3), isolation, path switch."""
    chosen = (
        [float(r) for r in rates.split(",")] if rates else (QUICK_RATES if bench.quick else RATES)
    )
    chosen = [int(r) if r == int(r) else r for r in chosen]  # type: ignore[misc]
    base = _load(file)
    _need(base)
    result = BenchResult.start(
        "qos",
        parameters={
            **bench.as_parameters(),
            "file": str(file),
            "rates_mbit": chosen,
            "offered": f"{OFFER}x the rate",
            "switch_loads_mbit": SWITCH_LOADS,
            "accuracy_link_rate": ACCURACY_LINK,
        },
        tools={
            "iperf3": tool_version(["iperf3", "--version"]),
            "fping": tool_version(["fping", "--version"]),
        },
        description=(
            "Shapers as configured vs achieved, in layer-2 bytes (the HTB class's own "
            "counter over the steady part of each run) and as iperf3 payload; delay by "
            "fping through the same shaper; tenant isolation on one underlay link; "
            "datagrams lost while a connection's path is switched. Table 3 of paper 001 "
            "in its own shape: table3.md next to this report."
        ),
    )
    declare(result)
    runs = (len(chosen) * 4 + 3 + 2 * len(SWITCH_LOADS)) * bench.repeat
    rows: list[Row] = []
    if LAB in labmod.running_labs():
        labmod.down(LAB)  # an interrupted earlier run
    try:
        with BenchProgress("qos", total=runs, quiet=bench.quiet) as progress:
            started = time.monotonic()
            rows = accuracy(result, base, chosen, bench, progress)
            progress.log(f"accuracy done after {time.monotonic() - started:.0f} s")
            isolation(result, base, bench, progress)
            progress.log(f"isolation done after {time.monotonic() - started:.0f} s")
            path_switch(result, base, bench, progress)
            progress.log(f"path switch done after {time.monotonic() - started:.0f} s")
    finally:
        labmod.down(LAB)
    table = table3(rows)
    paths = finish_run(result, bench)
    (paths.directory / "table3.md").write_text(table)
    if not bench.quiet:
        click.echo(table, err=True)


def declare(result: BenchResult) -> None:
    rate = "configured rate (Mbit/s)"
    result.declare(
        "achieved l2",
        "% of configured",
        x_label=rate,
        description="Bytes the shaper's HTB class sent (layer 2), per second, "
        "over the steady part of each run, as a share of the configured rate.",
    )
    result.declare(
        "achieved payload",
        "Mbit/s",
        x_label=rate,
        description="Payload the iperf3 receiver got (whole run).",
    )
    result.declare(
        "udp loss",
        "%",
        x_label=rate,
        description="Datagrams lost (by sequence number) when offered 1.2x.",
    )
    result.declare("latency avg", "ms", x_label=rate, description="fping through the shaper.")
    result.declare("latency max", "ms", x_label=rate)
    result.declare(
        "isolation b share",
        "% of guarantee",
        plot="bar",
        description="Tenant B's layer-2 rate on the underlay link over its "
        "guarantee, B sending exactly its guarantee.",
    )
    result.declare(
        "isolation b offered",
        "% of guarantee",
        plot="bar",
        description="What B's sender really sent, as layer-2 bytes on the link: below 100 "
        "when the machine cannot produce B's guarantee at all.",
    )
    result.declare("isolation b loss", "%", plot="bar")
    result.declare(
        "isolation b loss in network",
        "%",
        plot="bar",
        description="B's loss less what B's receiving host dropped itself (full socket "
        "buffer: a CPU-starved receiver).",
    )
    result.declare("isolation b latency avg", "ms", plot="bar")
    result.declare(
        "isolation link load",
        "% of the link rate",
        plot="bar",
        description="The link's root class over B's window: ~100 means the link was full.",
    )
    result.declare(
        "isolation a achieved",
        "Mbit/s",
        plot="bar",
        description="Tenant A's layer-2 rate (its class) while it floods.",
    )
    result.declare(
        "switch lost",
        "datagrams",
        x_label="UDP load (Mbit/s)",
        plot="bar",
        description="Datagrams lost (iperf3 sequence numbers) in a run with a path switch "
        "halfway, and in a run without one.",
    )
    result.declare(
        "switch load sent",
        "Mbit/s",
        x_label="UDP load (Mbit/s)",
        plot="bar",
        description="What iperf3 really sent: below the load when the machine cannot.",
    )
    result.declare(
        "switch lost in network",
        "datagrams",
        x_label="UDP load (Mbit/s)",
        plot="bar",
        description="The same, less what the receiving host dropped itself because its "
        "socket buffer was full (UDP RcvbufErrors in the receiver's namespace): a starved "
        "iperf3 server, not the path.",
    )


def accuracy(
    result: BenchResult,
    base: dict[str, Any],
    rates: list[float],
    bench: BenchOptions,
    progress: BenchProgress,
) -> list[Row]:
    first = build_topology(base, source=str(LAB))
    b_net = _gateway_network(first, "b-R1", B_DST)
    rows: dict[tuple[str, str, float], Row] = {}
    for rate in rates:
        topo = _variant(
            base,
            link_rate=ACCURACY_LINK,
            connection=_connection(rate, PATH_A),
            bandwidth={b_net: {"bandwidth": f"{rate}mbit"}},
        )
        progress.log(f"configuring {rate:g} Mbit/s: connection {CONNECTION}, network {b_net}")
        labmod.up("", topology=topo)
        shapers = {
            "connection": _connection_shaper(topo),
            "network": _network_shaper(topo, b_net, "b-R1"),
        }
        sinks = {"connection": (DST, _addr(topo, DST)), "network": _far_end(topo, "b-R1", b_net)}
        paths = {
            "connection": "→".join(PATH_A) + " (SRv6 tunnel)",
            "network": f"{'→'.join(_hop(topo, 'b-R1', b_net))} (network {b_net}, underlay)",
        }
        _warm(SRC, sinks["connection"][1])
        _warm(B_SRC, sinks["network"][1])
        for kind in ("connection", "network"):
            src = SRC if kind == "connection" else B_SRC
            packet = _udp_length(topo, src) + UDP_IPV4_OVERHEAD  # the host's MTU
            for proto in ("tcp", "udp"):
                series = f"{kind} {proto}"
                row = rows.setdefault(
                    (kind, proto, rate),
                    Row(paths[kind], proto.upper(), packet, rate * OFFER, rate, [], [], [], []),
                )
                for run in range(bench.repeat):
                    progress.update(f"{series} @ {rate:g} Mbit/s, run {run + 1}/{bench.repeat}")
                    try:
                        flow = _flow(
                            kind,
                            proto,
                            topo,
                            rate * 1e6 * OFFER,
                            bench.duration,
                            shapers[kind],
                            port=5201,
                            sink=sinks[kind],
                        )
                    except FlowError as err:
                        result.note(f"{series} @ {rate:g} Mbit/s run {run + 1}: {err}")
                        progress.advance()
                        continue
                    record_flow(result, series, rate, flow)
                    if flow.l2_bps is not None:
                        row.l2.append(flow.l2_bps / 1e6)
                        if flow.class_drops == 0 and flow.l2_bps < 0.97 * rate * 1e6:
                            row.limited += 1
                    row.payload.append(flow.payload_bps / 1e6)
                    if flow.loss is not None:
                        row.loss.append(flow.loss * 100)
                    if (rtt := _rtt(flow)) is not None:
                        row.rtt.append(rtt)
                    progress.advance()
    return list(rows.values())


def record_flow(result: BenchResult, series: str, rate: float, flow: FlowResult) -> None:
    if flow.l2_bps is not None:
        result.record("achieved l2", series, flow.l2_bps / (rate * 1e6) * 100, x=rate)
    result.record("achieved payload", series, flow.payload_bps / 1e6, x=rate)
    if flow.loss is not None:
        result.record("udp loss", series, flow.loss * 100, x=rate)
    rtt = _rtt(flow)
    if rtt is not None:
        result.record("latency avg", series, rtt[1], x=rate)
        result.record("latency max", series, rtt[2], x=rate)


def isolation(
    result: BenchResult, base: dict[str, Any], bench: BenchOptions, progress: BenchProgress
) -> None:
    first = build_topology(base, source=str(LAB))
    link_rate = first.links[0].rate or 1_000_000_000
    a_net = _gateway_network(first, "R1", DST)
    b_net = _gateway_network(first, "b-R1", B_DST)
    share = int(link_rate * ISOLATION_SHARE) // 1_000_000 * 1_000_000
    topo = _variant(
        base,
        link_rate=link_rate,
        bandwidth={
            a_net: {"bandwidth": share, "ceil": link_rate},
            b_net: {"bandwidth": share, "ceil": link_rate},
        },
    )
    progress.log(
        f"isolation: link {link_rate / 1e6:g} Mbit/s; {a_net} and {b_net} guaranteed "
        f"{share / 1e6:g} Mbit/s each (both may borrow up to the link rate); A floods (UDP "
        f"at {OFFER}x the link rate, or {FLOOD_TCP_STREAMS} TCP streams), B sends exactly its "
        "guarantee"
    )
    labmod.up("", topology=topo)
    b_shaper = _network_shaper(topo, b_net, "b-R1")
    a_shaper = _network_shaper(topo, a_net, "R1")
    link_root = ClassRef(b_shaper.ns, b_shaper.dev, LINK_ROOT_CLASS)
    a_sink, b_sink = _far_end(topo, "R1", a_net), _far_end(topo, "b-R1", b_net)
    _warm(SRC, a_sink[1])
    _warm(B_SRC, b_sink[1])
    b_len = _udp_length(topo, B_SRC)
    # B offers exactly its guarantee in layer-2 bytes on the underlay
    b_payload = share * b_len / (b_len + UDP_IPV4_OVERHEAD + VXLAN_FRAME_EXTRA)
    seconds = max(bench.duration, 1.5)
    for series, flood in (
        ("B alone", None),
        ("B while A floods UDP", "udp"),
        ("B while A floods TCP", "tcp"),
    ):
        for run in range(bench.repeat):
            progress.update(f"isolation: {series}, run {run + 1}/{bench.repeat}")
            flood_result: dict[str, FlowResult] = {}

            def start_flood(
                out: dict[str, FlowResult] = flood_result, n: int = run, kind: str = flood or ""
            ) -> None:
                # UDP at 1.2x the link rate, or greedy TCP (GSO: far less CPU per byte,
                # so it fills the link where a 2-core machine cannot forward the UDP flood)
                try:
                    out["a"] = run_flow(
                        _ns(SRC),
                        _ns(a_sink[0]),
                        a_sink[1],
                        seconds=seconds + 1.5,
                        protocol=kind,
                        rate_bps=link_rate * OFFER if kind == "udp" else None,
                        length=_udp_length(topo, SRC) if kind == "udp" else None,
                        streams=1 if kind == "udp" else FLOOD_TCP_STREAMS,
                        port=5301,
                        shaper=a_shaper,
                        warmup=1.0,
                    )
                except FlowError as err:
                    result.note(f"isolation flood run {n + 1}: {err}")

            flooder = threading.Thread(target=start_flood, daemon=True) if flood else None
            try:
                if flooder is not None:
                    flooder.start()
                    time.sleep(0.8)  # A's flood is on before B starts
                flow = _flow(
                    "network",
                    "udp",
                    topo,
                    b_payload,
                    seconds,
                    b_shaper,
                    port=5302,
                    sink=b_sink,
                    also=(link_root,),
                )
            except FlowError as err:
                result.note(f"isolation {series} run {run + 1}: {err}")
                progress.advance()
                continue
            finally:
                if flooder is not None:
                    flooder.join(timeout=seconds + 40)
            if flow.l2_bps is not None:
                result.record("isolation b share", series, flow.l2_bps / share * 100)
            if flow.offered_bps:
                frame = (b_len + UDP_IPV4_OVERHEAD + VXLAN_FRAME_EXTRA) / b_len
                result.record("isolation b offered", series, flow.offered_bps * frame / share * 100)
            if flow.loss is not None and flow.packets:
                result.record("isolation b loss", series, flow.loss * 100)
                in_network = max(0, (flow.lost_packets or 0) - (flow.receiver_drops or 0))
                result.record(
                    "isolation b loss in network", series, in_network / flow.packets * 100
                )
            if (rtt := _rtt(flow)) is not None:
                result.record("isolation b latency avg", series, rtt[1])
            a = flood_result.get("a")
            if a is not None and a.l2_bps is not None:
                result.record("isolation a achieved", series, a.l2_bps / 1e6)
                carried = flow.also_l2_bps.get(link_root, 0.0) / link_rate
                full = "full" if carried >= 0.95 else "NOT full (machine-limited)"
                result.record("isolation link load", series, carried * 100)
                progress.log(
                    f"isolation run {run + 1} ({series}): while B ran the link carried "
                    f"{carried:.1%} of its rate ({full}); A {a.l2_bps / 1e6:.0f} Mbit/s over "
                    f"its run; B at {(flow.l2_bps or 0) / share * 100:.2f}% of its guarantee"
                )
            progress.advance()


def path_switch(
    result: BenchResult, base: dict[str, Any], bench: BenchOptions, progress: BenchProgress
) -> None:
    topos = {
        tuple(path): _variant(
            base, link_rate=ACCURACY_LINK, connection=_connection(SWITCH_BANDWIDTH, path)
        )
        for path in (PATH_A, PATH_B)
    }
    current = tuple(PATH_A)
    labmod.up("", topology=topos[current])
    seconds = max(bench.duration, 2.0)
    _warm(SRC, _addr(topos[current], DST))
    for load in SWITCH_LOADS:
        for series in ("no switch", "switch"):
            for run in range(bench.repeat):
                progress.update(f"path switch: {series} @ {load} Mbit/s, run {run + 1}")
                other = tuple(PATH_B) if current == tuple(PATH_A) else tuple(PATH_A)
                at = None
                if series == "switch":
                    target = topos[other]
                    at = (seconds / 2 - 0.6, lambda t=target: labmod.up("", topology=t))
                topo = topos[current]
                try:
                    flow = run_flow(
                        _ns(SRC),
                        _ns(DST),
                        _addr(topo, DST),
                        seconds=seconds,
                        protocol="udp",
                        rate_bps=load * 1e6,
                        length=_udp_length(topo, SRC),
                        port=5401,
                        at=at,
                    )
                except FlowError as err:
                    result.note(f"path switch {series} @ {load} run {run + 1}: {err}")
                    progress.advance()
                    continue
                finally:
                    if series == "switch":
                        current = other
                if flow.lost_packets is not None:
                    at_receiver = flow.receiver_drops or 0
                    result.record("switch lost", series, flow.lost_packets, x=load)
                    # trailing datagrams the receiver dropped are not counted as lost by
                    # iperf3, so the difference can dip below 0
                    in_network = max(0, flow.lost_packets - at_receiver)
                    result.record("switch lost in network", series, in_network, x=load)
                    if flow.offered_bps:
                        result.record("switch load sent", series, flow.offered_bps / 1e6, x=load)
                    sent = (flow.offered_bps or 0) / 1e6
                    progress.log(
                        f"{series} at {load} Mbit/s (sent {sent:.0f}): "
                        f"{flow.lost_packets} of {flow.packets} "
                        f"datagrams lost, {at_receiver} of them dropped by the receiving host's "
                        "full socket buffer"
                    )
                progress.advance()


def table3(rows: list[Row]) -> str:
    """Paper 001's Table 3, one row per path, flow and rate (means over the repeats)."""
    head = (
        "| Path | Flow | Packet size [B] | Transmission rate [Mbit/s] | Bandwidth limit "
        "[Mbit/s] | Throughput, layer 2 [Mbit/s] | Throughput, payload [Mbit/s] | Loss [%] "
        "| Latency min / avg / max [ms] |"
    )
    lines = [
        "# vnet bench qos: Table 3 of paper 001, vnet's way",
        "",
        "Layer 2: the shaper's own byte counter (HTB class, Ethernet frames with "
        "the encapsulation) over the steady part of each run. Payload: iperf3's receiver. "
        "Loss: UDP datagrams by sequence number.",
        "",
        head,
        "|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        l2 = f"{fmean(r.l2):.2f} ({fmean(r.l2) / r.limit * 100:.2f}%)" if r.l2 else "n/a"
        if r.limited:
            l2 += " †"
        loss = f"{fmean(r.loss):.2f}" if r.loss else "–"
        rtt = (
            f"{min(x[0] for x in r.rtt):.3f} / {fmean(x[1] for x in r.rtt):.3f} / "
            f"{max(x[2] for x in r.rtt):.3f}"
            if r.rtt
            else "n/a"
        )
        payload = f"{fmean(r.payload):.2f}" if r.payload else "n/a"
        lines.append(
            f"| {r.path} | {r.flow} | {r.packet} | {r.offered:g} | {r.limit:g} | {l2} | "
            f"{payload} | {loss} | {rtt} |"
        )
    if any(r.limited for r in rows):
        lines += [
            "",
            "† in at least one run the shaper dropped nothing and passed less than its "
            "rate: the sender or the forwarding path (CPU) could not offer more, so the "
            "shaper was not the limit.",
        ]
    return "\n".join(lines) + "\n"
