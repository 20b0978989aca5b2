"""vnet lab link down|up|set, vnet lab host down|up: failure injection in a running lab."""

from __future__ import annotations

import click

from vnet.cli import friendly_errors, needs_root
from vnet.lab import faults
from vnet.lab import lab as labmod
from vnet.ui import console

LAB_OPTION = click.option("--lab", "lab_name", help="The lab (needed when several are up).")


@click.group()
def link() -> None:
    """Cut, restore or impair an underlay link (NAME: its hosts, e.g. h1-h2)."""


@link.command(name="down")
@LAB_OPTION
@click.argument("name")
@needs_root
@friendly_errors
def link_down(lab_name: str | None, name: str) -> None:
    """Set link NAME down, as a pulled cable: nothing passes either way."""
    faults.set_link(labmod.pick_lab(lab_name), name, up=False)
    console.print(f"link {name} is down")


@link.command(name="up")
@LAB_OPTION
@click.argument("name")
@needs_root
@friendly_errors
def link_up(lab_name: str | None, name: str) -> None:
    """Set link NAME up again (and put back the underlay routes it lost)."""
    faults.set_link(labmod.pick_lab(lab_name), name, up=True)
    console.print(f"link {name} is up")


@link.command(name="set")
@LAB_OPTION
@click.argument("name")
@click.option(
    "--loss", help="Drop this share of the packets in each direction, e.g. 2% (0 ends it)."
)
@click.option("--delay", help="Delay (needs netem in the kernel).")
@click.option("--jitter", help="Jitter (needs netem in the kernel).")
@needs_root
@friendly_errors
def link_set(
    lab_name: str | None, name: str, loss: str | None, delay: str | None, jitter: str | None
) -> None:
    """Impair link NAME: random loss (an eBPF program on both ends)."""
    if delay is not None or jitter is not None:
        raise click.UsageError(
            faults.netem_missing() or "delay and jitter are not implemented by vnet yet"
        )
    if loss is None:
        raise click.UsageError("say what to set: --loss 2%")
    share = faults.parse_share(loss)
    faults.set_link_loss(labmod.pick_lab(lab_name), name, share)
    console.print(f"link {name}: loss {float(share):.2%} in each direction")


@click.group()
def host() -> None:
    """Power an emulated host off (links down, agent stopped) and on again."""


@host.command(name="down")
@LAB_OPTION
@click.argument("name")
@needs_root
@friendly_errors
def host_down(lab_name: str | None, name: str) -> None:
    """Set every link of host NAME down and stop its agent, as a power failure would."""
    stopped = faults.host_down(labmod.pick_lab(lab_name), name)
    console.print(f"host {name} is down" + ("; its agent was stopped" if stopped else ""))


@host.command(name="up")
@LAB_OPTION
@click.argument("name")
@needs_root
@friendly_errors
def host_up(lab_name: str | None, name: str) -> None:
    """Bring the links of host NAME up and start its agent again."""
    faults.host_up(labmod.pick_lab(lab_name), name)
    console.print(f"host {name} is up")
