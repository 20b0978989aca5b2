"""vnet controller host|link list|add|remove: the underlay the controller manages.

Name the controller with --controller URL --token-file F, or --lab NAME (the provider's
token). Removing drains first: every connection crossing the host or link is moved
make-before-break; if one cannot move, nothing changes and each is printed with why (exit 1).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from vnet.cli import controller_output as out
from vnet.cli.controller_access import controller_command, controller_options, run_controller
from vnet.model.controller_api import AgentRequest

if TYPE_CHECKING:
    from vnet.client import ControllerClient
    from vnet.model.controller_api import Removed


@click.group()
def host() -> None:
    """Physical hosts in the controller's inventory."""


@host.command(name="list")
@controller_options
@controller_command
@run_controller
def host_list(client: ControllerClient, as_json: bool) -> None:
    """The hosts in service, with their agents."""
    hosts = client.hosts()
    if as_json:
        out.dump(hosts)
    else:
        out.print_rows("hosts", ("name", "agent"), [(h.name, h.agent or "-") for h in hosts])


@host.command(name="add")
@click.argument("name")
@click.option("--agent", "address", metavar="ADDRESS", help="Its agent's address (NETCONF).")
@click.option("--netconf-port", type=int, default=830, show_default=True)
@click.option("--user", default="admin", show_default=True, help="The agent's NETCONF user.")
@click.option(
    "--password-file",
    metavar="NAME",
    help="The agent's password: a file in the controller's agent_secrets_dir.",
)
@click.option(
    "--key-file",
    metavar="NAME",
    help="An SSH private key for the agent: a file in the controller's agent_secrets_dir.",
)
@click.option(
    "--hostkey",
    metavar="KEY",
    help="The agent's SSH host key, as `vnet agent hostkey` prints it on that host.",
)
@click.option("--agent-namespace", metavar="NS", help="A network namespace to reach it from.")
@controller_options
@controller_command
@run_controller
def host_add(client: ControllerClient, as_json: bool, name: str, **agent: Any) -> None:
    """Add host NAME, with its agent (--agent ADDRESS ...) or without (the controller's
    configuration names it, or it is added again with one later)."""
    view = client.add_host(name, _agent(**agent))
    if as_json:
        out.dump(view)
        return
    click.echo(f"host {view.name} in the inventory")
    if view.reachable is not None:
        answers = "answers" if view.reachable else "does not answer (yet)"
        click.echo(f"its agent at {view.agent} {answers}")


def _agent(address: str | None, agent_namespace: str | None, **fields: Any) -> AgentRequest | None:
    given = {k: v for k, v in fields.items() if v is not None}
    if address is None:
        defaults = {"netconf_port": 830, "user": "admin"}
        if any(defaults.get(k) != v for k, v in given.items()):
            raise click.UsageError("--agent ADDRESS comes with the agent's other options")
        return None
    return AgentRequest(address=address, namespace=agent_namespace, **given)


@host.command(name="remove")
@click.argument("name")
@controller_options
@controller_command
@run_controller
def host_remove(client: ControllerClient, as_json: bool, name: str) -> None:
    """Drain host NAME, then remove it."""
    _removed(client.remove_host(name), as_json)


@click.group()
def link() -> None:
    """Underlay links in the controller's inventory."""


@link.command(name="list")
@controller_options
@controller_command
@run_controller
def link_list(client: ControllerClient, as_json: bool) -> None:
    """The links in service, with what connections may have of each."""
    links = client.links()
    if as_json:
        out.dump(links)
    else:
        rows = [(x.name, x.a, x.b, x.capacity_bps) for x in links]
        out.print_rows("links", ("name", "a", "b", "capacity bit/s"), rows)


@link.command(name="add")
@click.argument("a")
@click.argument("b")
@click.option("--rate", required=True, help="The link's rate, e.g. 1gbit.")
@click.option("--mtu", type=int, default=1500, show_default=True)
@click.option("--management", help="Kept for management and routing (default: 1% of the rate).")
@controller_options
@controller_command
@run_controller
def link_add(
    client: ControllerClient,
    as_json: bool,
    a: str,
    b: str,
    rate: str,
    mtu: int,
    management: str | None,
) -> None:
    """Add a link between hosts A and B (named A-B)."""
    from pydantic import ValidationError

    from vnet.model.controller_api import LinkRequest

    try:
        request = LinkRequest(a=a, b=b, rate=rate, mtu=mtu, management=management)
    except ValidationError as err:
        raise click.BadParameter(str(err)) from None
    view = client.add_link(request)
    if as_json:
        out.dump(view)
    else:
        click.echo(f"link {view.name} in the inventory ({view.capacity_bps} bit/s for connections)")


@link.command(name="remove")
@click.argument("name")
@controller_options
@controller_command
@run_controller
def link_remove(client: ControllerClient, as_json: bool, name: str) -> None:
    """Drain link NAME (A-B), then remove it."""
    _removed(client.remove_link(name), as_json)


def _removed(removed: Removed, as_json: bool) -> None:
    if as_json:
        out.dump(removed)
        return
    click.echo(f"{removed.kind} {removed.name} removed")
    for m in removed.moved:
        path = f"{' -> '.join(m.old_path)} => {' -> '.join(m.new_path)}"
        click.echo(f"  moved {m.tenant}/{m.connection}: {path}")
