"""The built packages, installed by role into clean virtual environments, as an operator
installs them (docs/deploy.md): `make dist`, then `uv venv` and `uv pip install` of the
local wheel with one extra. Only the package index is reachable; uv's cache makes a second
install of the same versions quick."""

from __future__ import annotations

import fcntl
import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
UV = ROOT / ".cache" / "tools" / "bin" / "uv"
PYTHON = "/usr/bin/python3"  # Debian's: what a router has
ENV = {**os.environ, "UV_PYTHON_DOWNLOADS": "never"}
TIMEOUT = 600
LOCK = ROOT / ".cache" / "dist.lock"


def build(out: Path) -> Path:
    """`make dist` into `out`; the wheel's path (the sdist is beside it). One build at a time
    in this checkout: `make dist` first runs bootstrap, which parallel workers must not run
    at once over the same .venv and .cache."""
    LOCK.parent.mkdir(parents=True, exist_ok=True)
    with LOCK.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, even on a failure
        subprocess.run(
            ["make", "-s", "-C", str(ROOT), "dist", f"DIST={out}"],
            check=True,
            capture_output=True,
            env=ENV,
            timeout=TIMEOUT,
        )
    wheels = sorted(out.glob("vnet-*.whl"))
    assert len(wheels) == 1 and sorted(out.glob("vnet-*.tar.gz")), sorted(out.iterdir())
    return wheels[0]


def install(wheel: Path, extra: str, venv: Path) -> Path:
    """A new virtual environment at `venv` holding `vnet[extra]` from `wheel`; its bin/.

    As docs/deploy.md installs, but without `--compile-bytecode`: the tests' processes may
    write their byte-code as they import (make does not pass PYTHONDONTWRITEBYTECODE on),
    which costs less than compiling every module of the extra at each install."""
    subprocess.run([UV, "venv", "-q", "--python", PYTHON, str(venv)], check=True, env=ENV)
    subprocess.run(
        [UV, "pip", "install", "-q", "--python", str(venv / "bin" / "python"), f"{wheel}[{extra}]"],
        check=True,
        env=ENV,
        timeout=TIMEOUT,
    )
    return venv / "bin"


def installed(bin_dir: Path) -> set[str]:
    """The distributions installed in the environment of `bin_dir`, names normalised."""
    done = subprocess.run(
        [UV, "pip", "list", "--python", str(bin_dir / "python"), "--format", "freeze"],
        check=True,
        capture_output=True,
        text=True,
        env=ENV,
    )
    return {line.split("==")[0].lower().replace("_", "-") for line in done.stdout.split()}
