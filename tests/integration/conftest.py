"""Fixtures for tests on real namespaces. Every lab a test makes is registered
and torn down by name; nothing else on the machine is touched."""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from vnet.lab import lab as labmod
from vnet.substrate import nsfs

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
VNET = str(Path(sys.executable).parent / "vnet")
# `vnet` processes the tests start take their fault hooks from here (see faulty_vnet.py)
HOOKS = str(Path(__file__).resolve().parent / "hooks")
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (HOOKS, os.environ.get("PYTHONPATH")) if p)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.geteuid() == 0:
        return
    skip = pytest.mark.skip(reason="needs root: creates network namespaces")
    for item in items:
        if "integration" in str(item.fspath):
            item.add_marker(skip)


def require_tools(*tools: str) -> None:
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        pytest.skip(f"not installed: {', '.join(missing)} (scripts/bootstrap.sh installs them)")


def unique_lab() -> str:
    return "t" + secrets.token_hex(3)


def lab_namespaces(name: str) -> list[str]:
    return nsfs.list_names(f"vnet-{name}-")


class Labs:
    """Makes labs from example files under unique names and removes exactly those."""

    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.names: list[str] = []

    def file(self, example: str, edit: Callable[[str], str] = lambda s: s) -> tuple[str, Path]:
        text = (EXAMPLES / example).read_text()
        original = next(line for line in text.splitlines() if line.startswith("name: "))
        name = unique_lab()
        path = self.tmp / f"{name}.yaml"
        path.write_text(edit(text.replace(original, f"name: {name}")))
        self.names.append(name)
        return name, path

    def rewrite(self, path: Path, edit: Callable[[str], str]) -> None:
        path.write_text(edit(path.read_text()))

    def cleanup(self) -> None:
        for name in self.names:
            labmod.down(name)
            leaked = lab_namespaces(name)
            assert not leaked, f"lab {name} left namespaces behind: {leaked}"


@pytest.fixture
def labs(tmp_path: Path) -> Iterator[Labs]:
    made = Labs(tmp_path)
    yield made
    made.cleanup()


@pytest.fixture(scope="module")
def module_labs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Labs]:
    made = Labs(tmp_path_factory.mktemp("labs"))
    yield made
    made.cleanup()


def vnet(
    *args: str, env: dict[str, str] | None = None, timeout: float = 120, check: bool = True
) -> subprocess.CompletedProcess[str]:
    """Run the real `vnet` command line, as a user would."""
    done = subprocess.run(
        [VNET, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )
    if check and done.returncode != 0:
        raise AssertionError(
            f"vnet {' '.join(args)} exited {done.returncode}\n"
            f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
        )
    return done
