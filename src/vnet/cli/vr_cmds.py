"""vnet vr create|list|show|delete|start|stop: virtual routers on an agent.

A client of the agent like any other: NETCONF (ncclient) by default,
RESTCONF (httpx) with --via restconf. It never touches the kernel or the
agent's files; everything goes over the wire.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import quote

import click

F = TypeVar("F", bound=Callable[..., Any])

NS = "urn:vnet:yang:vnet-router"
NC = "urn:ietf:params:xml:ns:netconf:base:1.0"
MODULE = "vnet-router"
DEFAULT_PORTS = {"netconf": 830, "restconf": 8443}


class AgentError(Exception):
    """An error the agent answered with (rpc-error / ietf-restconf:errors)."""

    def __init__(self, tag: str, message: str, path: str | None = None, status: int | None = None):
        super().__init__(message)
        self.tag, self.message, self.path, self.status = tag, message, path, status

    def to_dict(self) -> dict[str, Any]:
        return {"error-tag": self.tag, "error-path": self.path, "error-message": self.message}


class Unreachable(Exception):
    """The agent could not be reached or refused the login."""


@dataclass
class Endpoint:
    via: str
    namespace: str | None
    address: str
    port: int
    user: str
    password: str
    verify: bool | str = True  # RESTCONF: True (system CAs), a CA/cert file, or False
    plain_http: bool = False
    timeout: float = 30.0
    hostkey: str | None = None  # NETCONF: the agent's SSH host key (base64) to pin


# -- clients ---------------------------------------------------------------------
def _router_filter(name: str | None) -> str:
    from xml.sax.saxutils import escape

    inner = f"<router><name>{escape(name)}</name></router>" if name is not None else ""
    return f'<routers xmlns="{NS}">{inner}</routers>'


class NetconfClient:
    def __init__(self, ep: Endpoint):
        import ncclient.transport.session
        from ncclient import manager
        from ncclient.transport.errors import AuthenticationError, SSHError, SSHUnknownHostError

        ncclient.transport.session.TICK = 0.001  # else every reply waits up to 100 ms
        try:
            self.m = manager.connect(
                host=ep.address,
                port=ep.port,
                username=ep.user,
                password=ep.password,
                hostkey_verify=ep.hostkey is not None,
                hostkey_b64=ep.hostkey,
                look_for_keys=False,
                allow_agent=False,
                timeout=ep.timeout,
            )
        except SSHUnknownHostError:
            raise Unreachable(
                f"the SSH host key of {ep.address}:{ep.port} is not the one given with --hostkey"
            ) from None
        except AuthenticationError as err:
            raise Unreachable(f"the agent refused the login of {ep.user!r}: {err}") from None
        except (SSHError, OSError) as err:
            raise Unreachable(
                f"cannot reach the agent's NETCONF at {ep.address}:{ep.port}: {err}"
            ) from None

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.m.close_session()

    @contextlib.contextmanager
    def _errors(self) -> Iterator[None]:
        from ncclient.operations.errors import TimeoutExpiredError
        from ncclient.operations.rpc import RPCError

        try:
            yield
        except RPCError as err:
            raise AgentError(
                err.tag or "operation-failed", err.message or str(err), err.path
            ) from None
        except TimeoutExpiredError as err:
            raise Unreachable(f"the agent did not answer in time: {err}") from None

    def _routers(self, name: str | None, state: bool) -> list[dict[str, Any]]:
        from vnet.agent.restconf.codec import element_value
        from vnet.agent.schema import root

        filt = ("subtree", _router_filter(name))
        with self._errors():
            reply = self.m.get(filter=filt) if state else self.m.get_config("running", filter=filt)
        routers_el = reply.data_ele.find(f"{{{NS}}}routers")
        if routers_el is None:
            return []
        value = element_value(routers_el, root().children["routers"])
        return list(value.get("router", []))

    def routers(self, state: bool = True) -> list[dict[str, Any]]:
        return self._routers(None, state)

    def router(self, name: str, state: bool = True) -> dict[str, Any] | None:
        found = self._routers(name, state)
        return found[0] if found else None

    def _edit(self, router_xml: str) -> None:
        config = f'<config xmlns:nc="{NC}"><routers xmlns="{NS}">{router_xml}</routers></config>'
        with self._errors():
            self.m.edit_config(target="running", config=config)

    def create(self, entry: dict[str, Any]) -> None:
        from vnet.agent.restconf.codec import render_xml
        from vnet.agent.schema import root

        node = root().children["routers"].children["router"]
        xml = render_xml("router", [entry], node).decode()
        xml = xml.replace(f'<router xmlns="{NS}">', '<router nc:operation="create">', 1)
        self._edit(xml)

    def delete(self, name: str) -> None:
        from xml.sax.saxutils import escape

        self._edit(f'<router nc:operation="delete"><name>{escape(name)}</name></router>')

    def set_admin(self, name: str, state: str) -> None:
        from xml.sax.saxutils import escape

        if self.router(name, state=False) is None:  # a merge would create it
            raise AgentError(
                "data-missing",
                f"router {name!r} does not exist",
                f"/vr:routers/vr:router[vr:name='{name}']",
            )
        self._edit(
            f"<router><name>{escape(name)}</name><admin-state>{state}</admin-state></router>"
        )


class RestconfClient:
    JSON = "application/yang-data+json"

    def __init__(self, ep: Endpoint):
        import httpx

        self.httpx = httpx
        host = f"[{ep.address}]" if ":" in ep.address else ep.address
        scheme = "http" if ep.plain_http else "https"
        self.base = f"{scheme}://{host}:{ep.port}"
        self.ep = ep
        verify: Any = ep.verify
        if isinstance(verify, str):  # pin the agent's certificate
            import ssl

            verify = ssl.create_default_context(cafile=verify)
        self.client = httpx.Client(
            base_url=self.base,
            auth=(ep.user, ep.password),
            verify=verify,
            timeout=ep.timeout,
            headers={"Accept": self.JSON},
        )

    def close(self) -> None:
        self.client.close()

    def _request(self, method: str, url: str, **kw: Any) -> Any:
        httpx = self.httpx
        try:
            r = self.client.request(method, url, **kw)
        except httpx.ConnectError as err:
            text = str(err)
            if "CERTIFICATE_VERIFY_FAILED" in text:
                raise Unreachable(
                    f"the agent's certificate is not trusted ({text}); pin it with --cacert "
                    "FILE (restconf-cert.pem in the agent's state directory) or use --insecure"
                ) from None
            raise Unreachable(f"cannot reach the agent's RESTCONF at {self.base}: {text}") from None
        except httpx.HTTPError as err:
            raise Unreachable(f"RESTCONF request to {self.base} failed: {err}") from None
        if r.status_code == 401:
            raise Unreachable(f"the agent refused the login of {self.ep.user!r} (HTTP 401)")
        if r.status_code >= 400:
            raise self._error(r)
        return r

    @staticmethod
    def _error(r: Any) -> AgentError:
        try:
            err = r.json()["ietf-restconf:errors"]["error"][0]
            return AgentError(
                err.get("error-tag", "operation-failed"),
                err.get("error-message", r.text),
                err.get("error-path"),
                r.status_code,
            )
        except (ValueError, KeyError, IndexError, TypeError):
            return AgentError("operation-failed", f"HTTP {r.status_code}: {r.text[:200]}")

    @staticmethod
    def _uri(name: str | None = None) -> str:
        uri = f"/restconf/data/{MODULE}:routers"
        return uri + f"/router={quote(name, safe='')}" if name is not None else uri

    def routers(self, state: bool = True) -> list[dict[str, Any]]:
        r = self._request("GET", self._uri(), params={"content": "all" if state else "config"})
        return list(r.json().get(f"{MODULE}:routers", {}).get("router", []))

    def router(self, name: str, state: bool = True) -> dict[str, Any] | None:
        try:
            r = self._request(
                "GET", self._uri(name), params={"content": "all" if state else "config"}
            )
        except AgentError as err:
            if err.status == 404:
                return None
            raise
        entries = r.json().get(f"{MODULE}:router", [])
        return entries[0] if entries else None

    def create(self, entry: dict[str, Any]) -> None:
        body = json.dumps({f"{MODULE}:router": [entry]})
        self._request("POST", self._uri(), content=body, headers={"Content-Type": self.JSON})

    def delete(self, name: str) -> None:
        self._request("DELETE", self._uri(name))

    def set_admin(self, name: str, state: str) -> None:
        body = json.dumps({f"{MODULE}:router": [{"name": name, "admin-state": state}]})
        self._request("PATCH", self._uri(name), content=body, headers={"Content-Type": self.JSON})


# -- options and endpoint ------------------------------------------------------------
def _resolve(opts: dict[str, Any]) -> Endpoint:
    via = opts["via"]
    namespace = None
    address, user, password = opts["address"], opts["user"], opts["password"]
    port = opts["port"]
    verify: bool | str = True
    if opts["lab"] is not None:
        if opts["host"] is None:
            raise click.UsageError("--lab needs --host: the emulated host whose agent to ask")
        try:
            from vnet.lab.lab import agent_endpoint
        except ImportError:
            raise click.ClickException(
                "this vnet cannot look up lab agents yet; give --address, --user, --password"
            ) from None
        try:
            ep = agent_endpoint(opts["lab"], opts["host"])
        except (RuntimeError, OSError, ValueError) as err:  # LabError is a RuntimeError
            raise click.ClickException(str(err)) from None
        namespace = ep.namespace
        address = address or ep.address
        port = port or (ep.netconf_port if via == "netconf" else ep.restconf_port)
        user = user or ep.user
        password = password or ep.password
        cert = getattr(ep, "restconf_cert", None)
        if cert:
            verify = str(cert)
    elif opts["host"] is not None:
        raise click.UsageError("--host names a host of a lab: give --lab too")
    if opts["cacert"]:
        verify = opts["cacert"]
    if opts["insecure"]:
        verify = False
    if not user:
        raise click.UsageError("give --user (or set VNET_AGENT_USER)")
    if password is None:
        if not sys.stdin.isatty():
            raise click.UsageError("give --password (or set VNET_AGENT_PASSWORD)")
        password = click.prompt(f"password for {user}", hide_input=True, err=True)
    return Endpoint(
        via=via,
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


@contextlib.contextmanager
def connected(ep: Endpoint) -> Iterator[NetconfClient | RestconfClient]:
    """A client inside the endpoint's namespace (the lab's management network lives there)."""
    entered: contextlib.AbstractContextManager[None] = contextlib.nullcontext()
    if ep.namespace is not None:
        from vnet.substrate import nsfs  # only then: it pulls in pyroute2

        entered = nsfs.entered(ep.namespace)
    with entered:
        client = NetconfClient(ep) if ep.via == "netconf" else RestconfClient(ep)
        try:
            yield client
        finally:
            client.close()


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
        try:
            with connected(ep) as client:
                return action(client, as_json, **kwargs)
        except AgentError as err:
            where = f" at {err.path}" if err.path else ""
            click.echo(f"vnet: the agent says: {err.tag}{where}: {err.message}", err=True)
            if as_json:
                click.echo(json.dumps({"error": err.to_dict()}, indent=2))
            sys.exit(1)
        except Unreachable as err:
            click.echo(f"vnet: {err}", err=True)
            sys.exit(1)

    return wrapper


# -- output ---------------------------------------------------------------------------
def _itf_text(itf: dict[str, Any]) -> str:
    addrs = " ".join(a for a in (itf.get("ipv4"), itf.get("ipv6")) if a)
    status = itf.get("oper-status")
    return (
        f"{itf['name']}→{itf.get('network', '?')}"
        + (f" {addrs}" if addrs else "")
        + (f" ({status})" if status else "")
    )


def _print_json(value: Any) -> None:
    click.echo(json.dumps(value, indent=2))


def _print_table(routers: list[dict[str, Any]]) -> None:
    from rich.table import Table

    from vnet.ui import console

    if not routers:
        console.print("no virtual routers")
        return
    table = Table(show_lines=False)
    for col in ("index", "name", "admin", "oper", "interfaces", "routes"):
        table.add_column(col, justify="right" if col == "index" else "left")
    for r in sorted(routers, key=lambda r: int(r.get("index", 0))):
        routes = [f"{x['destination']} via {x['next-hop']}" for x in r.get("route", [])]
        table.add_row(
            str(r.get("index", "")),
            r["name"],
            r.get("admin-state", "up"),
            r.get("oper-state", "?"),
            "\n".join(_itf_text(i) for i in r.get("interface", [])) or "-",
            "\n".join(routes) or "-",
        )
    console.print(table)


def _print_router(r: dict[str, Any]) -> None:
    from rich.table import Table

    from vnet.ui import console

    console.print(
        f"[bold]{r['name']}[/bold]  index {r.get('index', '?')}  "
        f"admin {r.get('admin-state', 'up')}  oper {r.get('oper-state', '?')}  "
        f"uptime {r.get('uptime', 0)} s  routes in table {r.get('route-count', '?')}"
    )
    itfs = Table(title="interfaces", title_justify="left")
    cols = (
        "name",
        "network",
        "ipv4",
        "ipv6",
        "status",
        "in pkts",
        "in bytes",
        "out pkts",
        "out bytes",
        "errors",
        "drops",
    )
    for c in cols:
        itfs.add_column(
            c, justify="right" if c.startswith(("in ", "out ", "err", "drop")) else "left"
        )
    for i in r.get("interface", []):
        s = i.get("statistics", {})
        errors = int(s.get("in-errors", 0)) + int(s.get("out-errors", 0))
        drops = int(s.get("in-discards", 0)) + int(s.get("out-discards", 0))
        itfs.add_row(
            i["name"],
            i.get("network", ""),
            i.get("ipv4", ""),
            i.get("ipv6", ""),
            i.get("oper-status", "?"),
            s.get("in-packets", "-"),
            s.get("in-octets", "-"),
            s.get("out-packets", "-"),
            s.get("out-octets", "-"),
            str(errors) if s else "-",
            str(drops) if s else "-",
        )
    console.print(itfs)
    if r.get("route"):
        routes = Table(title="static routes", title_justify="left")
        routes.add_column("destination")
        routes.add_column("next hop")
        for x in r["route"]:
            routes.add_row(x["destination"], x["next-hop"])
        console.print(routes)


# -- argument parsing ------------------------------------------------------------------------
def parse_network(spec: str, position: int) -> dict[str, Any]:
    """NET[:IPV4[,IPV6]] -> an interface entry named eth<position>."""
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
    return {"destination": dest.strip(), "next-hop": via.strip()}


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
    client: Any,
    as_json: bool,
    name: str,
    networks: tuple[str, ...],
    index: int | None,
    routes: tuple[str, ...],
    down: bool,
) -> None:
    """Create virtual router NAME."""
    entry: dict[str, Any] = {"name": name}
    if index is not None:
        entry["index"] = index
    if down:
        entry["admin-state"] = "down"
    if networks:
        entry["interface"] = [parse_network(s, k) for k, s in enumerate(networks)]
    if routes:
        entry["route"] = [parse_route(s) for s in routes]
    client.create(entry)
    made = client.router(name, state=False) or entry
    if as_json:
        _print_json(made)
    else:
        click.echo(f"created {name} (index {made.get('index', '?')})")


@vr.command(name="list")
@agent_options
@run_client
def list_(client: Any, as_json: bool) -> None:
    """List the virtual routers with their state."""
    routers = client.routers(state=True)
    if as_json:
        _print_json(routers)
    else:
        _print_table(routers)


@vr.command()
@click.argument("name")
@agent_options
@run_client
def show(client: Any, as_json: bool, name: str) -> None:
    """Show one virtual router: configuration, state and interface counters."""
    r = client.router(name, state=True)
    if r is None:
        raise AgentError(
            "data-missing",
            f"router {name!r} does not exist",
            f"/vr:routers/vr:router[vr:name='{name}']",
        )
    if as_json:
        _print_json(r)
    else:
        _print_router(r)


@vr.command()
@click.argument("name")
@agent_options
@run_client
def delete(client: Any, as_json: bool, name: str) -> None:
    """Delete virtual router NAME."""
    client.delete(name)
    if as_json:
        _print_json({"name": name, "deleted": True})
    else:
        click.echo(f"deleted {name}")


def _admin(client: Any, as_json: bool, name: str, state: str) -> None:
    client.set_admin(name, state)
    if as_json:
        _print_json({"name": name, "admin-state": state})
    else:
        click.echo(f"{name} is {'up' if state == 'up' else 'down'} (admin-state {state})")


@vr.command()
@click.argument("name")
@agent_options
@run_client
def start(client: Any, as_json: bool, name: str) -> None:
    """Bring virtual router NAME up (admin-state up)."""
    _admin(client, as_json, name, "up")


@vr.command()
@click.argument("name")
@agent_options
@run_client
def stop(client: Any, as_json: bool, name: str) -> None:
    """Take virtual router NAME down (admin-state down); it keeps its configuration."""
    _admin(client, as_json, name, "down")
