"""The demo's second half: the manager (`vnet controller` on its embedded SQLite) admits a
guaranteed connection, iperf3 measures it against its guarantee, the manager routes a
second one around the full link, refuses a third naming each link direction that lacks
capacity and by how much, and the console is opened from the machine's own browser.

It drives `examples/controller.yaml` (three hosts in a triangle of 100 Mbit/s links) through
the same public paths a user takes: `vnet lab up` (vnet.lab.lab) and the controller's API
client (vnet.client.ControllerClient), as `vnet conn request --lab ctl` does.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from rich.table import Table

from vnet.client import ControllerClient, ControllerError
from vnet.lab import lab as labmod
from vnet.lab.access import controller_access
from vnet.lab.demo import EXAMPLE, refuse_if_up, torn_down
from vnet.lab.topology_file import load_topology
from vnet.model import Topology
from vnet.model.controller_api import ConnectionAnswer, ConnectionRequest
from vnet.model.rate import format_rate, parse_rate
from vnet.tools import forward, processes, tls
from vnet.tools.iperf3 import Iperf3Server, UdpRun, run_udp
from vnet.ui import console

CONTROLLER_EXAMPLE = EXAMPLE.parent / "controller.yaml"
# The tour's requests, sized for the example's 100 Mbit/s links (5 % kept back as margin):
# a guarantee that fits the direct link, one that only fits around it, one that fits nowhere.
SOURCE, TARGET = "pc1", "pc3"
GUARANTEED = ConnectionRequest(
    name="voice", a=SOURCE, b=TARGET, bandwidth=parse_rate("20mbit"), protocol="udp", dst_port=5060
)
ROUTED_AROUND = ConnectionRequest(
    name="bulk", a=SOURCE, b=TARGET, bandwidth=parse_rate("85mbit"), protocol="tcp"
)
BEYOND_CAPACITY = ConnectionRequest(
    name="more", a=SOURCE, b=TARGET, bandwidth=parse_rate("85mbit"), protocol="udp", dst_port=6000
)
OFFERED = 1.5  # iperf3 offers this many times the guarantee: the shaper holds it to its rate
DATAGRAM = 1000  # bytes of UDP payload per datagram
# iperf3 counts payload only; the shaper counts the packet with its headers (UDP, IP, the
# SRv6 encapsulation): at 1000-byte datagrams the payload is ~92 % of the shaped rate
RATE_TOLERANCE = (0.80, 1.05)  # measured payload / guarantee that counts as "holds"
CONSOLE_PORT = 8480
FORWARD = "console forward"  # its ProcessRecord's name in the lab's record


@dataclass
class Console:
    url: str  # on this machine's loopback
    token_file: str
    certificate: str | None  # the controller's HTTPS certificate (it covers 127.0.0.1)


@dataclass
class ManagerReport:
    lab: str
    tenant: str = ""
    admitted: ConnectionAnswer | None = None
    measured: UdpRun | None = None
    routed: ConnectionAnswer | None = None
    rejected: ControllerError | None = None
    console: Console | None = None
    steps: dict[str, float] = field(default_factory=dict)

    @property
    def rate_share(self) -> float | None:
        """Measured payload rate / the guarantee."""
        if self.admitted is None or self.measured is None:
            return None
        return self.measured.mbit * 1e6 / self.admitted.connection.bandwidth

    @property
    def ok(self) -> bool:
        share = self.rate_share
        return (
            share is not None
            and RATE_TOLERANCE[0] <= share <= RATE_TOLERANCE[1]
            and self.routed is not None
            and self.rejected is not None
            and self.rejected.code == "no-capacity"
            and bool(self.rejected.shortfalls)
        )


def _measure(lab: str, address: str, guarantee_bps: int, seconds: float) -> UdpRun:
    """UDP from SOURCE to TARGET's port of the guaranteed connection, offered above it."""
    assert GUARANTEED.dst_port is not None
    port = GUARANTEED.dst_port
    server_ns = labmod.node_namespace(lab, TARGET)
    with Iperf3Server(server_ns, port, one_off=True):
        run, _ = run_udp(
            labmod.node_namespace(lab, SOURCE),
            address,
            guarantee_bps * OFFERED / 1e6,
            seconds,
            DATAGRAM,
            port=port,
        )
    return run


