"""How a vnet process logs: vnet's own records at INFO (DEBUG with -v), the libraries'
chatty loggers at WARNING unless asked for (-vv), to stderr or to a file the process owns
and rotates by size, so a process that runs for months at idle keeps a bounded log.

Why the libraries: ncclient logs every NETCONF RPC at INFO (the controller asks each
agent for its class counters every second: about 150 MB a day of "Requesting 'Get'"),
paramiko and asyncssh every SSH connection and channel; none of it tells an operator
more than vnet's own records do.
"""

from __future__ import annotations

import logging
import logging.handlers
from dataclasses import dataclass
from pathlib import Path

FORMAT = "%(asctime)s %(name)s %(levelname)s %(message)s"
# loggers of libraries that log each request or connection at INFO
CHATTY = ("ncclient", "paramiko", "asyncssh", "httpx", "httpcore", "uvicorn")


@dataclass(frozen=True)
class LogFile:
    """A log file the process owns: rotated when it would exceed `max_bytes`, with
    `backups` older files kept (NAME.1 the newest), so it never holds more than
    (backups + 1) * max_bytes."""

    path: Path
    max_bytes: int
    backups: int


def configure(verbosity: int = 0, file: LogFile | None = None) -> logging.Handler:
    """Set up the process's logging (replacing any earlier set-up) and return its handler.

    `verbosity`: 0 vnet at INFO, 1 vnet at DEBUG, 2 the libraries at DEBUG too.
    `file`: None logs to stderr (whoever started the process keeps it: a terminal, the
    journal); else the process owns the file and rotates it.
    """
    handler: logging.Handler
    if file is None:
        handler = logging.StreamHandler()
    else:
        file.path.parent.mkdir(parents=True, exist_ok=True)
        handler = logging.handlers.RotatingFileHandler(
            file.path, maxBytes=file.max_bytes, backupCount=file.backups, encoding="utf-8"
        )
    handler.setFormatter(logging.Formatter(FORMAT))
    root = logging.getLogger()
    for old in root.handlers[:]:
        root.removeHandler(old)
        old.close()
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if verbosity >= 1 else logging.INFO)
    for name in CHATTY:
        logging.getLogger(name).setLevel(logging.NOTSET if verbosity >= 2 else logging.WARNING)
    return handler
