"""Where a node's cgroup lives on this host (v1 or v2, per controller), and joining it.

vnet's groups sit in a directory "vnet" at the top of each hierarchy it uses,
one group per node named "<namespace>@<scope>": the name is the mark (which
node, which owner), so observation and teardown find exactly vnet's own, also
after a crash. A controller lives in a v1 hierarchy where one mounts it (this
kind of machine: cpu, cpuacct, cpuset and memory each on their own), else in
the v2 hierarchy if its root enables it for its children. The substrate creates and removes the
groups (substrate/cgroup.py); tools only put a starting process into one.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

GROUP_PARENT = "vnet"
MOUNTINFO = Path("/proc/self/mountinfo")
# cpu: quota (and on v2 the usage counter), cpuacct: v1's usage counter,
# cpuset: which cores, memory: limit and usage
CONTROLLERS = ("cpu", "cpuacct", "cpuset", "memory")
V2_CONTROLLERS = ("cpu", "cpuset", "memory")  # cpuacct's counter is cpu.stat on v2
MARK_SEPARATOR = "@"


@dataclass(frozen=True)
class Hierarchy:
    mount: Path
    version: int  # 1 or 2

    @property
    def parent(self) -> Path:
        """vnet's directory in this hierarchy."""
        return self.mount / GROUP_PARENT

    def group(self, name: str) -> Path:
        return self.parent / name


def group_name(ns: str, scope: str) -> str:
    return f"{ns}{MARK_SEPARATOR}{scope}"


def split_group_name(name: str) -> tuple[str, str] | None:
    """(namespace, scope) of one of vnet's group names, None for anything else."""
    ns, sep, scope = name.rpartition(MARK_SEPARATOR)
    return (ns, scope) if sep and ns and scope else None


def parse_mountinfo(text: str) -> tuple[dict[str, Path], Path | None]:
    """v1 controller -> its mount point, and the v2 mount (None if there is none)."""
    v1: dict[str, Path] = {}
    v2: Path | None = None
    for line in text.splitlines():
        fields = line.split()
        if " - " not in line or len(fields) < 5:
            continue
        after = line.split(" - ", 1)[1].split()
        fstype, options = after[0], after[2] if len(after) > 2 else ""
        if fstype == "cgroup2" and v2 is None:
            v2 = Path(fields[4])
        elif fstype == "cgroup":
            for opt in options.split(","):
                if opt in CONTROLLERS:
                    v1.setdefault(opt, Path(fields[4]))
    return v1, v2


def _read_words(path: Path) -> set[str]:
    try:
        return set(path.read_text().split())
    except OSError:
        return set()


def layout_from(
    mountinfo: str, read_words: Callable[[Path], set[str]] = _read_words
) -> dict[str, Hierarchy]:
    """Controller -> the hierarchy vnet uses for it: v1 where mounted, else v2 if enabled.

    On v2 a controller reaches vnet's directory only if the root enables it
    for its children (cgroup.subtree_control); vnet does not change that
    global setting, it only enables them for its own groups below.
    """
    v1, v2 = parse_mountinfo(mountinfo)
    out = {name: Hierarchy(path, 1) for name, path in v1.items()}
    if v2 is not None:
        offered = read_words(v2 / "cgroup.subtree_control")
        for name in V2_CONTROLLERS:
            if name not in out and name in offered:
                out[name] = Hierarchy(v2, 2)
        # v2 counts CPU time in every group (cpu.stat), with or without the controller
        if "cpuacct" not in out and out.get("cpu", Hierarchy(v2, 2)).version == 2:
            out["cpuacct"] = Hierarchy(v2, 2)
    return out


def layout() -> dict[str, Hierarchy]:
    """This host's layout, read now (mounts can change; reading costs microseconds)."""
    try:
        return layout_from(MOUNTINFO.read_text())
    except OSError:
        return {}


def group_dirs(name: str, hierarchies: dict[str, Hierarchy] | None = None) -> list[Path]:
    """The directories of group `name` that exist, once per mount."""
    found = {h.group(name) for h in (hierarchies or layout()).values()}
    return sorted(d for d in found if d.is_dir())


def node_groups(ns: str, hierarchies: dict[str, Hierarchy] | None = None) -> list[Path]:
    """The existing group directories of the node in namespace `ns`, of any owner."""
    out: set[Path] = set()
    for h in (hierarchies or layout()).values():
        try:
            names = os.listdir(h.parent)
        except OSError:
            continue
        for name in names:
            parsed = split_group_name(name)
            if parsed is not None and parsed[0] == ns:
                out.add(h.group(name))
    return sorted(out)


def joiner(
    ns: str | None, hierarchies: dict[str, Hierarchy] | None = None
) -> Callable[[], None] | None:
    """What a child started in `ns` runs before exec to join its node's group (None: none).

    The child writes "0" (itself) into cgroup.procs, so everything it forks
    later (a daemon's workers) starts inside the limits too. Paths are fixed
    beforehand: the child between fork and exec only opens and writes.
    """
    if ns is None:
        return None
    procs = [str(d / "cgroup.procs") for d in node_groups(ns, hierarchies)]
    if not procs:
        return None

    def join() -> None:
        for path in procs:
            fd = os.open(path, os.O_WRONLY)
            try:
                os.write(fd, b"0")
            finally:
                os.close(fd)

    return join
