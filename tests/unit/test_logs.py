"""tools.logs: a log file the process owns stays within its configured size however much
is logged; the libraries' per-request records are off unless asked for."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from vnet.tools import logs


@pytest.fixture
def restored_logging() -> Iterator[None]:
    """The process's logging as it was before the test (pytest's own capture included)."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    levels = {name: logging.getLogger(name).level for name in logs.CHATTY}
    yield
    for handler in root.handlers[:]:
        root.removeHandler(handler)
        handler.close()
    for handler in handlers:
        root.addHandler(handler)
    root.setLevel(level)
    for name, old in levels.items():
        logging.getLogger(name).setLevel(old)


def test_rotation_keeps_the_log_within_its_configured_size(
    tmp_path: Path, restored_logging: None
) -> None:
    path = tmp_path / "controller.log"
    logs.configure(0, logs.LogFile(path, max_bytes=4096, backups=2))
    log = logging.getLogger("vnet.controller.test")
    for i in range(2000):  # about 200 kB of records
        log.info("record %d %s", i, "x" * 40)
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["controller.log", "controller.log.1", "controller.log.2"]
    sizes = {name: (tmp_path / name).stat().st_size for name in files}
    assert all(size <= 4096 for size in sizes.values()), sizes
    assert "record 1999" in path.read_text()  # the newest records are in the live file


def test_library_records_are_off_unless_asked_for(tmp_path: Path, restored_logging: None) -> None:
    path = tmp_path / "controller.log"
    logs.configure(0, logs.LogFile(path, max_bytes=1 << 20, backups=1))
    rpc = logging.getLogger("ncclient.operations.rpc")
    rpc.info("Requesting 'Get'")  # what ncclient logs for every RPC
    logging.getLogger("paramiko.transport").info("Connected (version 2.0)")
    rpc.warning("a reply that never came")
    logging.getLogger("vnet.controller").info("serving")
    logging.getLogger("vnet.controller").debug("a detail")
    lines = [line.split(" ", 3)[-1] for line in path.read_text().splitlines()]
    assert lines == ["WARNING a reply that never came", "INFO serving"], lines
    logs.configure(1, logs.LogFile(path, max_bytes=1 << 20, backups=1))
    assert logging.getLogger("vnet.controller").isEnabledFor(logging.DEBUG)
    assert not rpc.isEnabledFor(logging.INFO)
    logs.configure(2, logs.LogFile(path, max_bytes=1 << 20, backups=1))
    assert rpc.isEnabledFor(logging.DEBUG)
