"""The `vnet` subcommands: every listed one loads, and `vnet --help` stays light."""

from __future__ import annotations

import subprocess
import sys

import click
import pytest

from vnet.cli import COMMANDS, main


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_listed_command_loads(name: str) -> None:
    command = COMMANDS[name]()
    assert isinstance(command, click.Command)
    assert command.name == name
    assert main.get_command(click.Context(main), name) is command


def test_help_lists_every_command_without_loading_plotting() -> None:
    probe = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from vnet.cli import main\n"
        "result = CliRunner().invoke(main, ['--help'])\n"
        "assert result.exit_code == 0, result.output\n"
        "print(result.output)\n"
        "print('HEAVY', sorted(m for m in ('numpy', 'scipy', 'matplotlib') if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    for name in COMMANDS:
        assert f"  {name} " in out
    assert "HEAVY []" in out
