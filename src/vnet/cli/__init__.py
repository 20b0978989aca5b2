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


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="vnet")
def main() -> None:
    """vnet: isolated virtual networks of virtual routers on Linux hosts."""


def _register() -> None:
    from vnet.cli.bench_cmds import bench
    from vnet.cli.demo_cmd import demo
    from vnet.cli.lab_cmds import lab

    main.add_command(lab)
    main.add_command(demo)
    main.add_command(bench)


_register()
