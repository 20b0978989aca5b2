"""Per-node resource limits: one marked cgroup per VR or end host that has `resources`.

The group is named "<namespace>@<scope>" in a "vnet" directory of each
hierarchy (tools/cgroupfs.py says where, v1 or v2 per controller): cpu (a
CFS quota per 100 ms period) and cpuacct (v1's CPU time counter), memory
(limit and usage) always, cpuset only when the node names cores (an
unconfined v1 cpuset group would have to copy the host's cores, and then
"all of them" could not be told from "not limited" when read back).

Processes started in the node's namespace join the group (tools/processes.py);
the kernel's forwarding of packets runs in softirq context and is charged to
no group, so these limits bound a node's daemons and applications, not its
forwarding rate.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from vnet.model.resources import Resources
from vnet.substrate.kernel import Kernel, KernelError
from vnet.substrate.op import Op
from vnet.tools import cgroupfs
from vnet.tools.cgroupfs import Hierarchy

CFS_PERIOD_US = 100_000
PAGE = os.sysconf("SC_PAGE_SIZE")
UNLIMITED_V1 = 2**62  # v1 reports "no limit" as a page-rounded LLONG_MAX


class CgroupError(KernelError):
    """A limit the host cannot apply, said in the words of the topology file."""


@dataclass(frozen=True)
class Cgroup:
    ns: str  # the node's namespace
    scope: str  # its owner (the lab, or an agent)
    cpu: float | None = None  # cores, a multiple of 1/CFS_PERIOD_US
    cpuset: str | None = None
    memory: int | None = None  # bytes, whole pages

    @property
    def name(self) -> str:
        return cgroupfs.group_name(self.ns, self.scope)

    @property
    def controllers(self) -> tuple[str, ...]:
        """The hierarchies the group lives in (those the host has; see `_hierarchies`)."""
        return ("cpu", "cpuacct", "memory") + (("cpuset",) if self.cpuset else ())

    def limits(self) -> str:
        return Resources(cpu=self.cpu, cpuset=self.cpuset, memory=self.memory).describe()


def node_cgroup(ns: str, scope: str, res: Resources) -> Cgroup:
    """The group for a node's resources, rounded as the kernel stores them (so a read matches)."""
    cpu = None if res.cpu is None else round(res.cpu * CFS_PERIOD_US) / CFS_PERIOD_US
    memory = None if res.memory is None else res.memory // PAGE * PAGE
    return Cgroup(ns, scope, cpu, res.cpuset, memory)


# -- operations --------------------------------------------------------------


@dataclass(frozen=True)
class CreateCgroup:
    group: Cgroup

    def run(self, k: Kernel) -> None:
        hs = _hierarchies(self.group)
        made: list[Path] = []
        try:
            for h in _unique(hs.values()):
                made += _make_dir(h, self.group.name, hs)
            _set_limits(self.group, hs)
        except BaseException:
            for d in reversed(made):  # a failure halfway leaves nothing behind
                _remove_dir(d, d.parent.parent)
            raise

    def inverse(self) -> DeleteCgroup:
        return DeleteCgroup(self.group)

    def describe(self) -> str:
        return f"cgroup create vnet/{self.group.name}  # {self.group.limits()}"


@dataclass(frozen=True)
class DeleteCgroup:
    """Remove the group; processes still in it go back to the hierarchy's root, unlimited."""

    group: Cgroup

    def run(self, k: Kernel) -> None:
        for h in _unique(cgroupfs.layout().values()):
            d = h.group(self.group.name)
            if d.is_dir():
                _remove_dir(d, h.mount)

    def inverse(self) -> CreateCgroup:
        return CreateCgroup(self.group)

    def describe(self) -> str:
        return f"cgroup delete vnet/{self.group.name}"


@dataclass(frozen=True)
class ModifyCgroup:
    old: Cgroup
    new: Cgroup

    def run(self, k: Kernel) -> None:
        hs = _hierarchies(self.new)
        for h in _unique(hs.values()):
            if not h.group(self.new.name).is_dir():
                _make_dir(h, self.new.name, hs)
                _adopt_members(h.group(self.new.name), self.new.name)
        _set_limits(self.new, hs)
        cpuset = cgroupfs.layout().get("cpuset")
        if self.old.cpuset and not self.new.cpuset and cpuset is not None and cpuset.version == 1:
            _remove_dir(cpuset.group(self.new.name), cpuset.mount)

    def inverse(self) -> ModifyCgroup:
        return ModifyCgroup(self.new, self.old)

    def describe(self) -> str:
        return f"cgroup set vnet/{self.new.name}  # {self.new.limits()}"


# -- the files ---------------------------------------------------------------


