"""Where a node's cgroup lives (v1, v2, both) and how its limits are planned (issue 14, part 2).

Pure: the layouts come from mountinfo text, not from this machine.
"""

from __future__ import annotations

from pathlib import Path

from vnet.model.resources import Resources
from vnet.substrate.cgroup import (
    Cgroup,
    CreateCgroup,
    DeleteCgroup,
    ModifyCgroup,
    _parse_quota,
    node_cgroup,
    plan_cgroups,
)
from vnet.tools.cgroupfs import (
    Hierarchy,
    group_name,
    joiner,
    layout_from,
    node_groups,
    split_group_name,
)

V1 = """\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
"""
V2 = "25 22 0:23 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw\n"
# systemd's "hybrid": cpu and cpuacct co-mounted on v1, memory left to v2
HYBRID = """\
32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct
41 31 0:38 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw,nsdelegate
"""


def _offers(*controllers: str):
    def read_words(path: Path) -> set[str]:
        # what the root enables for its children, not merely what the kernel has
        assert path.name == "cgroup.subtree_control", path
        return set(controllers)

    return read_words


def test_this_machine_kind_uses_v1_for_everything() -> None:
    hs = layout_from(V1, _offers("hugetlb"))
    assert hs == {
        "cpu": Hierarchy(Path("/sys/fs/cgroup/cpu"), 1),
        "cpuacct": Hierarchy(Path("/sys/fs/cgroup/cpuacct"), 1),
        "cpuset": Hierarchy(Path("/sys/fs/cgroup/cpuset"), 1),
        "memory": Hierarchy(Path("/sys/fs/cgroup/memory"), 1),
    }
    assert hs["cpu"].group("vnet-l-r1@l") == Path("/sys/fs/cgroup/cpu/vnet/vnet-l-r1@l")


def test_a_v2_host_uses_one_directory_and_cpu_stat_for_time() -> None:
    hs = layout_from(V2, _offers("cpuset", "cpu", "io", "memory", "pids"))
    v2 = Hierarchy(Path("/sys/fs/cgroup"), 2)
    assert hs == {"cpu": v2, "cpuacct": v2, "cpuset": v2, "memory": v2}
    assert v2.group("x@s") == Path("/sys/fs/cgroup/vnet/x@s")


def test_v2_offers_only_what_its_root_lists() -> None:
    hs = layout_from(V2, _offers("memory"))
    assert set(hs) == {"memory", "cpuacct"}  # CPU time is counted even without the controller
    assert layout_from(V2, _offers()) == {"cpuacct": Hierarchy(Path("/sys/fs/cgroup"), 2)}


def test_hybrid_takes_each_controller_where_it_is() -> None:
    hs = layout_from(HYBRID, _offers("memory", "pids"))
    comounted = Hierarchy(Path("/sys/fs/cgroup/cpu,cpuacct"), 1)
    assert hs["cpu"] == hs["cpuacct"] == comounted
    assert hs["memory"] == Hierarchy(Path("/sys/fs/cgroup/unified"), 2)
    assert "cpuset" not in hs


def test_group_names_are_the_mark() -> None:
    assert group_name("vnet-lab-r1", "lab") == "vnet-lab-r1@lab"
    assert split_group_name("vnet-lab-r1@agent-lab-h1") == ("vnet-lab-r1", "agent-lab-h1")
    for foreign in ("user.slice", "@lab", "ns@", "cgroup.procs"):
        assert split_group_name(foreign) is None


def test_limits_are_rounded_as_the_kernel_stores_them() -> None:
    g = node_cgroup("ns", "s", Resources(cpu=0.33, memory=5_000_001))
    assert g.cpu == 0.33 and g.memory is not None and g.memory % 4096 == 0
    assert g.memory <= 5_000_001 < g.memory + 4096
    assert g.controllers == ("cpu", "cpuacct", "memory")
    assert node_cgroup("ns", "s", Resources(cpuset="0")).controllers[-1] == "cpuset"


def test_quota_text_reads_back_as_cores() -> None:
    assert _parse_quota("50000 100000") == 0.5
    assert _parse_quota("150000 100000") == 1.5
    assert _parse_quota("max 100000") is None  # v2
    assert _parse_quota("-1 100000") is None  # v1
    assert _parse_quota(None) is None


def test_plan_creates_changes_and_deletes_only_what_differs() -> None:
    a = Cgroup("vnet-l-a", "l", cpu=0.5)
    b = Cgroup("vnet-l-b", "l", memory=2**28)
    b2 = Cgroup("vnet-l-b", "l", memory=2**29)
    c = Cgroup("vnet-l-c", "l", cpuset="0")
    gone, made = plan_cgroups({"vnet-l-a": a, "vnet-l-b": b2}, {"vnet-l-b": b, "vnet-l-c": c})
    assert gone == [DeleteCgroup(c)]
    assert made == [CreateCgroup(a), ModifyCgroup(b, b2)]
    assert plan_cgroups({"vnet-l-a": a}, {"vnet-l-a": a}) == ([], [])
    assert made[1].inverse() == ModifyCgroup(b2, b) and gone[0].inverse() == CreateCgroup(c)


def test_a_group_of_another_owner_is_replaced_not_modified() -> None:
    mine, theirs = Cgroup("vnet-l-a", "l", cpu=1), Cgroup("vnet-l-a", "other", cpu=1)
    assert plan_cgroups({"vnet-l-a": mine}, {"vnet-l-a": theirs}) == (
        [DeleteCgroup(theirs)],
        [CreateCgroup(mine)],
    )


def test_dry_run_says_what_each_operation_does() -> None:
    g = node_cgroup("vnet-l-e1", "l", Resources(cpu=0.5, cpuset="0", memory="512MiB"))
    assert CreateCgroup(g).describe() == (
        "cgroup create vnet/vnet-l-e1@l  # cpu 0.5, cpuset 0, memory 512MiB"
    )
    assert DeleteCgroup(g).describe() == "cgroup delete vnet/vnet-l-e1@l"


def test_a_child_started_in_a_node_joins_every_group_of_that_node(tmp_path: Path) -> None:
    hs = {
        "cpu": Hierarchy(tmp_path / "cpu", 1),
        "memory": Hierarchy(tmp_path / "memory", 1),
        "cpuset": Hierarchy(tmp_path / "cpuset", 1),  # no group of the node there
    }
    for h in hs.values():
        h.parent.mkdir(parents=True)
    for controller in ("cpu", "memory"):
        (hs[controller].group("vnet-l-e1@l")).mkdir()
        (hs[controller].group("vnet-l-e1@l") / "cgroup.procs").write_text("")
    (hs["cpu"].group("vnet-l-e10@l")).mkdir()  # another node whose name starts alike
    (hs["cpu"].parent / "cgroup.procs").write_text("")  # a file, not a group
    assert node_groups("vnet-l-e1", hs) == [
        hs["cpu"].group("vnet-l-e1@l"),
        hs["memory"].group("vnet-l-e1@l"),
    ]
    join = joiner("vnet-l-e1", hs)
    assert join is not None
    join()  # what the child runs between fork and exec: "0" is itself
    assert (hs["memory"].group("vnet-l-e1@l") / "cgroup.procs").read_text() == "0"
    assert joiner("vnet-l-e2", hs) is None and joiner(None, hs) is None
