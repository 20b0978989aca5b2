"""A scan of vnet's namespaces while another process deletes some of them."""

from __future__ import annotations

import os

import pytest

from vnet.substrate import Kernel, namespace, nsfs


def test_a_namespace_that_vanishes_during_a_scan_is_skipped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The race, made deterministic: the directory listing still names a namespace
    # that is gone by the time its mark is read (a lab going down in another shell).
    listed = nsfs.list_names

    def listing_with_a_vanished_name(prefix: str) -> list[str]:
        return [*listed(prefix), "vnet-gone-while-scanning"]

    monkeypatch.setattr(nsfs, "list_names", listing_with_a_vanished_name)
    with Kernel() as k:
        assert k.namespace_mark("vnet-gone-while-scanning") is None
        scan = namespace.read(k, "vnet-")
    assert "vnet-gone-while-scanning" not in [ns.name for ns in scan.found]
    assert "vnet-gone-while-scanning" not in scan.remnants


@pytest.mark.parametrize("own_proc", [True, False])
def test_a_new_namespace_gets_its_sysctls_and_nothing_is_left_mounted(
    own_proc: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A router's sysctls, written through a procfs instance of its own (mounted nowhere)
    or, where the kernel gives none, through /proc: read back through /proc inside the
    namespace, set; no procfs mount more than before, in this process's view."""
    if not own_proc:
        monkeypatch.setattr(nsfs, "_new_proc", lambda: os.open("/proc", os.O_RDONLY))
    wanted = namespace.ROLE_SYSCTLS["router"]
    before = _proc_mounts()
    seen: dict[str, str] = {}

    def prepare() -> None:
        nsfs.write_sysctls({**wanted, "net.nosuch.key": "1"}, optional=("net.nosuch.",))
        for key in wanted:
            with open("/proc/sys/" + key.replace(".", "/")) as f:
                seen[key] = f.read().strip()

    name = f"vnet-sysctl-test-{os.getpid()}"
    nsfs.create(name, prepare)
    try:
        assert seen == wanted
        assert _proc_mounts() == before
        with pytest.raises(FileNotFoundError):  # a key the kernel lacks, not optional
            nsfs.create(name + "x", lambda: nsfs.write_sysctls({"net.nosuch.key": "1"}))
        assert not nsfs.exists(name + "x")
    finally:
        nsfs.remove(name)


def _proc_mounts() -> int:
    with open("/proc/self/mountinfo") as f:
        return sum(1 for line in f if " - proc " in line)
