"""vnet vr create|list|show|delete|start|stop: virtual routers on an agent.

A client of the agent like any other: NETCONF (ncclient) by default,
RESTCONF (httpx) with --via restconf. It never touches the kernel or the
agent's files; everything goes over the wire.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from vnet.cli.vr_output import (
    print_classes,
    print_connections,
    print_json,
    print_router,
    print_table,
)

F = TypeVar("F", bound=Callable[..., Any])

if TYPE_CHECKING:
    from vnet.client import AgentClient, Endpoint


# -- options and endpoint ------------------------------------------------------------
def _resolve(opts: dict[str, Any]) -> Endpoint:
    from vnet.client import DEFAULT_PORTS, Endpoint

    via = opts["via"]
    given = {k: opts[k] for k in ("address", "port", "user", "password")}
    namespace = None
    verify: bool | str = True
    if opts["lab"] is not None:
        namespace, lab_verify = _from_lab(opts, given)
        verify = lab_verify if lab_verify is not None else verify
    elif opts["host"] is not None:
        raise click.UsageError("--host names a host of a lab: give --lab too")
    if opts["cacert"]:
        verify = opts["cacert"]
    if opts["insecure"]:
        verify = False
    address, port, user, password = (given[k] for k in ("address", "port", "user", "password"))
    if not user:
        raise click.UsageError("give --user (or set VNET_AGENT_USER)")
    if password is None:
        if not sys.stdin.isatty():
            raise click.UsageError("give --password (or set VNET_AGENT_PASSWORD)")
        password = click.prompt(f"password for {user}", hide_input=True, err=True)
    return Endpoint(
        namespace=namespace,
        address=address or "127.0.0.1",
        port=port or DEFAULT_PORTS[via],
        user=user,
        password=password,
        verify=verify,
        plain_http=opts["plain_http"],
        timeout=opts["timeout"],
        hostkey=_hostkey(opts["hostkey"]),
    )


def _from_lab(opts: dict[str, Any], given: dict[str, Any]) -> tuple[str | None, str | None]:
    """Fill what `given` lacks from the lab's record of the host's agent; return the
    agent's namespace and its RESTCONF certificate (to verify against), if any."""
    if opts["host"] is None:
        raise click.UsageError("--lab needs --host: the emulated host whose agent to ask")
    try:
        from vnet.lab.access import agent_endpoint
    except ImportError:
        raise click.ClickException(
            "this vnet cannot look up lab agents yet; give --address, --user, --password"
        ) from None
    try:
        ep = agent_endpoint(opts["lab"], opts["host"], opts["via"])
    except (RuntimeError, OSError, ValueError) as err:  # LabError is a RuntimeError
        raise click.ClickException(str(err)) from None
    given["address"] = given["address"] or ep.address
    given["port"] = given["port"] or ep.port
    given["user"] = given["user"] or ep.user
    given["password"] = given["password"] or ep.password
    return ep.namespace, ep.verify if isinstance(ep.verify, str) else None


def _hostkey(value: str | None) -> str | None:
    """'ssh-ed25519 AAAA... comment', 'AAAA...' or a .pub file -> the base64 key."""
    if not value:
        return None
    if os.path.isfile(value):
        with open(value) as f:
            value = f.read()
    fields = value.split()
    key = next((f for f in fields if f.startswith("AAAA")), None)
    if key is None:
        raise click.BadParameter(
            "give the key as 'ssh-ed25519 AAAA...', its base64 part, or a .pub file",
            param_hint="--hostkey",
        )
    return key


