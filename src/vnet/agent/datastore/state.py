"""Operational state: the running configuration plus what the kernel says about each VR."""

from __future__ import annotations

import contextlib
import time
from typing import Any

from vnet.agent.config import AgentConfig
from vnet.agent.datastore import resources_state
from vnet.model.resolve import next_free_index
from vnet.model.yang import host as codec
from vnet.model.yang.module import ROUTERS, qualified
from vnet.substrate import Kernel, Placement, nsfs
from vnet.substrate import link as links
from vnet.substrate import route as routes
from vnet.substrate.kernel import NotANamespace
from vnet.substrate.placement import vr_port_name


def selected_routers(running: dict[str, Any], detailed: set[str] | None) -> list[dict[str, Any]]:
    """Copies of the VR entries that get state (`detailed`: their names; None: all)."""
    return [
        _with_own_interfaces(r)
        for r in codec.routers_of(running)
        if detailed is None or r["name"] in detailed
    ]


def read_state(
    kernel: Kernel, placement: Placement, routers: list[dict[str, Any]], all_routers: bool
) -> dict[str, dict[str, Any]]:
    """Per VR: oper-state, per-interface status and counters, route count. Runs in the
    kernel thread."""
    wanted = [
        vr_port_name(int(r["index"]), k)
        for r in routers
        for k in range(len(r.get("interface", [])))
    ]
    # one dump beats a request per port
    ports = links.read_ports(kernel, None, None if all_routers else wanted)
    out: dict[str, dict[str, Any]] = {}
    for r in routers:
        ns = placement.node_ns(r["name"])
        itfs: dict[str, dict[str, Any]] = {}
        if not nsfs.exists(ns):
            # drifted: deleted behind our back. Our cached socket would keep the dead
            # namespace (and its veths, and their counters) alive: drop it, show nothing
            kernel.forget(ns)
            out[r["name"]] = {"oper-state": "failed", "interfaces": {}}
            continue
        all_up = True
        for k, itf in enumerate(r.get("interface", [])):
            port = ports.get(vr_port_name(int(r["index"]), k))
            if port is None:
                all_up = False
                continue
            all_up &= port.up
            itfs[itf["name"]] = {
                "oper-status": "up" if port.up else "down",
                "statistics": _mirrored(port.counters),
            }
        if r.get("admin-state", "up") == "down":
            state = "stopped"
        else:
            state = "running" if all_up else "failed"
        out[r["name"]] = {"oper-state": state, "interfaces": itfs}
        out[r["name"]]["resources"] = resources_state.read_usage(placement, r)
        if state != "failed":
            with contextlib.suppress(OSError, NotANamespace):
                out[r["name"]]["route-count"] = routes.count(kernel, ns)
    return out


def add_router_state(
    routers: list[dict[str, Any]],
    kernel_view: dict[str, dict[str, Any]],
    started_at: dict[str, float],
) -> None:
    now = time.time()
    for r in routers:
        info = kernel_view[r["name"]]
        r["oper-state"] = info["oper-state"]
        if "route-count" in info:
            r["route-count"] = info["route-count"]
        running = info["oper-state"] == "running"
        r["uptime"] = int(now - started_at.get(r["name"], now)) if running else 0
        for itf in r.get("interface", []):
            itf.update(info["interfaces"].get(itf["name"], {"oper-status": "down"}))
        resources_state.add_usage(r, info.get("resources"))


def hypervisor_state(
    config: AgentConfig, placement: Placement, running: dict[str, Any]
) -> tuple[str, dict[str, Any]]:
    configured = codec.routers_of(running)
    return qualified("hypervisor"), {
        "host-name": config.host,
        "next-available-index": next_index(running),
        "configured-routers": len(configured),
        # admin-state up and present in the kernel: a stat per VR, no netlink dump
        "active-routers": sum(
            r.get("admin-state", "up") == "up" and nsfs.exists(placement.node_ns(r["name"]))
            for r in configured
        ),
    }


def with_routers(
    running: dict[str, Any], routers: list[dict[str, Any]], all_routers: bool
) -> dict[str, Any]:
    """A shallow copy of `running` whose router list is `routers` (the rest is shared)."""
    tree = dict(running)
    if routers or (all_routers and ROUTERS in tree):
        tree[ROUTERS] = {**tree.get(ROUTERS, {}), "router": routers}
    else:
        tree.pop(ROUTERS, None)
    return tree


def next_index(running: dict[str, Any]) -> int:
    return next_free_index({int(r["index"]) for r in codec.routers_of(running)})


def _with_own_interfaces(router: dict[str, Any]) -> dict[str, Any]:
    """A copy of a VR entry whose interface entries are copies too (state is added to both)."""
    out = dict(router)
    if "interface" in router:
        out["interface"] = [dict(itf) for itf in router["interface"]]
    return out


def _mirrored(s: dict[str, int]) -> dict[str, str]:
    """Counters of the VR's interface from its host port: what one sends the other receives."""
    return {
        "in-octets": str(s.get("tx_bytes", 0)),
        "in-packets": str(s.get("tx_packets", 0)),
        "in-errors": str(s.get("tx_errors", 0)),
        "in-discards": str(s.get("tx_dropped", 0)),
        "out-octets": str(s.get("rx_bytes", 0)),
        "out-packets": str(s.get("rx_packets", 0)),
        "out-errors": str(s.get("rx_errors", 0)),
        "out-discards": str(s.get("rx_dropped", 0)),
    }
