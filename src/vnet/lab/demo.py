"""The guided tour: bring up two tenants on two hosts, show what works and
what is kept apart, measure it, and tear it down again."""

from __future__ import annotations

import contextlib
import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from vnet.lab import lab as labmod
from vnet.lab import probes
from vnet.lab.topology_file import load_topology
from vnet.model import Topology, network_mtu
from vnet.tools import procfs

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "two-tenants.yaml"


@dataclass
class Check:
    """One probe, and which end hosts' interfaces actually received it."""

    source: str
    address: str
    own_holder: str | None  # the end host with this address in the source's tenant
    answered_by: list[str]  # end hosts whose eth0 received the probes
    leaked_to: list[str]  # end hosts of other tenants that received any of them

    @property
    def as_expected(self) -> bool:
        expected = [self.own_holder] if self.own_holder else []
        return self.answered_by == expected and not self.leaked_to


@dataclass
class TenantPerf:
    tenant: str
    source: str
    target: str
    address: str
    tcp_mbit: float
    rtt_ms: probes.PingResult
    mtu: int
    df_ok: bool  # a DF ping of exactly the MTU arrives


@dataclass
class DemoReport:
    topology: Topology
    checks: list[Check] = field(default_factory=list)
    perf: list[TenantPerf] = field(default_factory=list)
    created: dict[str, int] = field(default_factory=dict)
    steps: dict[str, float] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return all(c.as_expected for c in self.checks) and all(p.df_ok for p in self.perf)


def _tenant_of(topo: Topology, endhost: str) -> str:
    eh = next(e for e in topo.endhosts if e.name == endhost)
    return topo.network(eh.network).tenant


def echo_requests_received(ns: str) -> int:
    """ICMP + ICMPv6 echo requests this namespace has received (per-namespace SNMP counters).

    Unlike interface counters, these ignore the multicast chatter (MLD, IGMP)
    a tenant's own hosts send, so a change means one of the probes arrived.
    """
    counters = procfs.snmp_counters(ns)
    return counters["Icmp:InEchos"] + counters["Icmp6InEchos"]


def _echo_counts(topo: Topology) -> dict[str, int]:
    return {eh.name: echo_requests_received(f"vnet-{topo.name}-{eh.name}") for eh in topo.endhosts}


def reachability(topo: Topology, count: int = 3) -> list[Check]:
    """Probe every end host address from every end host on another physical host.

    Tenants may reuse addresses, so "it answered" proves nothing by itself:
    the echo-request counters of all end hosts show who the probes really reached.
    """
    checks = []
    for src in topo.endhosts:
        tenant = _tenant_of(topo, src.name)
        for dst in topo.endhosts:
            if dst.host == src.host:
                continue  # the interesting paths cross hosts (VR + VXLAN)
            for addr in (dst.ipv4, dst.ipv6):
                if addr is None:
                    continue
                holder = next(
                    (
                        e.name
                        for e in topo.endhosts
                        if _tenant_of(topo, e.name) == tenant
                        and addr.ip in (getattr(e.ipv4, "ip", None), getattr(e.ipv6, "ip", None))
                    ),
                    None,
                )
                if holder is None and _tenant_of(topo, dst.name) == tenant:
                    continue
                if any(c.source == src.name and c.address == str(addr.ip) for c in checks):
                    continue
                before = _echo_counts(topo)
                probes.fping(f"vnet-{topo.name}-{src.name}", str(addr.ip), count=count)
                after = _echo_counts(topo)
                got = {n for n in after if n != src.name and after[n] - before[n] >= count}
                leaked = sorted(
                    n for n in after if _tenant_of(topo, n) != tenant and after[n] > before[n]
                )
                checks.append(Check(src.name, str(addr.ip), holder, sorted(got), leaked))
    return checks


def tenant_performance(topo: Topology, seconds: float) -> list[TenantPerf]:
    out = []
    seen = set()
    for src in topo.endhosts:
        tenant = _tenant_of(topo, src.name)
        if tenant in seen:
            continue
        dst = next(
            (d for d in topo.endhosts if d.host != src.host and _tenant_of(topo, d.name) == tenant),
            None,
        )
        if dst is None or dst.ipv4 is None:
            continue
        seen.add(tenant)
        src_ns, dst_ns = f"vnet-{topo.name}-{src.name}", f"vnet-{topo.name}-{dst.name}"
        address = str(dst.ipv4.ip)
        tcp = probes.iperf3_tcp(src_ns, dst_ns, address, seconds=seconds)
        rtt = probes.fping(src_ns, address, count=50, interval_ms=10)
        mtu = min(
            network_mtu(topo, topo.network(src.network)),
            network_mtu(topo, topo.network(dst.network)),
        )
        df_ok = probes.df_ping(src_ns, address, mtu - 28)  # IPv4 20 + ICMP 8
        out.append(
            TenantPerf(
                tenant, src.name, dst.name, address, tcp.bits_per_second / 1e6, rtt, mtu, df_ok
            )
        )
    return out


def refuse_if_up(name: str) -> None:
    """The tour removes its labs afterwards: it never takes over (and then removes) a lab of
    the same name that was up before it started."""
    if name in labmod.running_labs():
        raise labmod.LabError(
            f"lab {name!r} is already up; the demo makes and removes its own "
            f"(`vnet lab down {name}` removes that one first)"
        )


@contextlib.contextmanager
def torn_down(name: str, keep: bool, steps: dict[str, float]) -> Iterator[None]:
    """Remove lab `name` (its namespaces, and its processes by PID) when the body ends, also
    when it fails or Ctrl-C interrupts it; `keep` leaves it up, but only after a success.
    A Ctrl-C during the removal waits for it (it would leave half a lab behind), then
    interrupts: the demo ends as interrupted, not as a success."""
    done = False
    interrupted: list[int] = []
    try:
        yield
        done = True
    finally:
        if not (keep and done):
            t = time.perf_counter()
            previous = signal.signal(signal.SIGINT, lambda sig, _frame: interrupted.append(sig))
            try:
                labmod.down(name)
            finally:
                signal.signal(signal.SIGINT, previous)
            steps["down"] = time.perf_counter() - t
    if interrupted:
        raise KeyboardInterrupt


def run_demo(
    path: Path = EXAMPLE,
    keep: bool = False,
    tcp_seconds: float = 2.0,
    say: Callable[[str], None] = print,
) -> DemoReport:
    started = time.perf_counter()
    topo = load_topology(path)
    refuse_if_up(topo.name)
    report = DemoReport(topo)
    with torn_down(topo.name, keep, report.steps):
        result = labmod.up(path, topology=topo)
        report.steps.update({f"up: {k}": v for k, v in result.timings.steps.items()})
        report.created = result.desired.summary()
        say(f"lab {topo.name!r} is up ({len(result.ops)} kernel operations)")
        t = time.perf_counter()
        say("checking reachability between end hosts on different physical hosts ...")
        report.checks = reachability(topo)
        report.steps["reachability checks"] = time.perf_counter() - t
        t = time.perf_counter()
        say(f"measuring TCP throughput ({tcp_seconds:.0f} s per tenant), RTT and MTU ...")
        report.perf = tenant_performance(topo, tcp_seconds)
        report.steps["throughput and RTT"] = time.perf_counter() - t
    report.steps["total"] = time.perf_counter() - started
    return report