def open_console(lab: str, port: int) -> Console:
    """A listener on 127.0.0.1 forwarding to the lab's controller in its management
    namespace, recorded in the lab's record: `vnet lab down` stops it by PID."""
    access = controller_access(lab)
    assert access.namespace is not None
    served = urlsplit(access.url)
    host, server_port = served.hostname, served.port
    assert host is not None and server_port is not None, access.url
    listener = forward.listen_on_loopback(port)
    try:
        child = forward.spawn(access.namespace, listener, host, int(server_port))
        labmod.add_process(lab, processes.record(child, FORWARD))
        bound = listener.getsockname()[1]
    finally:
        listener.close()  # the child holds its own copy
    url = f"{served.scheme}://{forward.LOOPBACK}:{bound}/ui/"
    return Console(url, access.token_file, access.certificate)


def _tour(
    report: ManagerReport, topo: Topology, seconds: float, say: Callable[[str], None]
) -> None:
    access = controller_access(report.lab)
    with ControllerClient.from_token_file(
        access.url,
        access.token_file,
        namespace=access.namespace,
        timeout=60,
        verify=access.certificate or True,  # the lab's controller: its own certificate
    ) as client:
        t = time.perf_counter()
        say(f"asking the manager for {GUARANTEED.name} ({format_rate(GUARANTEED.bandwidth)}) ...")
        report.admitted = client.request_connection(report.tenant, GUARANTEED, str(uuid.uuid4()))
        t = _step(report, "request: admitted", t)
        say(f"measuring {GUARANTEED.name} with iperf3 ({seconds:.0f} s of UDP above its rate) ...")
        address = _ipv4_of(topo, TARGET)
        report.measured = _measure(
            report.lab, address, report.admitted.connection.bandwidth, seconds
        )
        t = _step(report, "iperf3 through the connection", t)
        report.routed = client.request_connection(report.tenant, ROUTED_AROUND, str(uuid.uuid4()))
        t = _step(report, "request: routed around", t)
        try:
            client.request_connection(report.tenant, BEYOND_CAPACITY, str(uuid.uuid4()))
        except ControllerError as err:
            report.rejected = err
        _step(report, "request: beyond capacity", t)


def _ipv4_of(topo: Topology, endhost: str) -> str:
    eh = next(e for e in topo.endhosts if e.name == endhost)
    if eh.ipv4 is None:
        raise labmod.LabError(f"end host {endhost} has no IPv4 address for iperf3")
    return str(eh.ipv4.ip)


def _step(report: ManagerReport, name: str, since: float) -> float:
    now = time.perf_counter()
    report.steps[name] = now - since
    return now


def run_manager_tour(
    path: Path = CONTROLLER_EXAMPLE,
    keep: bool = False,
    seconds: float = 2.0,
    console_port: int = CONSOLE_PORT,
    say: Callable[[str], None] = print,
) -> ManagerReport:
    started = time.perf_counter()
    topo = load_topology(path)
    refuse_if_up(topo.name)
    source = next(e for e in topo.endhosts if e.name == SOURCE)
    report = ManagerReport(topo.name, tenant=topo.network(source.network).tenant)
    with torn_down(topo.name, keep, report.steps):
        say(f"bringing up lab {topo.name!r}: 3 hosts, an agent on each, the manager on SQLite ...")
        result = labmod.up(path, topology=topo)
        report.steps.update({f"up: {k}": v for k, v in result.timings.steps.items()})
        _tour(report, topo, seconds, say)
        if keep:
            report.console = open_console(topo.name, console_port)
    report.steps["total"] = time.perf_counter() - started
    return report


