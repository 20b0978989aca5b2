"""Failed-login throttling (vnet.agent.logins) and private files (vnet.agent.private_files)."""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

import pytest

from vnet.agent import private_files
from vnet.agent.logins import LoginThrottle
from vnet.agent.netconf.server import host_key
from vnet.agent.restconf.tls import ensure_certificate
from vnet.model.agent_config import AgentConfig, User
from vnet.tools.durable import staging_path


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_backoff_per_source_and_user(caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    t = LoginThrottle("TEST", free=3, first_delay=1.0, max_delay=8.0, clock=clock)
    caplog.set_level(logging.WARNING, "vnet.agent.logins")
    for _ in range(3):
        assert not t.check("10.0.0.9", "alice", lambda: False)
    assert t.wait_left("10.0.0.9", "alice") == 0  # three typos are free
    assert not t.check("10.0.0.9", "alice", lambda: False)
    assert t.wait_left("10.0.0.9", "alice") == 1.0
    checked = []
    assert not t.check("10.0.0.9", "alice", lambda: checked.append(1) or True)
    assert checked == []  # refused without looking at the (right) password
    assert t.check("10.0.0.9", "bob", lambda: True)  # another user, same source: at once
    assert t.check("10.0.0.7", "alice", lambda: True)  # the same user elsewhere: at once
    delays = []
    for _ in range(5):
        clock.now += 100
        t.check("10.0.0.9", "alice", lambda: False)
        delays.append(t.wait_left("10.0.0.9", "alice"))
    assert delays == [2.0, 4.0, 8.0, 8.0, 8.0]  # doubling, capped
    clock.now += 8
    assert t.check("10.0.0.9", "alice", lambda: True)  # after the wait: checked, succeeds
    assert t.wait_left("10.0.0.9", "alice") == 0  # and the record is forgotten
    assert "failed login for user 'alice' from 10.0.0.9" in caplog.text
    assert "refused" in caplog.text


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_private_files_are_private_from_the_first_byte(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[int] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:  # the file's mode while its bytes are being written
        st = os.fstat(fd)
        if stat.S_ISREG(st.st_mode):  # not the directory's fsync after the rename
            seen.append(stat.S_IMODE(st.st_mode))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    old = os.umask(0o000)  # the loosest umask a caller could leave behind
    try:
        target = tmp_path / "secret"
        stale = staging_path(tmp_path / "secret")
        stale.write_text("stale")
        stale.chmod(0o666)  # a leftover temporary file with a loose mode is not reused
        private_files.write_private(target, b"key material")
        key = host_key(tmp_path)
        config = AgentConfig(host="h1", state_dir=tmp_path, users=[User(name="a", password="p")])
        _cert, tls_key = ensure_certificate(config)
    finally:
        os.umask(old)
    assert seen and set(seen) == {0o600}
    assert _mode(target) == 0o600 and target.read_bytes() == b"key material"
    assert not stale.exists()
    assert _mode(tmp_path / "ssh_host_ed25519_key") == 0o600 and key is not None
    assert _mode(tls_key) == 0o600
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []
