"""The `vnet` command line."""

from __future__ import annotations

import functools
import importlib
import os
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from vnet import __version__

F = TypeVar("F", bound=Callable[..., Any])


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
        from vnet.lab.lab import LabError
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


class LazyGroup(click.Group):
    """Subcommands named "module:attribute", imported only when used.

    Benchmarks pull in numpy, scipy and matplotlib; `vnet lab exec` should
    not pay for that at every start.
    """

    def __init__(self, *args: Any, lazy: dict[str, str] | None = None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.lazy = lazy or {}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in self.lazy:
            module, attr = self.lazy[name].split(":")
            return getattr(importlib.import_module(module), attr)  # type: ignore[no-any-return]
        return super().get_command(ctx, name)


@click.group(
    cls=LazyGroup,
    lazy={
        "lab": "vnet.cli.lab_cmds:lab",
        "demo": "vnet.cli.demo_cmd:demo",
        "bench": "vnet.cli.bench_cmds:bench",
        "agent": "vnet.cli.agent_cmds:agent",
        "vr": "vnet.cli.vr_cmds:vr",
    },
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.version_option(__version__, prog_name="vnet")
def main() -> None:
    """vnet: isolated virtual networks of virtual routers on Linux hosts."""
