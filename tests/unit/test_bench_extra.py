"""numpy, scipy and matplotlib are the `bench` extra: an agent-only install never imports them."""

from __future__ import annotations

import subprocess
import sys

# The entry modules of `vnet agent`, `vnet vr` and `vnet lab`, and what they load for --help.
AGENT_ONLY_MODULES = (
    "vnet.cli",
    "vnet.cli.agent_cmds",
    "vnet.cli.vr_cmds",
    "vnet.cli.lab_cmds",
    "vnet.agent.main",
    "vnet.lab.lab",
    "vnet.lab.agents",
)
BENCH_ONLY = ("numpy", "scipy", "matplotlib")

PROGRAM = f"""
import importlib, sys
from click.testing import CliRunner
from vnet.cli import main
for name in {AGENT_ONLY_MODULES!r}:
    importlib.import_module(name)
for group in ("agent", "vr", "lab"):
    done = CliRunner().invoke(main, [group, "--help"])
    assert done.exit_code == 0, done.output
print(sorted(m for m in {BENCH_ONLY!r} if m in sys.modules))
"""


def test_agent_vr_and_lab_commands_do_not_import_the_bench_extra() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]", f"imported by an agent-only command: {done.stdout}"