def agent_options(fn: F) -> F:
    """The options every `vnet vr` command takes to find and log in to an agent."""
    decorators = [
        click.option(
            "--via",
            type=click.Choice(["netconf", "restconf"]),
            default="netconf",
            show_default=True,
            help="Management protocol.",
        ),
        click.option("--address", envvar="VNET_AGENT_ADDRESS", help="Agent address [127.0.0.1]."),
        click.option("--port", type=int, help="Agent port [830 NETCONF, 8443 RESTCONF]."),
        click.option("--user", envvar="VNET_AGENT_USER", help="Agent user."),
        click.option("--password", envvar="VNET_AGENT_PASSWORD", help="Agent password."),
        click.option("--lab", help="Ask the agent of a lab's host (with --host)."),
        click.option("--host", help="The lab host whose agent to ask."),
        click.option(
            "--cacert",
            type=click.Path(exists=True, dir_okay=False),
            help="RESTCONF: trust this certificate (the agent's restconf-cert.pem).",
        ),
        click.option("--insecure", is_flag=True, help="RESTCONF: do not verify the certificate."),
        click.option("--plain-http", is_flag=True, help="RESTCONF over plain HTTP."),
        click.option(
            "--hostkey",
            metavar="KEY|FILE",
            help="NETCONF: pin the agent's SSH host key (as `ssh-keygen -y` prints it).",
        ),
        click.option("--timeout", type=float, default=30.0, show_default=True, hidden=True),
        click.option("--json", "as_json", is_flag=True, help="Print JSON instead of tables."),
    ]
    for d in reversed(decorators):
        fn = d(fn)
    return fn


_CONN_KEYS = [
    "via",
    "address",
    "port",
    "user",
    "password",
    "lab",
    "host",
    "cacert",
    "insecure",
    "plain_http",
    "timeout",
    "hostkey",
]


def run_client(action: Callable[..., Any]) -> Callable[..., Any]:
    """Resolve the endpoint, connect, run `action(client, as_json, **rest)`, map errors."""

    @functools.wraps(action)
    def wrapper(**kwargs: Any) -> Any:
        conn = {k: kwargs.pop(k) for k in _CONN_KEYS}
        if conn["lab"] is not None:  # the lab's endpoint wins over VNET_AGENT_* variables
            ctx = click.get_current_context()
            for k in ("address", "user", "password"):
                if ctx.get_parameter_source(k) == click.core.ParameterSource.ENVIRONMENT:
                    conn[k] = None
        as_json = kwargs.pop("as_json")
        ep = _resolve(conn)
        from vnet.client import ClientError, ConnectError, connect

        try:
            with connect(ep, conn["via"]) as client:
                return action(client, as_json, **kwargs)
        except ClientError as err:
            click.echo(f"vnet: the agent says: {err}", err=True)
            if as_json:
                click.echo(json.dumps({"error": err.to_dict()}, indent=2))
            sys.exit(1)
        except ConnectError as err:  # AuthError too
            click.echo(f"vnet: {err}", err=True)
            sys.exit(1)

    return wrapper


# -- argument parsing ------------------------------------------------------------------------
def parse_network(spec: str, position: int) -> dict[str, Any]:
    """NET[:IPV4[,IPV6]] -> an interface (model fields) named eth<position>."""
    net, _, addrs = spec.partition(":")
    if not net:
        raise click.BadParameter(f"{spec!r}: write NET[:IPV4[,IPV6]]", param_hint="--network")
    itf: dict[str, Any] = {"name": f"eth{position}", "network": net}
    for addr in filter(None, (a.strip() for a in addrs.split(","))):
        family = "ipv6" if ":" in addr else "ipv4"
        if family in itf:
            raise click.BadParameter(
                f"{spec!r}: two {family} addresses; write NET:IPV4,IPV6", param_hint="--network"
            )
        if "/" not in addr:
            raise click.BadParameter(
                f"{spec!r}: {addr!r} needs its prefix length (10.1.0.1/24)", param_hint="--network"
            )
        itf[family] = addr
    return itf


def parse_route(spec: str) -> dict[str, str]:
    dest, sep, via = spec.partition("=")
    if not sep or not dest or not via:
        raise click.BadParameter(f"{spec!r}: write DEST=NEXTHOP", param_hint="--route")
    return {"to": dest.strip(), "via": via.strip()}


# -- commands -------------------------------------------------------------------------------
@click.group()
def vr() -> None:
    """Virtual routers on an agent, over NETCONF (default) or RESTCONF (--via restconf).

    \b
    Find the agent with --address/--port/--user/--password (or VNET_AGENT_ADDRESS,
    VNET_AGENT_USER, VNET_AGENT_PASSWORD), or with --lab NAME --host H for a lab's host.
    """


