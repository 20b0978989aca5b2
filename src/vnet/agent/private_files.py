"""Files only the agent may read (host keys, TLS keys, configurations with passwords),
private from their first byte: made under a umask that leaves nothing for group or
others, with mode 0600, as a new file (never an existing one whose mode could be
looser), then renamed into place."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

PRIVATE_MODE = 0o600


@contextlib.contextmanager
def private_umask() -> Iterator[None]:
    """Files and folders made inside are neither group- nor world-accessible."""
    old = os.umask(0o077)
    try:
        yield
    finally:
        os.umask(old)


def write_private(path: Path, data: bytes) -> None:
    """Replace `path` with `data`, readable by its owner only at every moment."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.unlink(missing_ok=True)  # a stale one may have any mode
    with private_umask():
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_MODE)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
