"""A scan of vnet's namespaces while another process deletes some of them."""

from __future__ import annotations

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
