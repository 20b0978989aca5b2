"""vnet tenant list|create|delete: the controller's tenants (issue 12).

Name the controller with --controller URL --token-file F, or --lab NAME. Creating a tenant
takes the provider's token; a tenant's token sees only its own tenant.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from vnet.cli import controller_output as out
from vnet.cli.controller_access import controller_command, controller_options, run_controller

if TYPE_CHECKING:
    from vnet.client import ControllerClient


@click.group()
def tenant() -> None:
    """Tenants on the controller: --controller URL --token-file F, or --lab NAME."""


@tenant.command(name="list")
@controller_options
@controller_command
@run_controller
def list_(client: ControllerClient, as_json: bool) -> None:
    """The tenants the token may see."""
    tenants = client.tenants()
    if as_json:
        out.dump(tenants)
    else:
        out.print_tenants(tenants)


@tenant.command()
@click.argument("name")
@controller_options
@controller_command
@run_controller
def create(client: ControllerClient, as_json: bool, name: str) -> None:
    """Create tenant NAME (the provider's token)."""
    view = client.create_tenant(name)
    if as_json:
        out.dump(view)
    else:
        from vnet.ui import console

        console.print(f"tenant [bold]{view.name}[/bold] created")


@tenant.command()
@click.argument("name")
@controller_options
@controller_command
@run_controller
def delete(client: ControllerClient, as_json: bool, name: str) -> None:
    """Delete tenant NAME with its tokens (the provider's token); refused while it has
    networks or live connections, naming them."""
    view = client.delete_tenant(name)
    if as_json:
        out.dump(view)
    else:
        from vnet.ui import console

        console.print(f"tenant [bold]{view.name}[/bold] deleted")
