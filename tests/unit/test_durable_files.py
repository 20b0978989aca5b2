"""tools.durable: a refused write leaves the old file and no temporary one; new files are
private from the first byte."""

from __future__ import annotations

import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from vnet.tools.durable import remove_with_staging, replace_durably, staging_path, write_durably


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
