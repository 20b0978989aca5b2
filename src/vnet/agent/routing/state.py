"""A VR's routing state for <get> and RESTCONF: its daemons, OSPF neighbours, learned routes.

Read from the instance with vtysh's JSON output (FRR 8.4's shapes, parsed
defensively: a field FRR leaves out is left out here too).
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

from vnet.agent.routing.supervisor import Instance
from vnet.tools import frr
from vnet.tools.errors import ToolError

# (daemon that must run, command): OSPFv2 and v3 neighbours, then the routes zebra has of each
_COMMANDS = {
    ("ipv4", "neighbors"): ("ospfd", "show ip ospf neighbor json"),
    ("ipv6", "neighbors"): ("ospf6d", "show ipv6 ospf6 neighbor json"),
    ("ipv4", "routes"): ("ospfd", "show ip route ospf json"),
    ("ipv6", "routes"): ("ospf6d", "show ipv6 route ospf6 json"),
}


def read(inst: Instance, last_seen: dict[str, Any]) -> dict[str, Any]:
    """The `routing/state` container of one VR. Blocks (vtysh): run it off the event loop.

    `last_seen` keeps, per VR, the neighbours last read, so `last-change` moves when
    one of them changes state even between the supervisor's own events."""
    out: dict[str, Any] = {"daemons": inst.state, "restarts": inst.restarts}
    if inst.last_error:
        out["last-error"] = inst.last_error
    if inst.state == "running":
        try:
            answers = _ask(inst)
            neighbors, routes = _neighbors(answers), _routes(answers)
        except ToolError as err:
            out["last-error"] = str(err)
            neighbors, routes = [], []
        if neighbors:
            out["neighbor"] = neighbors
        if routes:
            out["route"] = routes
        seen = sorted((n["family"], n["router-id"], n["interface"], n["state"]) for n in neighbors)
        previous = last_seen.get(inst.vr.name)
        if previous is not None and previous[0] != seen:
            inst.last_change = time.time()
        last_seen[inst.vr.name] = (seen, inst.last_change)
    out["last-change"] = _date_and_time(inst.last_change)
    return out


def _date_and_time(when: float) -> str:
    return datetime.fromtimestamp(when, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _ask(inst: Instance) -> dict[tuple[str, str], Any]:
    """Every question whose daemon runs, in one vtysh call."""
    asked = [(key, cmd) for key, (daemon, cmd) in _COMMANDS.items() if daemon in inst.children]
    answers = frr.vtysh_json(inst.directory, [cmd for _, cmd in asked])
    return {key: answer for (key, _), answer in zip(asked, answers, strict=True)}


def _neighbors(answers: dict[tuple[str, str], Any]) -> list[dict[str, Any]]:
    out = []
    for rid, e in frr.ospf_neighbors(answers.get(("ipv4", "neighbors"))):
        out.append(
            {
                "family": "ipv4",
                "router-id": rid,
                "interface": str(e.get("ifaceName", "")).split(":")[0],
                "address": e.get("ifaceAddress") or e.get("address"),
                "state": frr.neighbor_state(e),
            }
        )
    v3 = answers.get(("ipv6", "neighbors")) or {}
    for e in v3.get("neighbors") or []:
        out.append(
            {
                "family": "ipv6",
                "router-id": e.get("neighborId", ""),
                "interface": e.get("interfaceName", ""),
                "state": frr.neighbor_state(e),
            }
        )
    return [{k: v for k, v in n.items() if v is not None} for n in out]


def _routes(answers: dict[tuple[str, str], Any]) -> list[dict[str, Any]]:
    out = []
    for family in ("ipv4", "ipv6"):
        table = answers.get((family, "routes")) or {}
        for prefix, entries in table.items():
            chosen = [e for e in entries if e.get("selected") or e.get("installed")]
            if not chosen:
                continue
            hops = [h for h in chosen[0].get("nexthops", []) if h.get("active", True)]
            route: dict[str, Any] = {"destination": prefix}
            if ips := [h["ip"] for h in hops if "ip" in h]:
                route["next-hop"] = ips
            if hops and "interfaceName" in hops[0]:
                route["interface"] = hops[0]["interfaceName"]
            out.append(route)
    return out
