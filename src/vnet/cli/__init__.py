"""The `vnet` command line."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from vnet import __version__

F = TypeVar("F", bound=Callable[..., Any])


class ConfigurationError(click.ClickException):
    """A configuration file that cannot be used: exit status 78 (EX_CONFIG), on which the
    services' units do not restart (the error is in the journal; a restart cannot fix it)."""

    exit_code = 78


def needs_root(fn: F) -> F:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if os.geteuid() != 0:
            raise click.ClickException(
                "this command creates network namespaces and needs root; run it with sudo"
            )
        return fn(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def friendly_errors(fn: F) -> F:
    """Turn vnet's expected failures into one clear message and exit code, no traceback."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from vnet.lab.record import LabError
        from vnet.lab.topology_file import TopologyFileError
        from vnet.substrate import ApplyError

        try:
            return fn(*args, **kwargs)
        except TopologyFileError as err:
            click.echo(str(err), err=True)
            sys.exit(2)
        except (ApplyError, LabError) as err:
            click.echo(f"vnet: {err}", err=True)
            sys.exit(1)

    return wrapper  # type: ignore[return-value]


Loader = Callable[[], click.Command]


def _lab() -> click.Command:
    from vnet.cli.lab_cmds import lab

    return lab


def _demo() -> click.Command:
    from vnet.cli.demo_cmd import demo

    return demo


def _bench() -> click.Command:
    from vnet.cli.bench_cmds import bench

    return bench


def _agent() -> click.Command:
    from vnet.cli.agent_cmds import agent

    return agent


def _vr() -> click.Command:
    from vnet.cli.vr_cmds import vr

    return vr


def _controller() -> click.Command:
    from vnet.cli.controller_cmds import controller

    return controller


def _conn() -> click.Command:
    from vnet.cli.conn_cmds import conn

    return conn


def _tenant() -> click.Command:
    from vnet.cli.tenant_cmds import tenant

    return tenant


def _net() -> click.Command:
    from vnet.cli.net_cmds import net

    return net


# The subcommands of `vnet`, each imported only when used: benchmarks pull in numpy,
# scipy and matplotlib, and `vnet lab exec` should not pay for that at every start.
# Plain imports inside functions, so tools (and a unit test) see and check every one.
COMMANDS: dict[str, Loader] = {
    "lab": _lab,
    "demo": _demo,
    "bench": _bench,
    "agent": _agent,
    "vr": _vr,
    "conn": _conn,
    "controller": _controller,
    "tenant": _tenant,
    "net": _net,
}

# What `vnet --help` lists for each command, so that listing them imports none (loading
# them all cost more than half a second): each the first paragraph of the command's help,
# which tests/unit/test_cli_commands.py holds equal to the loaded command's.
SUMMARIES: dict[str, str] = {
    "lab": "Emulate physical hosts on this machine and realise a topology file on them.",
    "demo": "Two tenants on two hosts (reachability, isolation, throughput, RTT, MTU), then"
    " the manager admitting and refusing guaranteed connections, and its console.",
    "bench": "Measure vnet: build times, data plane, forwarding, QoS, NETCONF, SNMP, SDN"
    " control plane.",
    "agent": "The management agent of one physical host (NETCONF, RESTCONF, SNMP).",
    "vr": "Virtual routers on an agent, over NETCONF (default) or RESTCONF (--via restconf).",
    "conn": "Guaranteed connections: ask the controller, or read the pieces on one agent's host.",
    "controller": "The network's manager: admission, paths and transactions across the agents.",
    "tenant": "Tenants on the controller: --controller URL --token-file F, or --lab NAME.",
    "net": "Virtual networks on the controller: --controller URL --token-file F, or --lab NAME.",
}


class LazyGroup(click.Group):
    """Subcommands loaded by zero-argument functions (`lazy`), only when used; listed in
    the group's help by their `summaries`, without loading them."""

    def __init__(
        self,
        *args: Any,
        lazy: dict[str, Loader] | None = None,
        summaries: dict[str, str] | None = None,
        **kwargs: Any,
    ):
        super().__init__(*args, **kwargs)
        self.lazy = lazy or {}
        self.summaries = summaries or {}
        self._listing = False

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        self._listing = True  # get_command gives stand-ins that carry the summaries
        try:
            super().format_commands(ctx, formatter)
        finally:
            self._listing = False

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if self._listing and name in self.summaries:
            return click.Command(name, help=self.summaries[name])
        if name in self.lazy:
            self.chosen = name
            try:
                return self.lazy[name]()
            except ModuleNotFoundError as err:  # an install without this command's extra
                return _missing_extra_command(name, err)
        return super().get_command(ctx, name)

    def invoke(self, ctx: click.Context) -> Any:
        """A library missing only once the command runs: which extra to install."""
        try:
            return super().invoke(ctx)
        except ModuleNotFoundError as err:
            from vnet.cli.extras import missing_extra_message

            message = missing_extra_message(err, getattr(self, "chosen", None))
            if message is None:
                raise
            raise click.ClickException(message) from None


def _missing_extra_command(name: str, err: ModuleNotFoundError) -> click.Command:
    """Stands in for a command whose module cannot be imported: says which extra to install."""
    from vnet.cli.extras import missing_extra_message

    message = missing_extra_message(err, name)
    if message is None:
        raise err

    def refuse() -> None:
        raise click.ClickException(message)

    return click.Command(
        name,
        callback=refuse,
        help=message,
        short_help="(not installed: " + message.split(": ")[-1] + ")",
        context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
        add_help_option=False,
    )


@click.group(
    cls=LazyGroup,
    lazy=COMMANDS,
    summaries=SUMMARIES,
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.version_option(__version__, prog_name="vnet")
def main() -> None:
    """vnet: isolated virtual networks of virtual routers on Linux hosts."""
