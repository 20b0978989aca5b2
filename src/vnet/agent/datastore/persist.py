"""The configuration on disk, in the state directory.

`running.json` is the committed running configuration. A commit first writes
the new tree to `running.next.json` and fsyncs it (the durable record of its
intent: a full or read-only disk is found here, before the kernel changes),
then applies it to the kernel, then renames it over `running.json` and
fsyncs the directory: that rename is the commit point. A start that finds a
`running.next.json` left behind by a crash knows its commit never reached
the commit point (and was never acknowledged): it drops the file, and the
agent converges the kernel back to `running.json`.

While a confirmed commit (RFC 6241 Sec. 8.4) is pending, the same file also
holds its rollback point: the configuration to go back to is on disk, in the
same write and fsync, before the confirmed commit changes the kernel (one
fsync per commit, so a confirmed commit costs what a plain one does). A
start that finds a rollback point restores it.

The file is {"format": FORMAT, "running": tree, "rollback": tree or null};
a file of an older agent is the bare running tree.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from vnet.model.yang.errors import ErrorTag, RpcError
from vnet.tools.durable import remove_quietly, sync_directory, write_durably

RUNNING_FILE = "running.json"
STAGED_FILE = "running.next.json"
FORMAT = "vnet-agent-running/2"
_LEGACY_TMP = "running.tmp"  # what an older agent's interrupted save left behind


def disk_error(what: str, err: OSError, undone: str) -> RpcError:
    """The answer when the state directory refused a write (full, read-only, I/O error)."""
    reason = err.strerror or str(err)
    return RpcError(ErrorTag.OPERATION_FAILED, f"{what} failed ({reason}); {undone}")


def _encoded(tree: dict[str, Any], rollback: dict[str, Any] | None) -> bytes:
    return json.dumps({"format": FORMAT, "running": tree, "rollback": rollback}, indent=1).encode()


class RunningFile:
    def __init__(self, state_dir: Path) -> None:
        self.dir = state_dir
        self.path = state_dir / RUNNING_FILE
        self.staged = state_dir / STAGED_FILE

    def exists(self) -> bool:
        return self.path.exists()

    def _read(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.path.read_text())
        if data.get("format") == FORMAT:
            return data
        return {"running": data, "rollback": None}  # an older agent's file: the bare tree

    def load(self) -> dict[str, Any]:
        tree: dict[str, Any] = self._read()["running"]
        return tree

    def load_rollback(self) -> dict[str, Any] | None:
        """The rollback point of a confirmed commit that was pending when the agent stopped."""
        if not self.path.exists():
            return None
        rollback: dict[str, Any] | None = self._read()["rollback"]
        return rollback

    def save(self, tree: dict[str, Any], rollback: dict[str, Any] | None = None) -> None:
        """Replace running.json atomically (stage, then rename), or OSError and no change."""
        self.stage(tree, rollback)
        self.promote()

    # -- the two halves of a commit ------------------------------------------------
    def stage(self, tree: dict[str, Any], rollback: dict[str, Any] | None = None) -> None:
        """Write the next configuration (and the rollback point of a pending confirmed
        commit) beside the current one, its data fsynced (a full disk shows here, before
        the kernel changes); OSError leaves no file behind.

        The directory is not fsynced for it: recovery never needs the staged file (it
        converges to running.json either way), and `promote`'s fsync after the rename
        makes the new entry durable. One fsync fewer per commit."""
        write_durably(self.staged, _encoded(tree, rollback), with_entry=False)

    def promote(self) -> None:
        """The commit point: the staged file becomes running.json. OSError: not committed,
        the staged file is removed, running.json is the previous configuration."""
        try:
            self.staged.replace(self.path)
        except OSError:
            remove_quietly(self.staged)
            raise
        sync_directory(self.dir)

    def drop_staged(self) -> None:
        remove_quietly(self.staged)

    def recover(self) -> bool:
        """At start: drop what an interrupted commit left (it never reached its commit
        point). True if there was something."""
        leftovers = [p for p in (self.staged, self.dir / _LEGACY_TMP) if p.exists()]
        for path in leftovers:
            remove_quietly(path)
        return bool(leftovers)
