"""Files that are on disk when the call returns (fsynced, with their directory entry), and
that a failure (a full or read-only disk) leaves as they were, with no temporary file.

A process killed between staging and rename leaves its staging file
(`staging_path`); whoever owns the file removes it with `remove_with_staging`."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def write_durably(
    path: Path, data: bytes, mode: int = 0o600, *, with_entry: bool = True, new: bool = False
) -> None:
    """`path` holds `data` on disk, or OSError and no file at `path` (a partial one is
    removed). It has exactly `mode` (whatever the umask) before its first byte. `new`: the
    file must not exist yet (a file someone else made, and may hold open, is never
    written into). `with_entry=False` skips the directory's fsync: for a file that is
    renamed into place next (the rename's own directory fsync makes both durable) or
    that recovery may lose without harm."""
    flags = os.O_WRONLY | os.O_CREAT | (os.O_EXCL if new else os.O_TRUNC)
    fd = os.open(path, flags, mode)  # refused: nothing was made (or it was not ours)
    try:
        try:
            os.fchmod(fd, mode)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        if with_entry:
            sync_directory(path.parent)
    except OSError:
        remove_quietly(path)
        raise


def replace_durably(path: Path, data: bytes, mode: int = 0o600) -> None:
    """Replace `path` atomically: a reader sees the old or the new content, never a part;
    OSError leaves the old file and no temporary one. A staging file a killed writer
    left is replaced by a new one (it may have any mode, and be open elsewhere)."""
    tmp = staging_path(path)
    remove_quietly(tmp)
    write_durably(tmp, data, mode, with_entry=False, new=True)
    try:
        tmp.replace(path)
    except OSError:
        remove_quietly(tmp)
        raise
    sync_directory(path.parent)


def staging_path(path: Path) -> Path:
    """Where `replace_durably` stages the next content of `path`."""
    return path.with_name(path.name + ".tmp")


def remove_with_staging(path: Path) -> None:
    """Remove `path` and the staging file a killed `replace_durably` may have left beside it."""
    path.unlink(missing_ok=True)
    staging_path(path).unlink(missing_ok=True)


def sync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def remove_quietly(path: Path) -> None:
    """Unlink if there (unlinking needs no free space; a read-only disk had no file made)."""
    with contextlib.suppress(OSError):
        path.unlink()
