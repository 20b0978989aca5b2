"""vnet controller run | token create | migrate | host ... | link ..."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from pydantic import ValidationError
from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from vnet.cli import ConfigurationError
from vnet.model.controller_config import ControllerConfig

CONFIG_HELP = "Controller configuration (YAML; docs/controller.md): state_dir, database, agents..."


@click.group()
def controller() -> None:
    """The network's manager: admission, paths and transactions across the agents."""


def load_config(path: Path | None, overrides: dict[str, Any] | None = None) -> ControllerConfig:
    """The configuration file, with the flags given on the command line over it."""
    data: dict[str, Any] = {}
    if path is not None:
        try:
            loaded = YAML(typ="safe").load(path.read_text())
        except (OSError, YAMLError) as err:
            raise ConfigurationError(f"{path}: {err}") from None
        if loaded is not None and not isinstance(loaded, dict):
            raise ConfigurationError(f"{path}: the configuration is a mapping of settings")
        data = dict(loaded or {})
    data.update({k: v for k, v in (overrides or {}).items() if v is not None})
    try:
        return ControllerConfig.model_validate(data)
    except ValidationError as err:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'configuration'}: {e['msg']}"
            for e in err.errors()
        )
        raise ConfigurationError(f"{path or 'controller configuration'}: {problems}") from None


config_option = click.option(
    "--config",
    "config_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help=CONFIG_HELP,
)
database_option = click.option(
    "--database", help="SQLAlchemy URL (default: SQLite in the state directory)."
)
state_dir_option = click.option(
    "--state-dir", type=click.Path(file_okay=False, path_type=Path), help="Overrides the file's."
)


@controller.command()
@config_option
@state_dir_option
@database_option
@click.option("--listen", help="Address to serve the API on (default 127.0.0.1).")
@click.option("--port", type=int, help="Port to serve the API on (default 8480).")
@click.option(
    "--log-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Log to this file, rotated by size (log_max_bytes, log_backups); default: stderr.",
)
@click.option(
    "-v",
    "--verbose",
    count=True,
    help="-v: vnet's debug records; -vv: the libraries' too (ncclient, SSH, HTTP).",
)
def run(
    config_path: Path | None,
    state_dir: Path | None,
    database: str | None,
    listen: str | None,
    port: int | None,
    log_file: Path | None,
    verbose: int,
) -> None:
    """Serve the API until SIGTERM; migrate and recover first."""
    from vnet.tools import logs

    overrides = {"state_dir": state_dir, "database": database, "listen": listen, "port": port}
    config = load_config(config_path, {**overrides, "log_file": log_file})
    file = None
    if config.log_file is not None:
        file = logs.LogFile(config.log_file, config.log_max_bytes, config.log_backups)
    try:
        logs.configure(verbose, file)
    except OSError as err:
        raise click.ClickException(f"log file {config.log_file}: {err.strerror}") from None
    inventory = None
    if config.inventory is not None:
        from vnet.lab.topology_file import TopologyFileError, load_topology

        try:
            inventory = load_topology(config.inventory)
        except TopologyFileError as err:
            raise ConfigurationError(f"inventory: {err}") from None
    # the server's stack (FastAPI, SQLAlchemy, ...) once the configuration holds: a refused
    # one is answered in a quarter of the time
    from vnet.controller.server import StartConfigError, StartError
    from vnet.controller.server import run as run_controller

    try:
        run_controller(config, inventory)
    except StartConfigError as err:
        raise ConfigurationError(str(err)) from None
    except StartError as err:
        raise click.ClickException(str(err)) from None


@controller.command()
@config_option
@state_dir_option
@database_option
def migrate(config_path: Path | None, state_dir: Path | None, database: str | None) -> None:
    """Bring the database to the current schema (run does this at every start)."""
    from vnet.controller.db import upgrade
    from vnet.controller.server import database_url, shown_url

    config = load_config(config_path, {"state_dir": state_dir, "database": database})
    url = database_url(config)
    try:
        upgrade(url)
    except Exception as err:
        raise click.ClickException(f"database {shown_url(url)}: {err}") from None
    click.echo(f"database {shown_url(url)} is at the current schema")


@controller.group()
def token() -> None:
    """API tokens (stored as their SHA-256; a token is shown once)."""


@token.command("create")
@config_option
@state_dir_option
@database_option
@click.option("--role", type=click.Choice(["provider", "tenant"]), required=True)
@click.option("--tenant", help="The tenant a tenant administrator's token acts for.")
@click.option("--expires-in", type=click.IntRange(min=1), help="Seconds; default: never.")
@click.option("--json", "as_json", is_flag=True, help="The TokenView as JSON.")
def token_create(
    config_path: Path | None,
    state_dir: Path | None,
    database: str | None,
    role: str,
    tenant: str | None,
    expires_in: int | None,
    as_json: bool,
) -> None:
    """Print a new API token (only its hash is stored: keep it)."""
    from vnet.controller.api.auth import create_token
    from vnet.controller.db import make_engine, session_factory, upgrade
    from vnet.controller.errors import ServiceError
    from vnet.controller.server import database_url

    config = load_config(config_path, {"state_dir": state_dir, "database": database})
    url = database_url(config)
    upgrade(url)
    engine = make_engine(url)
    try:
        with session_factory(engine).begin() as session:
            view = create_token(session, role, tenant, expires_in)  # type: ignore[arg-type]
    except ServiceError as err:
        raise click.ClickException(f"--{err.field or 'role'}: {err.reason}") from None
    finally:
        engine.dispose()
    click.echo(view.model_dump_json() if as_json else view.token)


@token.command("revoke")
@config_option
@state_dir_option
@database_option
@click.argument("token_value", metavar="TOKEN")
def token_revoke(
    config_path: Path | None, state_dir: Path | None, database: str | None, token_value: str
) -> None:
    """Revoke TOKEN ("-": read it from stdin); every controller refuses it within 2 s."""
    from vnet.controller.api.auth import revoke_token
    from vnet.controller.db import make_engine, session_factory
    from vnet.controller.server import database_url

    if token_value == "-":
        token_value = click.get_text_stream("stdin").readline().strip()
    config = load_config(config_path, {"state_dir": state_dir, "database": database})
    engine = make_engine(database_url(config))
    try:
        with session_factory(engine).begin() as session:
            revoked = revoke_token(session, token_value)
    finally:
        engine.dispose()
    if not revoked:
        raise click.ClickException("no such token, or it was revoked already")
    click.echo("revoked")


def _underlay() -> None:
    """vnet controller host|link (cli/underlay_cmds.py)."""
    from vnet.cli.underlay_cmds import host, link

    controller.add_command(host)
    controller.add_command(link)


_underlay()
