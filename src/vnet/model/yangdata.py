"""The YANG module's data (RFC 7951 JSON trees) <-> the vnet model.

Pure: the agent's datastore, the lab (writing an agent's startup
configuration) and later the controller all speak this one mapping.
"""

from __future__ import annotations

from typing import Any

from vnet.model.errors import Loc, Problem
from vnet.model.topology import Topology

MODULE = "vnet-router"
PREFIX = "vr"


def qualified(name: str) -> str:
    return f"{MODULE}:{name}"


NETWORKS = qualified("virtual-networks")
ROUTERS = qualified("routers")

# YANG name -> model field, per object kind
_NET_FIELDS = {
    "name": "name",
    "tenant": "tenant",
    "vni": "vni",
    "ipv4-prefix": "ipv4",
    "ipv6-prefix": "ipv6",
    "mtu": "mtu",
    "bandwidth": "bandwidth",
}
_VR_FIELDS = {"name": "name", "index": "index", "admin-state": "admin_state"}
_ITF_FIELDS = {"name": "name", "network": "network", "ipv4": "ipv4", "ipv6": "ipv6"}
_ROUTE_FIELDS = {"destination": "to", "next-hop": "via"}


def networks_of(tree: dict[str, Any]) -> list[dict[str, Any]]:
    return list(tree.get(NETWORKS, {}).get("network", []))


def routers_of(tree: dict[str, Any]) -> list[dict[str, Any]]:
    return list(tree.get(ROUTERS, {}).get("router", []))


def _pick(entry: dict[str, Any], fields: dict[str, str]) -> dict[str, Any]:
    out = {}
    for yname, field in fields.items():
        if yname in entry:
            value = entry[yname]
            out[field] = int(value) if field == "bandwidth" else value
    return out


def topology_data(tree: dict[str, Any], host: str, lab: str, hosts: int) -> dict[str, Any]:
    """Plain model data for this host; `hosts` > 1 tells the model an underlay exists."""
    host_names = [host] + [f"peer{i}" for i in range(1, hosts)]
    return {
        "name": lab,
        "hosts": [{"name": h} for h in host_names],
        "networks": [_pick(n, _NET_FIELDS) for n in networks_of(tree)],
        "routers": [
            {
                **_pick(r, _VR_FIELDS),
                "host": host,
                "interfaces": [_pick(i, _ITF_FIELDS) for i in r.get("interface", [])],
                "routes": [_pick(x, _ROUTE_FIELDS) for x in r.get("route", [])],
            }
            for r in routers_of(tree)
        ],
    }


def tree_from_topology(topo: Topology, remote_vteps: dict[str, list[str]]) -> dict[str, Any]:
    """What the datastore holds for a topology's networks and routers (lab startup)."""
    nets = []
    for n in topo.networks:
        entry: dict[str, Any] = {"name": n.name, "tenant": n.tenant, "vni": n.vni}
        if n.ipv4:
            entry["ipv4-prefix"] = str(n.ipv4)
        if n.ipv6:
            entry["ipv6-prefix"] = str(n.ipv6)
        if n.mtu:
            entry["mtu"] = n.mtu
        if n.bandwidth:
            entry["bandwidth"] = str(n.bandwidth)
        if remote_vteps.get(n.name):
            entry["remote-vtep"] = remote_vteps[n.name]
        nets.append(entry)
    routers = []
    for vr in topo.routers:
        itfs = []
        for k, itf in enumerate(vr.interfaces):
            e: dict[str, Any] = {"name": vr.ifname(k), "network": itf.network}
            if itf.ipv4:
                e["ipv4"] = str(itf.ipv4)
            if itf.ipv6:
                e["ipv6"] = str(itf.ipv6)
            itfs.append(e)
        entry = {
            "name": vr.name,
            "index": vr.index,
            "admin-state": vr.admin_state,
            "interface": itfs,
        }
        if vr.routes:
            entry["route"] = [
                {"destination": str(r.destination), "next-hop": str(r.via)} for r in vr.routes
            ]
        routers.append(entry)
    tree: dict[str, Any] = {}
    if nets:
        tree[NETWORKS] = {"network": nets}
    if routers:
        tree[ROUTERS] = {"router": routers}
    return tree


def _key_pred(name: str) -> str:
    return f"[{PREFIX}:name='{name}']"


def error_path(loc: Loc, tree: dict[str, Any]) -> str:
    """('routers', 0, 'interfaces', 1, 'ipv4') -> /vr:routers/vr:router[vr:name='r1']/..."""
    p = PREFIX
    if not loc:
        return "/"
    if loc[0] == "networks":
        path = f"/{p}:virtual-networks"
        nets = networks_of(tree)
        if len(loc) > 1 and isinstance(loc[1], int) and loc[1] < len(nets):
            path += f"/{p}:network{_key_pred(nets[loc[1]]['name'])}"
            if len(loc) > 2:
                inverse = {v: k for k, v in _NET_FIELDS.items()}
                path += f"/{p}:{inverse.get(str(loc[2]), loc[2])}"
        return path
    if loc[0] == "routers":
        path = f"/{p}:routers"
        routers = routers_of(tree)
        if len(loc) < 2 or not isinstance(loc[1], int) or loc[1] >= len(routers):
            return path
        router = routers[loc[1]]
        path += f"/{p}:router{_key_pred(router['name'])}"
        rest = loc[2:]
        if not rest:
            return path
        if rest[0] == "interfaces" and len(rest) > 1 and isinstance(rest[1], int):
            itfs = router.get("interface", [])
            if rest[1] < len(itfs):
                path += f"/{p}:interface{_key_pred(itfs[rest[1]]['name'])}"
                if len(rest) > 2:
                    path += f"/{p}:{rest[2]}"
            return path
        if rest[0] == "routes" and len(rest) > 1 and isinstance(rest[1], int):
            routes = router.get("route", [])
            if rest[1] < len(routes):
                dest = routes[rest[1]]["destination"]
                path += f"/{p}:route[{p}:destination='{dest}']"
                if len(rest) > 2:
                    field = {"to": "destination", "via": "next-hop"}.get(str(rest[2]), rest[2])
                    path += f"/{p}:{field}"
            return path
        inverse = {v: k for k, v in _VR_FIELDS.items()}
        return path + f"/{p}:{inverse.get(str(rest[0]), rest[0])}"
    return "/"


def problem_message(problem: Problem) -> str:
    who = f"{problem.subject}: " if problem.subject else ""
    return who + problem.message
