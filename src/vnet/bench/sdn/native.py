"""The native crates' binaries (perfbench, the hypervisor): one Cargo workspace at the
repository's root (Cargo.toml), built in release into its one target directory
(`make rust`), so what the two crates share is compiled once."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from vnet.bench.sdn import SdnBenchError
from vnet.tools import processes
from vnet.tools.errors import ToolError

REPO = Path(__file__).resolve().parents[4]
RELEASE = REPO / "target" / "release"


def native_binary(name: str, override: str, build: bool = True) -> Path:
    """The release binary of crate `name` ($`override` if set), built if missing and `build`."""
    given = os.environ.get(override)
    if given:
        if not Path(given).is_file():
            raise SdnBenchError(f"{override}={given} is not a file")
        return Path(given)
    path = RELEASE / name
    if path.is_file():
        return path
    cargo = shutil.which("cargo")
    if not build or cargo is None:
        raise SdnBenchError(f"{path} is missing: run 'make rust' (needs cargo)")
    manifest = str(REPO / "Cargo.toml")
    try:
        processes.check_output(
            [cargo, "build", "--release", "--package", name, "--manifest-path", manifest],
            timeout=900,
        )
    except ToolError as err:
        raise SdnBenchError(str(err)) from err
    return path
