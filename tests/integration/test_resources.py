"""Per-node resources on the real kernel: the limits appear in each node's cgroup, the
node's processes run inside it, a change is applied in place, and teardown removes
the groups (issue 14, part 2). Checked in whichever hierarchy (v1 or v2) the host has.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from vnet.lab import lab as labmod
from vnet.substrate import Kernel, observe
from vnet.tools import cgroupfs, processes

from .conftest import Labs, unique_lab

TOPOLOGY = """\
name: {name}
hosts: [{{name: h1}}]
tenants: [{{name: t}}]
networks: [{{name: n1, tenant: t, vni: 10, ipv4: 10.0.0.0/24}}]
routers:
  - name: r1
    host: h1
    interfaces: [{{network: n1, ipv4: 10.0.0.1/24}}]
    resources: {router}
endhosts:
  - {{name: e1, host: h1, network: n1, ipv4: 10.0.0.2/24, resources: {endhost}}}
  - {{name: e2, host: h1, network: n1, ipv4: 10.0.0.3/24}}
"""


def _require_controllers() -> dict[str, cgroupfs.Hierarchy]:
    hs = cgroupfs.layout()
    missing = [c for c in ("cpu", "cpuset", "memory") if c not in hs]
    if missing:
        pytest.skip(f"this host offers no cgroup controller for {', '.join(missing)}")
    return hs


def _file(hs: dict[str, cgroupfs.Hierarchy], controller: str, group: str, v1: str, v2: str) -> str:
    h = hs[controller]
    return (h.group(group) / (v2 if h.version == 2 else v1)).read_text().strip()


def _ours(lab: str) -> list[Path]:
    return [d for h in cgroupfs.layout().values() for d in h.parent.glob(f"vnet-{lab}-*@{lab}")]


def _write(labs: Labs, name: str, router: str, endhost: str) -> Path:
    path = labs.tmp / f"{name}.yaml"
    path.write_text(TOPOLOGY.format(name=name, router=router, endhost=endhost))
    return path


def test_limits_are_in_the_kernel_and_gone_after_teardown(labs: Labs) -> None:
    hs = _require_controllers()
    name = unique_lab()
    labs.names.append(name)
    path = _write(
        labs, name, "{cpu: 0.5, memory: 256MiB}", "{cpu: 0.25, cpuset: '0', memory: 128MiB}"
    )
    labmod.up(path)
    e1, r1 = f"vnet-{name}-e1@{name}", f"vnet-{name}-r1@{name}"
    config = f"layout {hs}\n{path.read_text()}"

    quota = _file(hs, "cpu", e1, "cpu.cfs_quota_us", "cpu.max").split()[0]
    period = _file(hs, "cpu", e1, "cpu.cfs_period_us", "cpu.max").split()[-1]
    assert int(quota) / int(period) == 0.25, config
    assert _file(hs, "cpuset", e1, "cpuset.cpus", "cpuset.cpus") == "0", config
    assert _file(hs, "memory", e1, "memory.limit_in_bytes", "memory.max") == str(128 * 2**20)
    assert _file(hs, "memory", r1, "memory.limit_in_bytes", "memory.max") == str(256 * 2**20)
    assert not any(d.name.startswith(f"vnet-{name}-e2@") for d in _ours(name)), config

    # a process started in the node (as the lab and the benches start them) runs inside
    inside = processes.run(f"vnet-{name}-e1", ["cat", "/proc/self/cgroup"], timeout=10).stdout
    outside = processes.run(f"vnet-{name}-e2", ["cat", "/proc/self/cgroup"], timeout=10).stdout
    assert f"/vnet/{e1}" in inside, inside
    assert "/vnet/" not in outside, outside

    # observed back as realised: a second `up` has nothing to do
    with Kernel() as k:
        seen = observe(k, name, f"vnet-{name}-", namespaces_only=True).state.cgroups
    assert {g.name: (g.cpu, g.cpuset, g.memory) for g in seen.values()} == {
        e1: (0.25, "0", 128 * 2**20),
        r1: (0.5, None, 256 * 2**20),
    }
    assert labmod.up(path).ops == [], config

    # a change is made in place: the cpuset goes, the memory limit shrinks
    _write(labs, name, "{cpu: 0.5, memory: 256MiB}", "{memory: 64MiB}")
    labmod.up(path)
    assert _file(hs, "memory", e1, "memory.limit_in_bytes", "memory.max") == str(64 * 2**20)
    quota = _file(hs, "cpu", e1, "cpu.cfs_quota_us", "cpu.max").split()[0]
    assert quota in ("-1", "max"), config
    if hs["cpuset"].version == 1:
        assert not hs["cpuset"].group(e1).exists(), config

    labmod.down(name)
    assert _ours(name) == [], f"groups left behind: {_ours(name)}"


def test_a_limit_the_host_cannot_apply_changes_nothing(labs: Labs) -> None:
    _require_controllers()
    name = unique_lab()
    labs.names.append(name)
    path = _write(labs, name, "{cpu: 1, cpuset: '4000'}", "{cpu: 0.5}")
    with pytest.raises(Exception) as info:
        labmod.up(path)
    text = str(info.value)
    assert "cpuset '4000' names CPUs this host lacks" in text, text
    assert _ours(name) == [], f"a failed up left groups behind: {_ours(name)}"
    with Kernel() as k:
        assert observe(k, name, f"vnet-{name}-").state.namespaces == {}


def test_teardown_takes_orphans_of_its_own_and_leaves_others_and_their_processes(
    labs: Labs,
) -> None:
    hs = _require_controllers()
    name = unique_lab()
    labs.names.append(name)
    path = _write(labs, name, "{memory: 64MiB}", "{cpu: 0.5}")
    labmod.up(path)
    cpu = hs["cpu"]
    # a group left by a crash (its node is gone), and one with the same prefix but not ours
    orphan, foreign = cpu.group(f"vnet-{name}-ghost@{name}"), cpu.group(f"vnet-{name}-e1@other")
    orphan.mkdir()
    foreign.mkdir()
    # someone's process still in a node's group when the lab goes down
    sleeper = processes.spawn(f"vnet-{name}-e1", ["sleep", "60"])
    try:
        assert f"/vnet/vnet-{name}-e1@{name}" in Path(f"/proc/{sleeper.pid}/cgroup").read_text()
        labmod.down(name)
        assert _ours(name) == [] and not orphan.exists(), f"left: {_ours(name)}"
        assert foreign.is_dir(), "a group vnet does not own was removed"
        assert sleeper.poll() is None, "teardown must not kill processes"
        assert "/vnet/" not in Path(f"/proc/{sleeper.pid}/cgroup").read_text()
    finally:
        processes.stop_child(sleeper)
        foreign.rmdir()
