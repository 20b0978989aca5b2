"""vnet demo"""

from __future__ import annotations

import signal
import sys
from pathlib import Path
from types import FrameType

import click
from rich.table import Table

from vnet.cli import friendly_errors, needs_root
from vnet.cli.demo_manager import (
    CONSOLE_PORT,
    CONTROLLER_EXAMPLE,
    print_console_access,
    print_manager_report,
    print_steps,
    run_manager_tour,
)
from vnet.lab.demo import EXAMPLE, DemoReport, run_demo
from vnet.ui import console


def _yes(ok: bool) -> str:
    return "[green]yes[/green]" if ok else "[red]NO[/red]"


def print_report(r: DemoReport) -> None:
    t = Table(title="1. Who receives a probe sent across physical hosts (fping x3)")
    for col in (
        "from",
        "to address",
        "holder in the sender's tenant",
        "received by",
        "other tenants' hosts that saw a packet",
        "as expected",
    ):
        t.add_column(col)
    for c in r.checks:
        t.add_row(
            c.source,
            c.address,
            c.own_holder or "(nobody)",
            ", ".join(c.answered_by) or "nobody (blocked)",
            ", ".join(c.leaked_to) or "none",
            _yes(c.as_expected),
        )
    console.print(t)
    console.print(
        "   Both tenants use the same subnets. Echo-request counters on every end host show that a "
        "probe\n   reaches only its own tenant's holder of the address, or nobody at all.\n"
    )
    t = Table(title="2. Each tenant's path: end host -> VR -> VXLAN -> end host")
    for col in (
        "tenant",
        "from -> to",
        "TCP (iperf3)",
        "RTT min/avg/max (fping x50)",
        "MTU",
        "DF ping at MTU",
    ):
        t.add_column(col)
    for p in r.perf:
        rtt = p.rtt_ms
        rtt_text = (
            f"{rtt.stat('min'):.3f} / {rtt.stat('avg'):.3f} / {rtt.stat('max'):.3f} ms"
            if rtt.ok
            else "lost"
        )
        t.add_row(
            p.tenant,
            f"{p.source} -> {p.target} ({p.address})",
            f"{p.tcp_mbit:,.0f} Mbit/s",
            rtt_text,
            str(p.mtu),
            _yes(p.df_ok),
        )
    console.print(t)
    console.print(
        "   MTU: VXLAN adds 50 bytes, so tenants get 1450 on a 1500-byte underlay "
        "and a full-size\n   packet with Don't Fragment set still arrives.\n"
    )
    t = Table(title="3. What vnet created, and how long each step took")
    t.add_column("kernel objects")
    t.add_column("count", justify="right")
    for kind, n in r.created.items():
        t.add_row(kind, str(n))
    console.print(t)
    print_steps("step", r.steps)


def _say(text: str) -> None:
    console.print(f"[dim]{text}[/dim]")


def _interrupted(signum: int, frame: FrameType | None) -> None:
    """SIGTERM ends the demo like Ctrl-C: through its clean-up, not around it."""
    raise KeyboardInterrupt


@click.command()
@click.option(
    "--keep",
    is_flag=True,
    help="Leave both labs up afterwards, with the console on loopback (vnet lab down removes "
    "each).",
)
@click.option(
    "--file",
    "path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=EXAMPLE,
    show_default=True,
    help="The two tenants' topology to tour.",
)
@click.option(
    "--controller-file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=CONTROLLER_EXAMPLE,
    show_default=True,
    help="The manager's lab: examples/controller.yaml, or a copy of it under another name.",
)
@click.option(
    "--console-port",
    default=CONSOLE_PORT,
    show_default=True,
    help="With --keep: the console's port on 127.0.0.1 (a free one if it is taken).",
)
@click.option("--seconds", default=2.0, show_default=True, help="Length of each TCP test.")
@needs_root
@friendly_errors
def demo(keep: bool, path: Path, controller_file: Path, console_port: int, seconds: float) -> None:
    """Two tenants on two hosts (reachability, isolation, throughput, RTT, MTU), then the
    manager admitting and refusing guaranteed connections, and its console."""
    signal.signal(signal.SIGTERM, _interrupted)
    report = run_demo(path, keep=keep, tcp_seconds=seconds, say=_say)
    print_report(report)
    manager = run_manager_tour(
        controller_file, keep=keep, seconds=seconds, console_port=console_port, say=_say
    )
    print_manager_report(manager)
    if keep:
        name = report.topology.name
        console.print(
            f"the lab {name!r} is still up: `vnet lab status {name}`, `vnet lab exec --lab "
            f"{name} red-a -- ping 10.2.0.2`, then `vnet lab down {name}`"
        )
    print_console_access(manager)
    if not (report.ok and manager.ok):
        console.print("[red]some results were not as expected (see above)[/red]")
        sys.exit(1)
    console.print("[green]all results as expected[/green]")
