"""vnet agent run"""

from __future__ import annotations

import asyncio
from pathlib import Path

import click
from pydantic import ValidationError
from ruamel.yaml.error import YAMLError

from vnet.agent.config import load_config
from vnet.agent.frontends import FRONTENDS
from vnet.cli import ConfigurationError


@click.group()
def agent() -> None:
    """The management agent of one physical host (NETCONF, RESTCONF, SNMP)."""


config_option = click.option(
    "--config",
    "config_path",
    type=click.Path(exists=True, dir_okay=False),
    help="Agent configuration (YAML): host, address, ports, users, state_dir.",
)
state_dir_option = click.option(
    "--state-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Where the datastore and the host keys persist (overrides the file).",
)


@agent.command()
@config_option
@state_dir_option
@click.option("--address", help="Management address to listen on.")
@click.option("--host", "host_name", help="This physical host's name.")
@click.option("--netconf-port", type=int)
@click.option("--restconf-port", type=int)
@click.option(
    "--user",
    "users",
    multiple=True,
    metavar="NAME:PASSWORD",
    help="A user who may log in (repeatable); adds to the file's users.",
)
@click.option(
    "--frontends",
    help=f"Comma-separated protocols to serve (default: the file's, else {','.join(FRONTENDS)}).",
)
@click.option(
    "--startup",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Start from this configuration (RFC 7951 JSON), validated like an edit; "
    "applied when it changed since it was last applied.",
)
@click.option(
    "-v",
    "--verbose",
    count=True,
    help="-v: vnet's debug records; -vv: the libraries' too (SSH, HTTP).",
)
def run(
    config_path: str | None,
    state_dir: Path | None,
    address: str | None,
    host_name: str | None,
    netconf_port: int | None,
    restconf_port: int | None,
    users: tuple[str, ...],
    frontends: str | None,
    startup: Path | None,
    verbose: int,
) -> None:
    """Serve this host's datastore until SIGTERM; reconcile the kernel first."""
    from vnet.agent.main import run as run_agent
    from vnet.tools import logs

    logs.configure(verbose)
    overrides: dict[str, object] = {"state_dir": state_dir, "address": address, "host": host_name}
    extra_users = []
    for spec in users:
        name, sep, password = spec.partition(":")
        if not sep or not name:
            raise click.BadParameter(f"{spec!r}: write NAME:PASSWORD", param_hint="--user")
        extra_users.append({"name": name, "password": password})
    try:
        cfg = load_config(config_path, overrides)
    except ValidationError as err:
        if extra_users and all(e["loc"] == ("users",) for e in err.errors()):
            cfg = load_config(config_path, {**overrides, "users": extra_users})
        else:
            raise ConfigurationError(f"agent configuration: {err}") from None
    except (YAMLError, OSError) as err:
        raise ConfigurationError(f"agent configuration {config_path}: {err}") from None
    else:
        if extra_users:
            cfg = cfg.model_copy(
                update={"users": [*cfg.users, *(type(cfg.users[0])(**u) for u in extra_users)]}
            )
    ports = cfg.ports.model_copy(
        update={
            k: v
            for k, v in (("netconf", netconf_port), ("restconf", restconf_port))
            if v is not None
        }
    )
    cfg = cfg.model_copy(update={"ports": ports})
    chosen = frontends.split(",") if frontends else cfg.frontends or list(FRONTENDS)
    unknown = set(chosen) - set(FRONTENDS)
    if unknown:
        raise click.BadParameter(f"unknown: {', '.join(sorted(unknown))}", param_hint="--frontends")
    from vnet.model.yang.errors import RpcError

    try:
        asyncio.run(run_agent(cfg, chosen, startup))
    except RpcError as err:  # the startup file does not validate: nothing was changed
        raise click.ClickException(f"{startup}: {err}") from None


@agent.command()
@config_option
@state_dir_option
def hostkey(config_path: str | None, state_dir: Path | None) -> None:
    """Print this agent's SSH host key, for the controller to pin (its agents[].hostkey).

    The key is made here if the agent has not started yet, the one it then serves."""
    from vnet.agent.netconf.server import host_key
    from vnet.model.agent_config import HOSTKEY_FILE, AgentConfig
    from vnet.tools.sshkeys import public_line

    if state_dir is None and config_path is None:
        state_dir = AgentConfig.model_fields["state_dir"].default
    if state_dir is None:
        try:
            state_dir = load_config(config_path).state_dir
        except (ValidationError, YAMLError, OSError) as err:
            raise ConfigurationError(f"agent configuration: {err}") from None
    state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    host_key(state_dir)
    click.echo(public_line(state_dir / HOSTKEY_FILE))
