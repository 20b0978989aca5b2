"""Which files a node's group writes, on v2 and on v1, against a directory standing in
for the cgroup mounts (issue 14, part 2). The real kernel is in
tests/integration/test_resources.py; this is the v2 path the machine cannot run."""

from __future__ import annotations

from pathlib import Path

import pytest

from vnet.model.resources import Resources
from vnet.substrate import cgroup
from vnet.substrate.cgroup import CreateCgroup, ModifyCgroup, node_cgroup
from vnet.tools import cgroupfs
from vnet.tools.cgroupfs import Hierarchy


@pytest.fixture
def v2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Hierarchy:
    h = Hierarchy(tmp_path, 2)
    layout = {c: h for c in ("cpu", "cpuacct", "cpuset", "memory")}
    monkeypatch.setattr(cgroupfs, "layout", lambda: layout)
    return h


@pytest.fixture
def v1(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Hierarchy]:
    layout = {c: Hierarchy(tmp_path / c, 1) for c in ("cpu", "cpuacct", "cpuset", "memory")}
    for h in layout.values():
        h.mount.mkdir()
    (tmp_path / "cpuset" / "cpuset.cpus").write_text("0-3\n")
    (tmp_path / "cpuset" / "cpuset.mems").write_text("0\n")
    monkeypatch.setattr(cgroupfs, "layout", lambda: layout)
    return layout


def test_v2_writes_cpu_max_memory_max_and_cpuset_in_one_directory(v2: Hierarchy) -> None:
    g = node_cgroup("vnet-l-e1", "l", Resources(cpu=0.5, cpuset="1", memory="256MiB"))
    CreateCgroup(g).run(None)  # type: ignore[arg-type]
    d = v2.group("vnet-l-e1@l")
    assert (v2.parent / "cgroup.subtree_control").read_text() == "+cpu +cpuset +memory"
    assert (d / "cpu.max").read_text() == "50000 100000"
    assert (d / "memory.max").read_text() == str(256 * 2**20)
    assert (d / "cpuset.cpus").read_text() == "1"
    assert cgroup.read("l", "vnet-l-") == {"vnet-l-e1": g}
    unlimited = node_cgroup("vnet-l-e1", "l", Resources())
    ModifyCgroup(g, unlimited).run(None)  # type: ignore[arg-type]
    assert (d / "cpu.max").read_text() == "max 100000"
    assert (d / "memory.max").read_text() == "max"
    assert (d / "cpuset.cpus").read_text() == ""
    assert cgroup.read("l", "vnet-l-") == {"vnet-l-e1": unlimited}
    assert cgroup.read("other", "vnet-l-") == {}


def test_v1_writes_the_cfs_quota_and_gives_a_cpuset_group_memory_nodes(
    v1: dict[str, Hierarchy],
) -> None:
    g = node_cgroup("vnet-l-e1", "l", Resources(cpu=1.5, cpuset="2-3", memory="64MiB"))
    CreateCgroup(g).run(None)  # type: ignore[arg-type]
    name = "vnet-l-e1@l"
    cpu, cpuset = v1["cpu"].group(name), v1["cpuset"].group(name)
    assert (cpu / "cpu.cfs_period_us").read_text() == "100000"
    assert (cpu / "cpu.cfs_quota_us").read_text() == "150000"
    assert (v1["memory"].group(name) / "memory.limit_in_bytes").read_text() == str(64 * 2**20)
    assert v1["cpuacct"].group(name).is_dir()  # the CPU time counter
    assert (v1["cpuset"].parent / "cpuset.cpus").read_text() == "0-3"  # vnet's parent: all
    assert (cpuset / "cpuset.mems").read_text() == "0"
    assert (cpuset / "cpuset.cpus").read_text() == "2-3"
    assert cgroup.read("l", "vnet-l-") == {"vnet-l-e1": g}


def test_a_group_without_cpuset_has_no_v1_cpuset_directory(v1: dict[str, Hierarchy]) -> None:
    CreateCgroup(node_cgroup("vnet-l-r1", "l", Resources(cpu=0.25))).run(None)  # type: ignore[arg-type]
    assert not v1["cpuset"].group("vnet-l-r1@l").exists()
    assert (v1["memory"].group("vnet-l-r1@l") / "memory.limit_in_bytes").read_text() == "-1"
