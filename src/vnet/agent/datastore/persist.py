"""The configuration on disk, in the state directory: a snapshot and a journal.

`running.json` is a snapshot: {"format": FORMAT, "id": a random name, "seq": n,
"running": tree, "rollback": tree or null}, the configuration after the n-th
commit and the rollback point of a confirmed commit (RFC 6241 Sec. 8.4) pending
then. `running.journal` holds one record per later commit (journal.py): the
snapshot it follows ("base": the snapshot's id), its number, what it changed,
and the rollback point when that changed ("before": the configuration before
the record; null: none; a tree). A commit appends its
record; the commit is durable when the record is on disk, and is acknowledged
only then (the datastore waits for `sync`). Concurrent commits share one fsync
(GroupSync): each waits for an fsync that started after its record was written.

Compaction: when the journal has grown larger than the snapshot (and 64 KiB),
the next commit writes a new snapshot instead of a record (staged in
`running.next.json`, fsynced, renamed over `running.json`: the commit point),
then empties the journal. Records of an earlier snapshot are skipped on load,
so a crash between the two steps loses nothing and replays nothing twice. The cost of a
commit follows its change; the whole tree is written once per doubling of the
journal.

Load: the snapshot, then each record in order; a record cut short by a crash
(or failing its checksum) ends the journal and is cut off, since it was never
acknowledged. A running.json of an older agent (format 2: {"format", "running",
"rollback"}; or the bare tree) is read and written anew as a format-3
snapshot, so the journal always starts from a known number.
"""

from __future__ import annotations

import asyncio
import errno
import json
import os
import secrets
from pathlib import Path
from typing import Any

from vnet.agent.datastore import journal
from vnet.model.yang.errors import ErrorTag, RpcError
from vnet.tools.durable import remove_quietly, sync_directory, write_durably

RUNNING_FILE = "running.json"
STAGED_FILE = "running.next.json"
JOURNAL_FILE = "running.journal"
FORMAT = "vnet-agent-running/3"
FORMAT_2 = "vnet-agent-running/2"
COMPACT_MIN = 64 * 1024  # bytes of journal below which it is never compacted
_LEGACY_TMP = "running.tmp"  # what an older agent's interrupted save left behind

Tree = dict[str, Any]


def disk_error(what: str, err: OSError, undone: str) -> RpcError:
    """The answer when the state directory refused a write (full, read-only, I/O error)."""
    reason = err.strerror or str(err)
    return RpcError(ErrorTag.OPERATION_FAILED, f"{what} failed ({reason}); {undone}")


