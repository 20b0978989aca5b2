"""vnet net list|create|vr|endhost|delete|vr-delete|endhost-delete|vr-unmanaged|vr-adopt:
the controller's virtual networks and their per-link guarantees; creating networks, VRs (a VR
without --host is placed by the controller) and end hosts, deleting them (refused while
something holds them, naming it), and adopting VRs made on an agent directly (issue 12, 27).

Name the controller with --controller URL --token-file F, or --lab NAME.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click
from pydantic import ValidationError

from vnet.cli import controller_output as out
from vnet.cli.controller_access import (
    controller_command,
    controller_options,
    run_controller,
    tenant_of,
)
from vnet.model.controller_api import (
    EndHostRequest,
    EndHostView,
    NetworkRequest,
    NetworkView,
    RouterRequest,
    RouterView,
)

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


def _valid(model: type[NetworkRequest | RouterRequest | EndHostRequest], **fields: object):  # type: ignore[no-untyped-def]
    """The request, or a usage error naming the bad value (nothing is sent)."""
    try:
        return model.model_validate(fields)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(x) for x in first["loc"])
        raise click.UsageError(f"{where}: {first['msg']}") from None


@net.command()
@click.argument("name")
@click.option("--vni", type=int, required=True, help="The network's VXLAN VNI.")
@click.option("--ipv4", help="Its IPv4 subnet (10.61.9.0/24).")
@click.option("--ipv6", help="Its IPv6 subnet.")
@click.option("--bandwidth", help="Its guarantee on each link it crosses (20mbit).")
@click.option(
    "--host", "hosts", multiple=True, help="A host that carries it (repeat; default: all)."
)
@click.option("--tenant", help="The tenant (default: the token's).")
@controller_options
@controller_command
@run_controller
def create(
    client: ControllerClient,
    as_json: bool,
    name: str,
    vni: int,
    ipv4: str | None,
    ipv6: str | None,
    bandwidth: str | None,
    hosts: tuple[str, ...],
    tenant: str | None,
) -> None:
    """Create virtual network NAME on the hosts that carry it."""
    fields = {"ipv4": ipv4, "ipv6": ipv6, "bandwidth": bandwidth}
    body = _valid(
        NetworkRequest,
        name=name,
        vni=vni,
        hosts=list(hosts),
        **{k: v for k, v in fields.items() if v is not None},
    )
    view = client.create_network(tenant_of(client, tenant), body)
    if as_json:
        out.dump(view)
    else:
        from vnet.ui import console

        console.print(f"network [bold]{view.name}[/bold] (VNI {view.vni}) created")


@net.command()
@click.argument("name")
@click.option(
    "--interface",
    "interfaces",
    multiple=True,
    required=True,
    metavar="NET[=ADDR[,ADDR]]",
    help="An interface in network NET with its addresses (repeat).",
)
@click.option("--host", help="The host (default: the controller places it).")
@click.option("--tenant", help="The tenant (default: the token's).")
@controller_options
@controller_command
@run_controller
def vr(
    client: ControllerClient,
    as_json: bool,
    name: str,
    interfaces: tuple[str, ...],
    host: str | None,
    tenant: str | None,
) -> None:
    """Create VR NAME; without --host the controller places it where most capacity is left."""
    body = _valid(
        RouterRequest, name=name, host=host, interfaces=[_interface(i) for i in interfaces]
    )
    view = client.create_router(_router_tenant(client, tenant, body), body)
    if as_json:
        out.dump(view)
    else:
        from vnet.ui import console

        console.print(f"VR [bold]{view.name}[/bold] created on host [bold]{view.host}[/bold]")


def _interface(text: str) -> dict[str, str]:
    """NET=ADDR[,ADDR] (lan1=10.61.1.50/24,fd00::50/64) as an interface request body."""
    network, _, addresses = text.partition("=")
    out = {"network": network}
    for address in filter(None, addresses.split(",")):
        out["ipv6" if ":" in address else "ipv4"] = address
    return out


def _router_tenant(client: ControllerClient, given: str | None, body: RouterRequest) -> str:
    """--tenant, else the token's tenant, else (the provider) the one owning its networks."""
    if given or client.whoami().tenant:
        return tenant_of(client, given)
    wanted = {i.network for i in body.interfaces}
    owners = {n.tenant for n in client.networks() if n.name in wanted}
    if len(owners) != 1:
        raise click.UsageError("the provider's token acts for every tenant: give --tenant T")
    return owners.pop()


