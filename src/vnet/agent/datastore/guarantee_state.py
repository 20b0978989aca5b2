"""Operational state of the guarantees: bytes, packets and drops per class and per connection.

Underlay classes are read from the agent's "75:" tree on each underlay interface,
a connection's from its shaper (76:<id>) on its ingress VR's outgoing interface.
"""

from __future__ import annotations

import contextlib
import copy
from dataclasses import dataclass
from typing import Any

from vnet.model.yang import host as codec
from vnet.model.yang.guarantees import SRV6, UNDERLAY, connections_of, underlay_of
from vnet.substrate import Kernel, Placement
from vnet.substrate.kernel import KernelError, NotANamespace
from vnet.substrate.realize_guarantees import class_minors
from vnet.substrate.tc import (
    BEST_EFFORT_MINOR,
    MANAGEMENT_MINOR,
    UNDERLAY_MAJOR,
    VNET_MAJOR,
    class_counters,
    handle,
)

Counters = dict[int, tuple[int, int, int]]  # classid -> (bytes, packets, drops)


@dataclass
class Readings:
    # (namespace, interface) -> its classes' counters, for every interface with guarantees
    classes: dict[tuple[str | None, str], Counters]
    # underlay interface -> up with a carrier (False: down or absent)
    underlay_up: dict[str, bool]


def read_counters(
    kernel: Kernel,
    placement: Placement,
    host: str,
    running: dict[str, Any],
    tops: set[str] | None = None,
) -> Readings:
    """The classes' counters and the underlay interfaces' state, of the top-level members
    `tops` names (local names; None: all): the controller's utilisation poll asks for the
    underlay alone every second, and a connection's ingress classes are many. Runs in the
    kernel thread, which the agent's commits share."""
    host_ns = placement.host_ns(host)
    underlay = [itf["name"] for itf in underlay_of(running)] if _wanted(UNDERLAY, tops) else []
    wanted = [(host_ns, name) for name in underlay]
    connections = connections_of(running) if _wanted(SRV6, tops) else []
    # (the VRs by name only when connections need them: a get of one VR comes here too)
    routers = {r["name"]: r for r in codec.routers_of(running)} if connections else {}
    for conn in connections:
        for ing in conn.get("ingress", []):
            dev = _interface_in(routers.get(ing["router"], {}), ing["network"])
            if dev is not None:
                wanted.append((placement.node_ns(ing["router"]), dev))
    out: dict[tuple[str | None, str], Counters] = {}
    for ns, dev in dict.fromkeys(wanted):
        with contextlib.suppress(OSError, KernelError, NotANamespace):
            out[(ns, dev)] = class_counters(kernel, ns, dev)
    return Readings(out, {name: _is_up(kernel, host_ns, name) for name in underlay})


def _wanted(member: str, tops: set[str] | None) -> bool:
    return tops is None or member.partition(":")[2] in tops


def _is_up(kernel: Kernel, ns: str | None, name: str) -> bool:
    try:
        brief = kernel.link_brief(ns, name)
    except (OSError, KernelError):
        return False
    return brief is not None and brief.running


def with_counters(
    tree: dict[str, Any],
    running: dict[str, Any],
    readings: Readings,
    placement: Placement,
    host: str,
    tops: set[str] | None = None,
) -> None:
    """Add `statistics` to the underlay classes and connection ingress pieces of `tree`,
    and `oper-status` to the underlay interfaces (their containers are copied first:
    `tree` shares them with `running`, which names the VRs and networks even where a
    request's selection left them out). Only for the top-level members `tops` names, as
    `read_counters` read them: the manager's poll of the underlay every second copied
    every connection's pieces too, and its agent's commits waited for that."""
    counters = readings.classes
    if UNDERLAY in tree and _wanted(UNDERLAY, tops):
        tree[UNDERLAY] = copy.deepcopy(tree[UNDERLAY])
        _underlay_counters(tree, running, counters, placement.host_ns(host))
        for itf in underlay_of(tree):
            itf["oper-status"] = "up" if readings.underlay_up.get(itf["name"]) else "down"
    if SRV6 in tree and _wanted(SRV6, tops):
        tree[SRV6] = copy.deepcopy(tree[SRV6])
        routers = {r["name"]: r for r in codec.routers_of(running)}
        for conn in connections_of(tree):
            cid = handle(VNET_MAJOR, int(conn["id"]))
            for ing in conn.get("ingress", []):
                dev = _interface_in(routers.get(ing["router"], {}), ing["network"])
                found = counters.get((placement.node_ns(ing["router"]), dev or ""), {})
                if cid in found:
                    ing["statistics"] = _counters(found[cid])


def _underlay_counters(
    tree: dict[str, Any],
    running: dict[str, Any],
    counters: dict,  # type: ignore[type-arg]
    ns: str | None,
) -> None:
    vnis = {n["name"]: int(n["vni"]) for n in codec.networks_of(running)}
    interfaces = underlay_of(tree)
    minors = class_minors(
        sorted(
            {
                (c["network"], vnis.get(c["network"], 0))
                for i in interfaces
                for c in i.get("class", [])
            }
        )
    )
    for itf in interfaces:
        found = counters.get((ns, itf["name"]), {})
        for key, minor in (
            ("reserved-statistics", MANAGEMENT_MINOR),
            ("best-effort-statistics", BEST_EFFORT_MINOR),
        ):
            if handle(UNDERLAY_MAJOR, minor) in found:
                itf[key] = _counters(found[handle(UNDERLAY_MAJOR, minor)])
        for cls in itf.get("class", []):
            cid = handle(UNDERLAY_MAJOR, minors.get(cls["network"], 0))
            if cid in found:
                cls["statistics"] = _counters(found[cid])


def _interface_in(router: dict[str, Any], network: str) -> str | None:
    return next((i["name"] for i in router.get("interface", []) if i["network"] == network), None)


def _counters(values: tuple[int, int, int]) -> dict[str, str]:
    return {"bytes": str(values[0]), "packets": str(values[1]), "drops": str(values[2])}
