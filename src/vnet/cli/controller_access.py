"""How the `vnet conn|tenant|net` commands find a controller and report what it says.

A controller is named by `--controller URL --token-file F` (or VNET_CONTROLLER and
VNET_CONTROLLER_TOKEN_FILE), or by `--lab NAME`: the lab's record holds its URL, the
management namespace it serves in and the provider token. A refusal prints its reason and
every shortfall and exits 1; an unreachable controller exits 1; bad usage exits 2.
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:
    from vnet.client import ControllerClient

F = TypeVar("F", bound=Callable[..., Any])

CONTROLLER_KEYS = ("controller", "token_file", "ca_file")


@dataclass(frozen=True)
class ControllerTarget:
    url: str
    token_file: str
    namespace: str | None = None
    ca_file: str | None = None  # None: the system's CAs


def controller_options(fn: F) -> F:
    """--controller and --token-file (the lab's --lab and the --json flag come with the
    command: `vnet conn list|show` share them with the agent form)."""
    decorators = [
        click.option(
            "--controller",
            envvar="VNET_CONTROLLER",
            metavar="URL",
            help="The controller's URL, e.g. https://10.0.0.1:8480 (or VNET_CONTROLLER).",
        ),
        click.option(
            "--token-file",
            envvar="VNET_CONTROLLER_TOKEN_FILE",
            type=click.Path(dir_okay=False),
            help="A file holding the API token (or VNET_CONTROLLER_TOKEN_FILE).",
        ),
        click.option(
            "--ca-file",
            envvar="VNET_CONTROLLER_CA",
            type=click.Path(exists=True, dir_okay=False),
            help="The certificate (or its CA's) the controller's HTTPS is verified against,"
            " e.g. its self-signed controller-cert.pem (or VNET_CONTROLLER_CA); default: the"
            " system's CAs.",
        ),
    ]
    for d in reversed(decorators):
        fn = d(fn)
    return fn


def controller_command(fn: F) -> F:
    """--lab, --json and --timeout of a command only the controller answers (`vnet conn
    list|show` take them from the agent form's options)."""
    fn = click.option("--timeout", type=float, default=60.0, show_default=True, hidden=True)(fn)
    fn = click.option("--json", "as_json", is_flag=True, help="Print JSON for programs.")(fn)
    return click.option("--lab", help="Ask the controller of this lab (its provider token).")(fn)


def resolve(
    controller: str | None, token_file: str | None, lab: str | None, ca_file: str | None = None
) -> ControllerTarget:
    """The controller to ask, from the options; UsageError (exit 2) when they do not say."""
    if controller and lab:
        raise click.UsageError("give either --controller URL or --lab NAME, not both")
    if lab:
        from vnet.lab.access import controller_access
        from vnet.lab.record import LabError

        try:
            rec = controller_access(lab)
        except LabError as err:
            raise click.ClickException(str(err)) from None
        certificate = ca_file or rec.certificate
        return ControllerTarget(rec.url, token_file or rec.token_file, rec.namespace, certificate)
    if not controller:
        raise click.UsageError(
            "name the controller: --controller URL --token-file F, or --lab NAME"
        )
    if not token_file:
        raise click.UsageError("give --token-file F (a file holding the API token)")
    return ControllerTarget(controller, token_file, ca_file=ca_file)


def report(err: Exception, as_json: bool) -> None:
    """Print a controller's refusal (or a connect failure) and exit 1."""
    from vnet.client import ControllerError

    if isinstance(err, ControllerError):
        lines = err.lines()
        click.echo(f"vnet: the controller says: {lines[0]}", err=True)
        for line in lines[1:]:
            click.echo(line, err=True)
        if as_json:
            click.echo(json.dumps({"error": err.error.model_dump(mode="json")}, indent=2))
    else:
        click.echo(f"vnet: {err}", err=True)
    sys.exit(1)


def call(
    target: ControllerTarget, timeout: float, as_json: bool, action: Callable[..., Any]
) -> Any:
    """Run `action(client)` against the target, mapping every refusal to `report`."""
    from vnet.client import ConnectError, ControllerClient, ControllerError

    try:
        with ControllerClient.from_token_file(
            target.url,
            target.token_file,
            namespace=target.namespace,
            timeout=timeout,
            verify=target.ca_file or True,
        ) as client:
            return action(client)
    except (ControllerError, ConnectError) as err:
        report(err, as_json)


def run_controller(action: Callable[..., Any]) -> Callable[..., Any]:
    """Resolve the controller from the options, connect, run `action(client, as_json, **rest)`."""

    @functools.wraps(action)
    def wrapper(**kwargs: Any) -> Any:
        opts = {k: kwargs.pop(k) for k in CONTROLLER_KEYS}
        lab, as_json, timeout = kwargs.pop("lab"), kwargs.pop("as_json"), kwargs.pop("timeout")
        target = resolve(opts["controller"], opts["token_file"], lab, opts["ca_file"])
        return call(target, timeout, as_json, lambda c: action(c, as_json, **kwargs))

    return wrapper


def tenant_of(
    client: ControllerClient,
    given: str | None,
    endhost: str | None = None,
    connection: str | None = None,
) -> str:
    """The tenant a command acts for: --tenant, else the token's own tenant, else (the
    provider's token) the one tenant that owns `endhost` or a live `connection` of that name."""
    if given:
        return given
    me = client.whoami()
    if me.tenant:
        return me.tenant
    owners: set[str] = set()
    if endhost is not None:
        owners = {e.tenant for e in client.endhosts() if e.name == endhost and e.tenant}
    if connection is not None:
        owners = {c.tenant for c in client.connections() if c.name == connection}
    if len(owners) == 1:
        return owners.pop()
    which = f" ({', '.join(sorted(owners))} all have one)" if owners else ""
    raise click.UsageError(f"the provider's token acts for every tenant: give --tenant T{which}")