def _hierarchies(group: Cgroup) -> dict[str, Hierarchy]:
    """Controller -> hierarchy for the group; a limit the host cannot apply is an error."""
    layout = cgroupfs.layout()
    wanted = {"cpu": group.cpu, "cpuset": group.cpuset, "memory": group.memory}
    for controller, value in wanted.items():
        if value is not None and controller not in layout:
            raise CgroupError(
                f"cannot limit {controller} of {group.ns}: this host has no {controller} "
                "controller (no cgroup v1 hierarchy mounts it, the v2 root's "
                "cgroup.subtree_control does not enable it)"
            )
    # on v2 one directory serves every controller, and an empty cpuset.cpus means "all"
    v2_cpuset = ("cpuset",) if layout.get("cpuset", Hierarchy(Path(), 1)).version == 2 else ()
    return {c: layout[c] for c in group.controllers + v2_cpuset if c in layout}


def _unique(hs: Iterable[Hierarchy]) -> list[Hierarchy]:
    """Each mount once (on v2, or co-mounted v1 controllers, several share one)."""
    return sorted(set(hs), key=lambda h: str(h.mount))


def _write(path: Path, value: str) -> None:
    with open(path, "w") as f:
        f.write(value)


def _make_dir(h: Hierarchy, name: str, hs: dict[str, Hierarchy]) -> list[Path]:
    """Create the group in hierarchy `h` (and vnet's parent, kept for later groups).

    Returns the directories made, for undo. The parent is shared by every
    owner's groups and so never removed, like /run/netns.
    """
    h.parent.mkdir(exist_ok=True)
    if h.version == 2:  # idempotent; the root enables them (a global setting: not ours)
        wanted = [c for c in cgroupfs.V2_CONTROLLERS if hs.get(c) == h]
        _write(h.parent / "cgroup.subtree_control", " ".join(f"+{c}" for c in wanted))
    cpuset_v1 = h.version == 1 and hs.get("cpuset") == h
    if cpuset_v1:
        _inherit_cpuset(h.parent, h.mount)
    d = h.group(name)
    if d.is_dir():
        return []
    d.mkdir()
    if cpuset_v1:
        _inherit_cpuset(d, h.parent, cpus=False)
    return [d]


def _inherit_cpuset(d: Path, parent: Path, cpus: bool = True) -> None:
    """A v1 cpuset group takes no process before it has memory nodes (and cores)."""
    for key in ("cpuset.mems", "cpuset.cpus") if cpus else ("cpuset.mems",):
        if not _text(d / key):  # a new group's files are there and empty
            _write(d / key, _text(parent / key))


def _text(path: Path) -> str:
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        return ""


def _set_limits(group: Cgroup, hs: dict[str, Hierarchy]) -> None:
    if "cpu" in hs:
        _set_cpu(hs["cpu"].group(group.name), hs["cpu"].version, group.cpu)
    if "memory" in hs:
        d, v2 = hs["memory"].group(group.name), hs["memory"].version == 2
        limit = str(group.memory) if group.memory is not None else ("max" if v2 else "-1")
        _write_checked(d / ("memory.max" if v2 else "memory.limit_in_bytes"), limit, group)
    if "cpuset" in hs and (group.cpuset or hs["cpuset"].version == 2):
        _write_checked(hs["cpuset"].group(group.name) / "cpuset.cpus", group.cpuset or "", group)


def _set_cpu(d: Path, version: int, cpu: float | None) -> None:
    quota = None if cpu is None else round(cpu * CFS_PERIOD_US)
    if version == 2:
        _write(d / "cpu.max", f"{quota if quota else 'max'} {CFS_PERIOD_US}")
        return
    _write(d / "cpu.cfs_quota_us", "-1")  # a period below the old quota's would be refused
    _write(d / "cpu.cfs_period_us", str(CFS_PERIOD_US))
    _write(d / "cpu.cfs_quota_us", str(quota if quota else -1))


def _write_checked(path: Path, value: str, group: Cgroup) -> None:
    """Write one limit; the kernel's refusal said as what in the node's resources is wrong."""
    try:
        _write(path, value)
    except OSError as err:
        what = {"cpuset.cpus": f"cpuset {group.cpuset!r}"}.get(path.name, f"memory {value}")
        if path.name == "cpuset.cpus" and err.errno in (errno.EINVAL, errno.ERANGE):
            have = _effective_cpus(path.parent.parent)
            raise CgroupError(
                f"{group.ns}: {what} names CPUs this host lacks (it has {have})"
            ) from None
        if err.errno == errno.EBUSY and path.name.startswith("memory"):
            raise CgroupError(f"{group.ns}: {what} is below what its processes use now") from None
        raise CgroupError(f"{group.ns}: cannot set {what}: {err.strerror}") from err