@vr.command()
@click.argument("name")
@click.option(
    "--network",
    "networks",
    multiple=True,
    metavar="NET[:IPV4[,IPV6]]",
    help="An interface (eth0, eth1, ... in order) on virtual network NET (repeatable).",
)
@click.option("--index", type=int, help="The VR's index (default: the next free one).")
@click.option("--route", "routes", multiple=True, metavar="DEST=NEXTHOP", help="A static route.")
@click.option("--down", is_flag=True, help="Create it administratively down.")
@agent_options
@run_client
def create(
    client: AgentClient,
    as_json: bool,
    name: str,
    networks: tuple[str, ...],
    index: int | None,
    routes: tuple[str, ...],
    down: bool,
) -> None:
    """Create virtual router NAME."""
    from pydantic import ValidationError

    from vnet.model import Interface, Route, VirtualRouter

    try:
        router = VirtualRouter(
            name=name,
            host=client.ep.host,
            index=index,
            admin_state="down" if down else "up",
            interfaces=[
                Interface.model_validate(parse_network(s, k)) for k, s in enumerate(networks)
            ],
            routes=[Route.model_validate(parse_route(s)) for s in routes],
        )
    except ValidationError as err:
        raise click.BadParameter(_first_problem(err)) from None
    client.create_router(router)
    made = client.router(name, state=False)
    if as_json:
        print_json(made.entry if made else {"name": name})
    else:
        click.echo(f"created {name} (index {made.router.index if made else '?'})")


def _first_problem(err: Any) -> str:
    first = err.errors()[0]
    where = ".".join(str(p) for p in first["loc"])
    return f"{where}: {first['msg']}"


@vr.command(name="list")
@agent_options
@run_client
def list_(client: AgentClient, as_json: bool) -> None:
    """List the virtual routers with their state, and the host's classes and connections."""
    routers = [r.entry for r in client.routers(state=True)]
    if as_json:
        print_json(routers)
        return
    print_table(routers)
    guarantees = client.guarantees(state=True)
    connections = guarantees.get("vnet-router:srv6", {}).get("connection", [])
    if connections:
        print_connections(connections)
    print_classes(guarantees.get("vnet-router:underlay", {}).get("interface", []))


@vr.command()
@click.argument("name")
@agent_options
@run_client
def show(client: AgentClient, as_json: bool, name: str) -> None:
    """Show one virtual router: configuration, state and interface counters."""
    r = client.router(name, state=True)
    if r is None:
        from vnet.client import ClientError
        from vnet.model.yang.paths import entry_path

        raise ClientError(
            "data-missing",
            f"router {name!r} does not exist",
            entry_path("routers", "router", name),
        )
    if as_json:
        print_json(r.entry)
        return
    print_router(r.entry)
    connections = client.guarantees(state=True).get("vnet-router:srv6", {}).get("connection", [])
    print_connections(connections, router=name)


@vr.command()
@click.argument("name")
@agent_options
@run_client
def delete(client: AgentClient, as_json: bool, name: str) -> None:
    """Delete virtual router NAME."""
    client.delete_router(name)
    if as_json:
        print_json({"name": name, "deleted": True})
    else:
        click.echo(f"deleted {name}")


def _admin(client: AgentClient, as_json: bool, name: str, state: str) -> None:
    client.set_admin(name, state)
    if as_json:
        print_json({"name": name, "admin-state": state})
    else:
        click.echo(f"{name} is {'up' if state == 'up' else 'down'} (admin-state {state})")


@vr.command()
@click.argument("name")
@agent_options
@run_client
def start(client: AgentClient, as_json: bool, name: str) -> None:
    """Bring virtual router NAME up (admin-state up)."""
    _admin(client, as_json, name, "up")


@vr.command()
@click.argument("name")
@agent_options
@run_client
def stop(client: AgentClient, as_json: bool, name: str) -> None:
    """Take virtual router NAME down (admin-state down); it keeps its configuration."""
    _admin(client, as_json, name, "down")
