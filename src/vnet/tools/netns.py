"""Entering a named network namespace on the calling thread, to start a tool or read /proc.

setns() changes only the calling thread (fork inherits it), and `entered()`
always switches back. The substrate creates and removes namespaces; tools only
step into them, so this layer needs nothing from it.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
from collections.abc import Iterator

NETNS_RUN_DIR = "/run/netns"
CLONE_NEWNET = 0x40000000

_libc = ctypes.CDLL(None, use_errno=True)


def _setns(fd: int, what: str) -> None:
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


@contextlib.contextmanager
def entered(name: str | None) -> Iterator[None]:
    """Run the body with the calling thread inside namespace `name` (None: stay)."""
    if name is None:
        yield
        return
    home = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    try:
        fd = os.open(os.path.join(NETNS_RUN_DIR, name), os.O_RDONLY)
        try:
            _setns(fd, f"enter namespace {name}")
        finally:
            os.close(fd)
        try:
            yield
        finally:
            _setns(home, "return to the original namespace")
    finally:
        os.close(home)


def list_names(prefix: str = "") -> list[str]:
    """Named namespaces whose name starts with `prefix`."""
    try:
        return sorted(n for n in os.listdir(NETNS_RUN_DIR) if n.startswith(prefix))
    except FileNotFoundError:
        return []
