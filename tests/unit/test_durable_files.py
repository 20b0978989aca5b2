"""tools.durable: a refused write leaves the old file and no temporary one; new files are
private from the first byte."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from vnet.tools import frr
from vnet.tools.durable import remove_with_staging, replace_durably, staging_path, write_durably
from vnet.tools.processes import ProcessRecord
from vnet.tools.tls import ensure_self_signed


def test_replace_keeps_the_old_file_when_the_write_fails(tmp_path: Path) -> None:
    target = tmp_path / "record.json"
    replace_durably(target, b"old")
    (tmp_path / "record.json.tmp").mkdir()  # the temporary write now fails (EISDIR)
    with pytest.raises(OSError):
        replace_durably(target, b"new")
    assert target.read_bytes() == b"old"
    (tmp_path / "record.json.tmp").rmdir()
    replace_durably(target, b"new")
    assert target.read_bytes() == b"new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["record.json"]


def test_files_are_private_from_the_first_byte(tmp_path: Path) -> None:
    write_durably(tmp_path / "secret", b"x" * 10000)
    assert stat.S_IMODE((tmp_path / "secret").stat().st_mode) == 0o600


KILLED_BEFORE_RENAME = """
import os, pathlib, signal, sys
from vnet.tools.durable import replace_durably
pathlib.Path.replace = lambda self, target: os.kill(os.getpid(), signal.SIGKILL)
replace_durably(pathlib.Path(sys.argv[1]), b"new")
"""


def test_a_kill_between_staging_and_rename_leaves_a_staging_file_its_owner_removes(
    tmp_path: Path,
) -> None:
    target = tmp_path / "record.json"
    replace_durably(target, b"old")
    done = subprocess.run([sys.executable, "-c", KILLED_BEFORE_RENAME, str(target)], check=False)
    assert done.returncode == -signal.SIGKILL
    assert target.read_bytes() == b"old"  # a reader still sees the whole old record
    assert staging_path(target).read_bytes() == b"new"
    remove_with_staging(target)
    assert list(tmp_path.iterdir()) == []


def test_a_stale_staging_file_is_never_written_into(tmp_path: Path) -> None:
    target = tmp_path / "secret"
    stale = staging_path(target)
    stale.write_bytes(b"")
    stale.chmod(0o666)  # left by someone else, loose, and still open there
    with stale.open("rb") as elsewhere:
        replace_durably(target, b"key material")
        assert elsewhere.read() == b""  # the new bytes went into a new file
    assert target.read_bytes() == b"key material"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert not stale.exists()


def _certificate(directory: Path) -> list[Path]:
    cert, key = directory / "cert.pem", directory / "key.pem"
    ensure_self_signed(cert, key, "127.0.0.1", "h1", "vnet test")
    return [cert, key]


def _frr_records(directory: Path) -> list[Path]:
    frr.save_records(directory, [ProcessRecord(pid=1, start_time=2, what="ospfd")])
    return [directory / frr.RECORDS]


@pytest.mark.parametrize("write", [_certificate, _frr_records], ids=["tls", "frr-records"])
def test_files_other_processes_read_are_replaced_durably(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, write: Callable[[Path], list[Path]]
) -> None:
    """Through replace_durably: each file was fsynced under the inode it has now (staged,
    then renamed into place), and nothing is left beside it."""
    synced: set[int] = set()
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        st = os.fstat(fd)
        if stat.S_ISREG(st.st_mode):
            synced.add(st.st_ino)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    written = write(tmp_path)
    assert all(p.stat().st_ino in synced for p in written), written
    assert sorted(tmp_path.iterdir()) == sorted(written)
