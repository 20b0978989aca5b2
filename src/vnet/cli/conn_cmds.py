"""vnet conn request|list|show|modify|release: guaranteed connections.

Two kinds of counterpart:
- the controller (issue 12): `request`, `modify` and `release` ask it, `list` and `show`
  read its connections (all tenants' for the provider's token, one tenant's for a tenant's).
  Name it with --controller URL --token-file F, or --lab NAME (the lab's `controller:`).
- an agent, as before: `list` and `show` with --lab NAME --host H (or --address/--user/
  --password) read the `srv6` and `underlay` containers of one host over NETCONF or RESTCONF,
  with the kernel's counters.
`list`/`show` ask an agent when --host or --address is given (as they always did) and the
controller otherwise: an explicit choice, never a guess made from what happens to answer.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, get_args

import click

from vnet.cli import controller_output as out
from vnet.cli.controller_access import (
    call,
    controller_command,
    controller_options,
    resolve,
    run_controller,
    tenant_of,
)
from vnet.cli.vr_cmds import agent_options, run_client
from vnet.cli.vr_output import print_classes, print_connections, print_json
from vnet.model.connection import Protocol

if TYPE_CHECKING:
    from vnet.client import AgentClient, ControllerClient

SRV6 = "vnet-router:srv6"
UNDERLAY = "vnet-router:underlay"
# the options of `agent_options`, which the controller form does not use (--lab and --json
# it shares: a lab's controller, JSON output)
AGENT_KEYS = (
    *("via", "address", "port", "user", "password", "host", "cacert", "insecure"),
    *("plain_http", "hostkey", "timeout"),
)
# the options only the controller form takes (`released`: list only)
CONTROLLER_ONLY = ("controller", "token_file", "ca_file", "tenant", "released")


@click.group()
def conn() -> None:
    """Guaranteed connections: ask the controller, or read the pieces on one agent's host.

    \b
    The controller: --controller URL --token-file F, or --lab NAME (the lab's controller).
    One agent (list, show): --lab NAME --host H, or --address/--user/--password, as `vnet vr`.
    """


def _asks_agent(kwargs: dict[str, Any]) -> bool:
    """An agent when --host or --address names one (VNET_AGENT_ADDRESS only if nothing names
    a controller), else the controller of --controller or --lab; nothing at all: an agent on
    127.0.0.1, as `vnet conn` did before the controller existed."""
    ctx = click.get_current_context()

    def explicit(name: str) -> bool:
        source = ctx.get_parameter_source(name)
        return kwargs.get(name) is not None and source != click.core.ParameterSource.ENVIRONMENT

    agent_named = kwargs.get("host") is not None or explicit("address")
    if agent_named and explicit("controller"):
        raise click.UsageError("--controller asks the controller, --host/--address an agent")
    if agent_named:
        return True
    return kwargs.get("controller") is None and kwargs.get("lab") is None


def agent_or_controller(
    controller_action: Callable[..., Any],
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Run the decorated agent form, or `controller_action(client, as_json, **rest)`."""

    def decorate(agent_action: Callable[..., Any]) -> Callable[..., Any]:
        agent_run = run_client(agent_action)

        @functools.wraps(agent_action)
        def wrapper(**kwargs: Any) -> Any:
            only = {k: kwargs.pop(k) for k in CONTROLLER_ONLY if k in kwargs}
            if _asks_agent({**kwargs, **only}):
                if only.get("tenant") is not None or only.get("released"):
                    raise click.UsageError("--tenant and --released are for the controller")
                return agent_run(**kwargs)
            given = (only.pop("controller"), only.pop("token_file"))
            target = resolve(*given, kwargs["lab"], only.pop("ca_file", None))
            as_json, timeout = kwargs["as_json"], kwargs["timeout"]
            rest = {k: v for k, v in kwargs.items() if k not in (*AGENT_KEYS, "lab", "as_json")}
            return call(
                target, timeout, as_json, lambda c: controller_action(c, as_json, **only, **rest)
            )

        return wrapper

    return decorate


_tenant_option = click.option(
    "--tenant", help="The tenant (default: the token's own; the provider's finds it by name)."
)


# -- list ----------------------------------------------------------------------------------
def _list_from_controller(
    client: ControllerClient, as_json: bool, tenant: str | None, released: bool
) -> None:
    conns = client.connections(tenant, released=released)
    if as_json:
        out.dump(conns)
    else:
        out.print_connections(conns)


@conn.command(name="list")
@click.option("--released", is_flag=True, help="Controller: include released connections.")
@_tenant_option
@controller_options
@agent_options
@agent_or_controller(_list_from_controller)
def list_(client: AgentClient, as_json: bool) -> None:
    """The controller's connections, or every connection piece and underlay class on one
    agent's host (with --host/--address), with counters."""
    tree = client.guarantees(state=True)
    if as_json:
        print_json(tree)
        return
    print_connections(tree.get(SRV6, {}).get("connection", []))
    print_classes(tree.get(UNDERLAY, {}).get("interface", []))


# -- show ----------------------------------------------------------------------------------
def _show_from_controller(
    client: ControllerClient, as_json: bool, tenant: str | None, name: str
) -> None:
    tenant = tenant_of(client, tenant, connection=name)
    view = client.connection(tenant, name)
    history = client.history(tenant, name)
    if as_json:
        print_json(
            {
                **view.model_dump(mode="json"),
                "history": [e.model_dump(mode="json") for e in history],
            }
        )
    else:
        out.print_connection(view, history)


@conn.command()
@click.argument("name")
@_tenant_option
@controller_options
@agent_options
@agent_or_controller(_show_from_controller)
def show(client: AgentClient, as_json: bool, name: str) -> None:
    """One connection: the controller's view (path, hops, SIDs, history), or its pieces on
    one agent's host (with --host/--address): steering, segments, SIDs, shaper counters."""
    from vnet.client import ClientError
    from vnet.model.yang.paths import entry_path

    found = [
        c
        for c in client.guarantees(state=True).get(SRV6, {}).get("connection", [])
        if c["name"] == name
    ]
    if not found:
        raise ClientError(
            "data-missing",
            f"connection {name!r} has no pieces on this host",
            entry_path("srv6", "connection", name),
        )
    if as_json:
        print_json(found[0])
    else:
        print_connections(found)


# -- request, modify, release: the controller only ------------------------------------------
def _path(value: str | None) -> list[str] | None:
    if value is None:
        return None
    hosts = [h.strip() for h in value.split(",") if h.strip()]
    if not hosts:
        raise click.BadParameter("write the physical hosts as H1,H2,...", param_hint="--path")
    return hosts


# the options whose names differ from the request's fields
OPTION_OF_FIELD = {"src_port": "--sport", "dst_port": "--dport", "name": "NAME", "a": "A", "b": "B"}


def _validated(kind: type[Any], **fields: Any) -> Any:
    """A request body checked before anything is sent: a bad value is bad usage (exit 2)."""
    from pydantic import ValidationError

    try:
        return kind(**{k: v for k, v in fields.items() if v is not None})
    except ValidationError as err:
        first = err.errors()[0]
        field = str(first["loc"][0]) if first["loc"] else ""
        hint = OPTION_OF_FIELD.get(field, "--" + field.replace("_", "-"))
        raise click.BadParameter(first["msg"], param_hint=hint) from None


@conn.command()
@click.argument("name")
@click.argument("a")
@click.argument("b")
@click.option("--bandwidth", required=True, help="The guarantee, e.g. 20mbit.")
@click.option("--protocol", type=click.Choice(get_args(Protocol)), help="Only this protocol.")
@click.option("--sport", "src_port", type=int, help="Source port (tcp/udp).")
@click.option("--dport", "dst_port", type=int, help="Destination port (tcp/udp).")
@click.option("--bidirectional", is_flag=True, help="Guarantee B -> A as well.")
@click.option("--path", "path_text", metavar="H1,H2,...", help="Explicit path of physical hosts.")
@click.option("--packet-size", type=int, help="Count encapsulation overhead at this size [1500].")
@click.option("--idempotency-key", help="Send this key: a retry with it creates nothing new.")
@_tenant_option
@controller_options
@controller_command
@run_controller
def request(
    client: ControllerClient,
    as_json: bool,
    tenant: str | None,
    path_text: str | None,
    idempotency_key: str | None,
    **fields: Any,
) -> None:
    """Ask for connection NAME from end host A to end host B with a bandwidth guarantee.

    \b
    The answer is synchronous: established (with the path of physical hosts, the VRs and
    SIDs, and any connection moved make-before-break to make room), or rejected with the
    reason and every link direction that lacks capacity (exit 1).
    """
    from vnet.model.controller_api import ConnectionRequest

    body = _validated(ConnectionRequest, path=_path(path_text), **fields)
    answer = client.request_connection(
        tenant_of(client, tenant, endhost=body.a), body, idempotency_key or str(uuid.uuid4())
    )
    if as_json:
        out.dump(answer)
    else:
        out.print_answer(answer, "established")


@conn.command()
@click.argument("name")
@click.option("--bandwidth", help="The new guarantee, e.g. 30mbit.")
@click.option("--path", "path_text", metavar="H1,H2,...", help="The new path of physical hosts.")
@_tenant_option
@controller_options
@controller_command
@run_controller
def modify(
    client: ControllerClient,
    as_json: bool,
    name: str,
    bandwidth: str | None,
    path_text: str | None,
    tenant: str | None,
) -> None:
    """Change connection NAME's bandwidth or path, make-before-break."""
    from vnet.model.controller_api import ModifyRequest

    if bandwidth is None and path_text is None:
        raise click.UsageError("give --bandwidth, --path or both")
    body = _validated(ModifyRequest, bandwidth=bandwidth, path=_path(path_text))
    answer = client.modify(tenant_of(client, tenant, connection=name), name, body)
    if as_json:
        out.dump(answer)
    else:
        out.print_answer(answer, "modified")


@conn.command()
@click.argument("name")
@_tenant_option
@controller_options
@controller_command
@run_controller
def release(client: ControllerClient, as_json: bool, name: str, tenant: str | None) -> None:
    """Release connection NAME: its pieces leave every host, its bandwidth the ledger."""
    view = client.release(tenant_of(client, tenant, connection=name), name)
    if as_json:
        out.dump(view)
    else:
        from vnet.ui import console

        console.print(f"connection [bold]{view.tenant}/{view.name}[/bold] {view.status}")
