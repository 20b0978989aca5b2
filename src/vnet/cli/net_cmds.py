"""vnet net list: the controller's virtual networks and their per-link guarantees (issue 12).

Name the controller with --controller URL --token-file F, or --lab NAME.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from vnet.cli import controller_output as out
from vnet.cli.controller_access import controller_command, controller_options, run_controller

if TYPE_CHECKING:
    from vnet.client import ControllerClient


@click.group()
def net() -> None:
    """Virtual networks on the controller: --controller URL --token-file F, or --lab NAME."""


@net.command(name="list")
@click.option("--tenant", help="Only this tenant's networks.")
@controller_options
@controller_command
@run_controller
def list_(client: ControllerClient, as_json: bool, tenant: str | None) -> None:
    """Every virtual network the token may see, with its VNI and its guarantee per link."""
    nets = client.networks(tenant)
    if as_json:
        out.dump(nets)
    else:
        out.print_networks(nets)