def _effective_cpus(d: Path) -> str:
    for name in ("cpuset.cpus.effective", "cpuset.effective_cpus"):  # v2, v1
        with contextlib.suppress(OSError):
            return (d / name).read_text().strip()
    return "?"


def _members(d: Path) -> list[int]:
    try:
        return [int(p) for p in (d / "cgroup.procs").read_text().split()]
    except OSError:
        return []


def _move(pids: list[int], to: Path) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):  # it exited meanwhile
            _write(to / "cgroup.procs", str(pid))


def _adopt_members(d: Path, name: str) -> None:
    """A hierarchy added later (a cpuset): the node's processes join it too."""
    for other in cgroupfs.group_dirs(name):
        if other != d:
            _move(_members(other), d)
            return


def _remove_dir(d: Path, root: Path) -> None:
    _move(_members(d), root)
    with contextlib.suppress(FileNotFoundError):
        d.rmdir()


# -- reading back ------------------------------------------------------------


def read(scope: str, prefix: str) -> dict[str, Cgroup]:
    """vnet's groups of `scope` for namespaces named `prefix*`, with their limits."""
    layout = cgroupfs.layout()
    names: set[str] = set()
    for h in _unique(layout.values()):
        with contextlib.suppress(OSError):
            names.update(os.listdir(h.parent))
    out = {}
    for name in sorted(names):
        parsed = cgroupfs.split_group_name(name)
        if parsed is None or parsed[1] != scope or not parsed[0].startswith(prefix):
            continue
        out[parsed[0]] = Cgroup(parsed[0], scope, *_read_limits(layout, name))
    return out


def _read_limits(
    layout: dict[str, Hierarchy], name: str
) -> tuple[float | None, str | None, int | None]:
    def text(controller: str, v1_file: str, v2_file: str) -> str | None:
        h = layout.get(controller)
        if h is None:
            return None
        with contextlib.suppress(OSError):
            return (h.group(name) / (v2_file if h.version == 2 else v1_file)).read_text().strip()
        return None

    cpu = text("cpu", "cpu.cfs_quota_us", "cpu.max")
    if cpu is not None and " " not in cpu:  # v1: the period is a file of its own
        cpu = f"{cpu} {text('cpu', 'cpu.cfs_period_us', 'cpu.max')}"
    memory = text("memory", "memory.limit_in_bytes", "memory.max")
    return (
        _parse_quota(cpu),
        text("cpuset", "cpuset.cpus", "cpuset.cpus") or None,
        _parse_memory(memory),
    )


def _parse_memory(text: str | None) -> int | None:
    """Bytes, or None for no limit (v2 "max", v1 a page-rounded LLONG_MAX)."""
    if text is None or text == "max" or int(text) >= UNLIMITED_V1:
        return None
    return int(text)


def _parse_quota(text: str | None) -> float | None:
    """Cores from "quota period" (v1 -1 or v2 max: unlimited)."""
    if not text:
        return None
    quota, _, period = text.partition(" ")
    if quota in ("max", "-1") or not period:
        return None
    return int(quota) / int(period)


@dataclass(frozen=True)
class Usage:
    cpu_time_ns: int | None
    memory_bytes: int | None


def usage(group_name: str) -> Usage:
    """CPU time and memory the group's processes used (None where the host cannot tell)."""
    layout = cgroupfs.layout()
    cpu, mem = layout.get("cpuacct"), layout.get("memory")
    cpu_ns = mem_bytes = None
    with contextlib.suppress(OSError, ValueError):
        if cpu is not None and cpu.version == 1:
            cpu_ns = int((cpu.group(group_name) / "cpuacct.usage").read_text())
        elif cpu is not None:
            stat = (cpu.group(group_name) / "cpu.stat").read_text().split()
            cpu_ns = int(stat[stat.index("usage_usec") + 1]) * 1000
    with contextlib.suppress(OSError, ValueError):
        if mem is not None:
            file = "memory.current" if mem.version == 2 else "memory.usage_in_bytes"
            mem_bytes = int((mem.group(group_name) / file).read_text())
    return Usage(cpu_ns, mem_bytes)


def plan_cgroups(
    desired: dict[str, Cgroup], actual: dict[str, Cgroup]
) -> tuple[list[Op], list[Op]]:
    """(deletions, creations and changes) turning the actual groups into the desired ones."""
    gone = [
        g
        for ns, g in sorted(actual.items())
        if desired.get(ns, g).scope != g.scope or ns not in desired
    ]
    deletions: list[Op] = [DeleteCgroup(g) for g in gone]
    changes: list[Op] = []
    for ns, want in sorted(desired.items()):
        have = actual.get(ns)
        if have is None or have in gone:
            changes.append(CreateCgroup(want))
        elif have != want:
            changes.append(ModifyCgroup(have, want))
    return deletions, changes
