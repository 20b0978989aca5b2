"""A VR's resource use as operational state: CPU time and memory of its cgroup.

Only VRs with a `resources` container have a group (and so these leaves);
the figures cover the processes inside the VR, not the kernel's forwarding
of its packets (softirq time is charged to no group).
"""

from __future__ import annotations

from typing import Any

from vnet.substrate import Placement
from vnet.substrate.cgroup import usage
from vnet.tools.cgroupfs import group_name


def read_usage(placement: Placement, router: dict[str, Any]) -> dict[str, str] | None:
    """The state leaves of the VR's `resources` (RFC 7951 strings), or None without a group.

    Reads a few cgroup files: runs in the kernel thread with the rest of the state.
    """
    if "resources" not in router:
        return None
    used = usage(group_name(placement.node_ns(router["name"]), placement.scope))
    out = {}
    if used.cpu_time_ns is not None:
        out["cpu-time"] = str(used.cpu_time_ns // 1000)  # microseconds, as vmCpuTime
    if used.memory_bytes is not None:
        out["memory-used"] = str(used.memory_bytes)
    return out


def add_usage(router: dict[str, Any], used: dict[str, str] | None) -> None:
    """Put the leaves into the router entry (a copy: its `resources` is copied too)."""
    if used:
        router["resources"] = {**router.get("resources", {}), **used}
