"""tools.durable: a refused write leaves the old file and no temporary one; new files are
private from the first byte."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from vnet.tools.durable import replace_durably, write_durably


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
