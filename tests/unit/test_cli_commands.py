"""The `vnet` subcommands: every listed one loads, and `vnet --help` stays light."""

from __future__ import annotations

import subprocess
import sys

import click
import pytest

from vnet.cli import COMMANDS, SUMMARIES, main


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_listed_command_loads(name: str) -> None:
    command = COMMANDS[name]()
    assert isinstance(command, click.Command)
    assert command.name == name
    assert main.get_command(click.Context(main), name) is command


def test_help_lists_every_command_without_loading_any() -> None:
    probe = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from vnet.cli import main\n"
        "result = CliRunner().invoke(main, ['--help'])\n"
        "assert result.exit_code == 0, result.output\n"
        "print(result.output)\n"
        "heavy = ('numpy', 'scipy', 'matplotlib', 'pydantic', 'vnet.model', 'vnet.lab')\n"
        "print('HEAVY', sorted(m for m in heavy if m in sys.modules))\n"
        "print('LOADED', sorted(m for m in sys.modules if m.startswith('vnet.cli.')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    for name in COMMANDS:
        assert f"  {name} " in out
    assert "HEAVY []" in out
    assert "LOADED []" in out


@pytest.mark.parametrize("name", sorted(COMMANDS))
@pytest.mark.parametrize("limit", [40, 45, 80, 200])
def test_the_help_lists_each_command_as_it_describes_itself(name: str, limit: int) -> None:
    """A summary is what the loaded command's help gives `vnet --help` at any width."""
    assert set(SUMMARIES) == set(COMMANDS)
    stand_in = click.Command(name, help=SUMMARIES[name])
    loaded = COMMANDS[name]()
    assert stand_in.get_short_help_str(limit) == loaded.get_short_help_str(limit)