class RunningFile:
    """The snapshot and journal of one state directory, and what was last written to them."""

    def __init__(self, state_dir: Path) -> None:
        self.dir = state_dir
        self.path = state_dir / RUNNING_FILE
        self.staged = state_dir / STAGED_FILE
        self.journal = state_dir / JOURNAL_FILE
        self._tree: Tree = {}  # the configuration as the files hold it (after the last write)
        self._rollback: Tree | None = None
        self._seq = 0
        self._id: str | None = None  # the snapshot's: the records that follow it name it
        self._snapshot_bytes = 0
        self._journal_bytes = 0  # the journal's size: where the next record goes
        self._must_compact = False  # a failed append may have left a torn line
        self._entry_unsynced = False  # the journal was created and its entry not fsynced
        self.appended = 0  # bytes ever written (a position `sync` makes durable)
        self.synced = 0
        self._loaded = False

    def exists(self) -> bool:
        return self.path.exists() or self.journal.exists()

    # -- loading -------------------------------------------------------------------------
    def load(self) -> Tree:
        self._load()
        return self._tree

    def load_rollback(self) -> Tree | None:
        """The rollback point of a confirmed commit that was pending when the agent stopped."""
        if not self.exists():
            return None
        self._load()
        return self._rollback

    def _load(self) -> None:
        if self._loaded:
            return
        data = self._read_snapshot()
        tree, rollback, seq = data["running"], data["rollback"], data.get("seq", 0)
        base = data.get("id")
        raw = self.journal.read_bytes() if self.journal.exists() else b""
        records, good = journal.decode(raw)
        for record in records:
            if record.get("base") != base:
                continue  # an earlier snapshot's (a crash in the middle of a compaction)
            if record["seq"] != seq + 1:
                break
            before, tree, seq = tree, journal.replay(tree, record), record["seq"]
            rollback = _rollback_after(record, before, rollback)
        self._tree, self._rollback, self._seq, self._id = tree, rollback, seq, base
        self._journal_bytes = len(raw)
        self._loaded = True
        if data.get("format") != FORMAT:
            self.save(tree, rollback)  # an older agent's file: a snapshot the journal follows
        elif good < len(raw):
            self._cut_journal(good)  # a record a crash cut short: never acknowledged

    def _read_snapshot(self) -> dict[str, Any]:
        if not self.path.exists():
            return {"format": FORMAT, "running": {}, "rollback": None, "seq": 0}
        text = self.path.read_text()
        self._snapshot_bytes = len(text)
        data: dict[str, Any] = json.loads(text)
        if data.get("format") in (FORMAT, FORMAT_2):
            return data
        return {"running": data, "rollback": None}  # an agent before format 2: the bare tree

    def _cut_journal(self, size: int) -> None:
        fd = os.open(self.journal, os.O_WRONLY)
        try:
            os.ftruncate(fd, size)
            os.fsync(fd)
        finally:
            os.close(fd)
        self._journal_bytes = size

    # -- writing -------------------------------------------------------------------------
    def save(self, tree: Tree, rollback: Tree | None = None) -> None:
        """A new snapshot in place of snapshot and journal, durable on return; OSError:
        no change (the previous snapshot and journal stand)."""
        seq, snapshot_id = self._seq + 1, secrets.token_hex(8)
        snapshot = {"format": FORMAT, "id": snapshot_id, "seq": seq}
        text = json.dumps({**snapshot, "running": tree, "rollback": rollback}, indent=1).encode()
        write_durably(self.staged, text, with_entry=False)
        try:
            self.staged.replace(self.path)  # the commit point
        except OSError:
            remove_quietly(self.staged)
            raise
        sync_directory(self.dir)
        self._tree, self._rollback, self._seq, self._id = tree, rollback, seq, snapshot_id
        self._snapshot_bytes, self._loaded = len(text), True
        self._empty_journal()
        self.synced = self.appended

    def _empty_journal(self) -> None:
        """Records up to the snapshot are skipped on load anyway: emptying is tidiness,
        and a failure here only leaves them to be skipped (compacted again next time)."""
        if not self.journal.exists():
            self._journal_bytes, self._must_compact = 0, False
            return
        try:
            self._cut_journal(0)
            self._must_compact = False
        except OSError:
            self._must_compact = True

    def append(self, tree: Tree, rollback: Tree | None) -> int:
        """Write the commit that makes `tree` running (with `rollback`, the rollback point
        of a pending confirmed commit) and return the position `sync` must reach for it
        to be durable. OSError: nothing of it is on disk."""
        self._load()
        if self._must_compact or self._journal_bytes > max(COMPACT_MIN, self._snapshot_bytes):
            self.save(tree, rollback)
            return self.appended
        record = {"base": self._id, "seq": self._seq + 1, **journal.change(self._tree, tree)}
        if rollback is not self._rollback:
            record["rollback"] = journal.BEFORE if rollback is self._tree else rollback
        line = journal.encode(record)
        self._write(line)
        self._tree, self._rollback, self._seq = tree, rollback, record["seq"]
        self.appended += len(line)
        return self.appended

    def _write(self, line: bytes) -> None:
        free = os.statvfs(self.dir)
        if free.f_bavail * free.f_frsize < len(line):
            # a record may fit in the journal's last block on a full disk; refused all the
            # same, as a snapshot would be: the next compaction needs room for one
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self.journal))
        created = not self.journal.exists()
        fd = os.open(self.journal, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            view = memoryview(line)
            while view:
                view = view[os.write(fd, view) :]
        except OSError:
            try:
                os.ftruncate(fd, self._journal_bytes)  # a torn line hides every later one
            except OSError:
                self._must_compact = True
            raise
        finally:
            os.close(fd)
        self._entry_unsynced |= created
        self._journal_bytes += len(line)

    def sync(self) -> None:
        """Make every record written so far durable (blocking: run it in a thread)."""
        target = self.appended
        if self.synced >= target:
            return
        fd = os.open(self.journal, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        if self._entry_unsynced:
            sync_directory(self.dir)
            self._entry_unsynced = False
        self.synced = max(self.synced, target)

    def recover(self) -> bool:
        """At start: drop what an interrupted compaction (or an older agent's commit) left
        beside the snapshot. True if there was something."""
        leftovers = [p for p in (self.staged, self.dir / _LEGACY_TMP) if p.exists()]
        for path in leftovers:
            remove_quietly(path)
        return bool(leftovers)


def _rollback_after(record: dict[str, Any], before: Tree, rollback: Tree | None) -> Tree | None:
    if "rollback" not in record:
        return rollback
    point: Tree | None = record["rollback"]
    return before if point == journal.BEFORE else point


class GroupSync:
    """One fsync for every commit whose record was written before it started: a commit
    waits for the first fsync that begins after its write, so concurrent commits share it."""

    def __init__(self, file: RunningFile) -> None:
        self.file = file
        self._flight: asyncio.Future[None] | None = None

    async def wait(self, position: int) -> None:
        """Return when `position` is durable; OSError if the fsync failed."""
        while self.file.synced < position:
            if self._flight is None:
                self._flight = asyncio.ensure_future(self._sync())
            await asyncio.shield(self._flight)

    async def _sync(self) -> None:
        try:
            await asyncio.get_running_loop().run_in_executor(None, self.file.sync)
        finally:
            self._flight = None