def print_manager_report(r: ManagerReport) -> None:
    t = Table(title="4. The manager: guaranteed connections, admitted or refused")
    for col in ("request", "from -> to", "guarantee", "the manager's answer"):
        t.add_column(col)
    for request, answer in ((GUARANTEED, r.admitted), (ROUTED_AROUND, r.routed)):
        what = f"{request.protocol or 'any'}" + (
            f" dport {request.dst_port}" if request.dst_port else ""
        )
        path = " -> ".join(answer.connection.path) if answer else "-"
        t.add_row(
            f"{request.name} ({what})",
            f"{request.a} -> {request.b}",
            format_rate(request.bandwidth),
            f"[green]established[/green] over {path}" if answer else "[red]NOT established[/red]",
        )
    t.add_row(
        f"{BEYOND_CAPACITY.name} ({BEYOND_CAPACITY.protocol} dport {BEYOND_CAPACITY.dst_port})",
        f"{BEYOND_CAPACITY.a} -> {BEYOND_CAPACITY.b}",
        format_rate(BEYOND_CAPACITY.bandwidth),
        f"[yellow]rejected: {r.rejected.code}[/yellow] (below)"
        if r.rejected
        else "[red]NOT rejected[/red]",
    )
    console.print(t)
    _say_plainly(_measured_text(r))
    _say_plainly(
        f"   {ROUTED_AROUND.name}: the manager routed it around the link {GUARANTEED.name} "
        f"takes. {BEYOND_CAPACITY.name}: no path has room for it; the manager's refusal:"
    )
    for line in r.rejected.lines() if r.rejected else ["(none)"]:
        _say_plainly(f"     {line}")
    console.print()
    print_steps("step (the manager's lab)", r.steps)


def print_steps(heading: str, steps: dict[str, float]) -> None:
    """How long each step of a tour took."""
    t = Table()
    t.add_column(heading)
    t.add_column("seconds", justify="right")
    for step, seconds in steps.items():
        t.add_row(step, f"{seconds:.3f}")
    console.print(t)


def _measured_text(r: ManagerReport) -> str:
    share, m = r.rate_share, r.measured
    if m is None or share is None or r.admitted is None:
        return f"   iperf3 through {GUARANTEED.name}: not measured"
    low, high = RATE_TOLERANCE
    verdict = "as expected" if low <= share <= high else "NOT as expected"
    return (
        f"   iperf3 through {GUARANTEED.name}: offered {m.sent_mbit:.1f} Mbit/s, received "
        f"{m.mbit:.1f} Mbit/s = {share:.0%} of its guarantee of "
        f"{r.admitted.connection.bandwidth / 1e6:g} Mbit/s ({verdict}: {low:.0%} to {high:.0%}; "
        "the shaper counts the headers too, iperf3 only the payload)"
    )


def _say_plainly(text: str) -> None:
    """One line as it is: no markup, no wrapping inside it (programs read these lines)."""
    console.print(text, markup=False, highlight=False, soft_wrap=True)


def _certificate_note(certificate: str | None) -> str:
    if certificate is None:
        return ""
    return (
        f"The controller's certificate is self-signed: {certificate} (SHA-256 "
        f"{tls.fingerprint(Path(certificate))}); let the browser trust it, or accept it once.\n"
    )


def print_console_access(r: ManagerReport) -> None:
    if r.console is None:
        console.print(
            "the console: `vnet demo --keep` leaves the manager's lab up and opens it on "
            f"https://{forward.LOOPBACK}:{CONSOLE_PORT}/ui/ for this machine's browser"
        )
        return
    console.print(
        f"the manager's lab {r.lab!r} is still up. Its console, for this machine's browser: "
        f"[bold]{r.console.url}[/bold]\n"
        f"(a listener on loopback, forwarding into the lab's management namespace); log in "
        f"with the provider token: `cat {r.console.token_file}`.\n"
        f"{_certificate_note(r.console.certificate)}"
        f"`vnet conn list --lab {r.lab}`, and `vnet lab down {r.lab}` removes the lab and "
        "the listener.",
        soft_wrap=True,  # paths and URLs whole on their lines: people copy them
    )
