"""Files only the agent may read (host keys, TLS keys, configurations with passwords),
private from their first byte: mode 0600 whatever the umask, as a new file (never an
existing one whose mode could be looser), then renamed into place (tools.durable)."""

from __future__ import annotations

from pathlib import Path

from vnet.tools.durable import replace_durably

PRIVATE_MODE = 0o600


def write_private(path: Path, data: bytes) -> None:
    """Replace `path` with `data`, readable by its owner only at every moment."""
    replace_durably(path, data, PRIVATE_MODE)