@net.command()
@click.argument("name")
@click.option("--host", required=True, help="The host whose network bridge it is attached to.")
@click.option(
    "--interface",
    "interface",
    required=True,
    metavar="NET=ADDR[,ADDR]",
    help="Its network and addresses (lan1=10.61.1.5/24,fd00::5/64).",
)
@click.option(
    "--gateway", "gateways", multiple=True, help="Its default route's next hop (a VR's address)."
)
@click.option("--tenant", help="The tenant (default: the token's).")
@controller_options
@controller_command
@run_controller
def endhost(
    client: ControllerClient,
    as_json: bool,
    name: str,
    host: str,
    interface: str,
    gateways: tuple[str, ...],
    tenant: str | None,
) -> None:
    """Declare end host NAME, a tenant's machine on HOST (attached by the operator to the
    network's bridge vb<VNI> there), so connections may name it."""
    routes = [{"to": "default", "via": gw} for gw in gateways]
    body = _valid(EndHostRequest, name=name, host=host, routes=routes, **_interface(interface))
    view = client.create_endhost(tenant_of(client, tenant), body)
    if as_json:
        out.dump(view)
    else:
        from vnet.ui import console

        console.print(f"end host [bold]{view.name}[/bold] on {view.host} ({view.network})")


def _deleted(as_json: bool, kind: str, view: NetworkView | RouterView | EndHostView) -> None:
    if as_json:
        out.dump(view)
    else:
        from vnet.ui import console

        console.print(f"{kind} [bold]{view.name}[/bold] deleted")


@net.command(name="delete")
@click.argument("name")
@click.option("--tenant", help="The tenant (default: the token's).")
@controller_options
@controller_command
@run_controller
def delete_(client: ControllerClient, as_json: bool, name: str, tenant: str | None) -> None:
    """Delete virtual network NAME from every host that carries it (refused while VRs or end
    hosts are on it)."""
    _deleted(as_json, "network", client.delete_network(tenant_of(client, tenant), name))


@net.command(name="vr-delete")
@click.argument("name")
@click.option("--tenant", help="The tenant (default: the token's).")
@controller_options
@controller_command
@run_controller
def vr_delete(client: ControllerClient, as_json: bool, name: str, tenant: str | None) -> None:
    """Delete VR NAME from its host, with the routes its tenant's VRs had to its SRv6
    locator (refused while a connection runs over it)."""
    _deleted(as_json, "VR", client.delete_router(tenant_of(client, tenant), name))


@net.command(name="endhost-delete")
@click.argument("name")
@click.option("--tenant", help="The tenant (default: the token's).")
@controller_options
@controller_command
@run_controller
def endhost_delete(client: ControllerClient, as_json: bool, name: str, tenant: str | None) -> None:
    """Delete end host NAME (refused while a connection joins it)."""
    _deleted(as_json, "end host", client.delete_endhost(tenant_of(client, tenant), name))


@net.command(name="vr-unmanaged")
@click.argument("host")
@controller_options
@controller_command
@run_controller
def vr_unmanaged(client: ControllerClient, as_json: bool, host: str) -> None:
    """The VRs HOST's agent holds that the controller does not manage (made on the agent
    directly, `vnet vr create`): what `vnet net vr-adopt` can take in (the provider's token)."""
    found = client.unmanaged(host)
    if as_json:
        out.dump(found)
        return
    from vnet.ui import console

    for vr in found:
        console.print(f"{vr.name}  {', '.join(vr.networks)}  {', '.join(vr.addresses)}")
    if not found:
        console.print(f"host {host}: every VR its agent holds is managed")


@net.command(name="vr-adopt")
@click.argument("name")
@click.option("--host", required=True, help="The host whose agent holds it.")
@click.option("--tenant", required=True, help="The tenant whose networks its interfaces are in.")
@controller_options
@controller_command
@run_controller
def vr_adopt(client: ControllerClient, as_json: bool, name: str, host: str, tenant: str) -> None:
    """Take VR NAME, made on HOST's agent directly, into TENANT's inventory (the provider's
    token); refused with the reason when it disagrees with the inventory."""
    view = client.adopt_router(tenant, host, name)
    if as_json:
        out.dump(view)
    else:
        from vnet.ui import console

        console.print(f"VR [bold]{view.name}[/bold] on {view.host} adopted into {view.tenant}")
