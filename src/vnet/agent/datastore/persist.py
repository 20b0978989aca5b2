"""The running configuration on disk: replaced atomically, fsynced file and directory."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


class RunningFile:
    def __init__(self, state_dir: Path) -> None:
        self.path = state_dir / "running.json"

    def exists(self) -> bool:
        return self.path.exists()

    def load(self) -> dict[str, Any]:
        tree: dict[str, Any] = json.loads(self.path.read_text())
        return tree

    def save(self, tree: dict[str, Any]) -> None:
        tmp = self.path.with_suffix(".tmp")
        with tmp.open("w") as f:
            json.dump(tree, f, indent=1)
            f.flush()
            os.fsync(f.fileno())
        tmp.replace(self.path)
        fd = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
