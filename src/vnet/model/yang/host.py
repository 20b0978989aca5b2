"""The vnet-router YANG module's data (an RFC 7951 JSON tree) <-> HostConfig.

Pure: the agent's datastore holds the tree, validates and realises the
HostConfig made from it, and reports a problem of that HostConfig at the
tree's element (`error_path`). The lab writes each agent's startup tree with
`tree(host_configs(topo)[host])`, and the clients turn one list entry into a
model object and back with the per-object functions `tree` itself uses
(`router_entry`/`router_of`, `network_entry`/`network_of`): one mapping.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from vnet.model import problems_from_pydantic
from vnet.model.errors import Loc, Problem, TopologyError
from vnet.model.host import HostConfig
from vnet.model.resources import Resources
from vnet.model.topology import Address, VirtualNetwork, VirtualRouter
from vnet.model.yang import routing
from vnet.model.yang.guarantees import (
    KnownConnection,
    guarantees_data,
    guarantees_path,
    guarantees_tree,
)
from vnet.model.yang.module import NETWORKS, PREFIX, ROUTERS
from vnet.model.yang.paths import key_predicate

# the VirtualRouter of a router entry parsed before, or None

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
# resources: the same names in YANG and the model; cpu-time and memory-used are state
_RESOURCE_FIELDS = {"cpu": "cpu", "cpuset": "cpuset", "memory": "memory"}


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


def router_data(r: dict[str, Any], host: str) -> dict[str, Any]:
    """What VirtualRouter is made of for a `router` list entry (on `host`)."""
    data = {
        **_pick(r, _VR_FIELDS),
        "host": host,
        "interfaces": [_interface_data(i) for i in r.get("interface", [])],
        "routes": [_pick(x, _ROUTE_FIELDS) for x in r.get("route", [])],
    }
    if "resources" in r:
        data["resources"] = _pick(r["resources"], _RESOURCE_FIELDS)
    if "routing" in r:
        data["routing"] = routing.routing_data(r["routing"])
    return data


def _interface_data(i: dict[str, Any]) -> dict[str, Any]:
    data = _pick(i, _ITF_FIELDS)
    if "ospf" in i:
        data["ospf"] = routing.ospf_data(i["ospf"])
    return data


def router_of(entry: dict[str, Any], host: str = "agent") -> VirtualRouter:
    """The VirtualRouter a `router` list entry describes (pydantic's error if it does not)."""
    return VirtualRouter.model_validate(router_data(entry, host))


def network_of(entry: dict[str, Any]) -> VirtualNetwork:
    """The VirtualNetwork a `network` list entry describes (pydantic's error if it does not)."""
    return VirtualNetwork.model_validate(_pick(entry, _NET_FIELDS))


def host_config(
    tree: dict[str, Any],
    host: str,
    vtep: Address | str | None = None,
    underlay_mtu: int = 1500,
    routers: Sequence[VirtualRouter | dict[str, Any]] | None = None,
    known_connection: KnownConnection | None = None,
) -> HostConfig:
    """The HostConfig a tree describes; TopologyError lists what does not parse, at
    ("networks", i, field) or ("routers", i, ...) as the model's checks do. `routers`:
    parallel to the tree's VR entries, each one's VirtualRouter already parsed (for
    `host`) or its `router_data` (None: all parsed from the tree); `known_connection`:
    the model object of a connection entry already parsed, or None to parse it."""
    data = {
        "host": host,
        "vtep": vtep,
        "underlay_mtu": underlay_mtu,
        "networks": [
            {"network": _pick(n, _NET_FIELDS), "remote_vteps": n.get("remote-vtep", [])}
            for n in networks_of(tree)
        ],
        "routers": [router_data(r, host) for r in routers_of(tree)] if routers is None else routers,
        **guarantees_data(tree, known_connection),
    }
    try:
        return HostConfig.model_validate(data)
    except ValidationError as err:
        problems = [_flat(p) for p in problems_from_pydantic(err)]
        raise TopologyError(problems, "configuration") from None


def _flat(problem: Problem) -> Problem:
    """("networks", i, "network", f) -> ("networks", i, f): the tree has no such level."""
    loc = problem.loc
    if len(loc) > 2 and loc[0] == "networks" and loc[2] == "network":
        loc = (*loc[:2], *loc[3:])
    return Problem(loc, problem.message, problem.subject)


def tree(hc: HostConfig) -> dict[str, Any]:
    """The datastore's tree for a HostConfig (a lab's share of its file for one agent)."""
    nets = [network_entry(carried.network, carried.remote_vteps) for carried in hc.networks]
    routers = [router_entry(vr) for vr in hc.routers]
    out: dict[str, Any] = {}
    if nets:
        out[NETWORKS] = {"network": nets}
    if routers:
        out[ROUTERS] = {"router": routers}
    return out | guarantees_tree(hc.underlay, hc.srv6)


def network_entry(n: VirtualNetwork, remote_vteps: list[Any] | None = None) -> dict[str, Any]:
    """The `network` list entry (RFC 7951) of a VirtualNetwork and its remote VTEPs."""
    entry: dict[str, Any] = {"name": n.name, "tenant": n.tenant, "vni": n.vni}
    if n.ipv4:
        entry["ipv4-prefix"] = str(n.ipv4)
    if n.ipv6:
        entry["ipv6-prefix"] = str(n.ipv6)
    if n.mtu:
        entry["mtu"] = n.mtu
    if n.bandwidth:
        entry["bandwidth"] = str(n.bandwidth)
    if remote_vteps:
        entry["remote-vtep"] = [str(v) for v in remote_vteps]
    return entry


def router_entry(vr: VirtualRouter) -> dict[str, Any]:
    """The `router` list entry (RFC 7951) of a VirtualRouter; no index: the agent picks one."""
    itfs = []
    for k, itf in enumerate(vr.interfaces):
        e: dict[str, Any] = {"name": vr.ifname(k), "network": itf.network}
        if itf.ipv4:
            e["ipv4"] = str(itf.ipv4)
        if itf.ipv6:
            e["ipv6"] = str(itf.ipv6)
        if itf.ospf is not None:
            e["ospf"] = routing.ospf_entry(itf.ospf)
        itfs.append(e)
    entry: dict[str, Any] = {"name": vr.name}
    if vr.index is not None:
        entry["index"] = vr.index
    entry |= {"admin-state": vr.admin_state, "interface": itfs}
    if vr.routes:
        entry["route"] = [
            {"destination": str(r.destination), "next-hop": str(r.via)} for r in vr.routes
        ]
    if vr.resources is not None:
        entry["resources"] = resources_entry(vr.resources)
    if vr.routing is not None:
        entry["routing"] = routing.routing_entry(vr.routing)
    return entry


def resources_entry(res: Resources) -> dict[str, Any]:
    """The `resources` container (RFC 7951: decimal64 and uint64 as strings)."""
    out: dict[str, Any] = {}
    if res.cpu is not None:
        out["cpu"] = f"{res.cpu:.2f}"
    if res.cpuset is not None:
        out["cpuset"] = res.cpuset
    if res.memory is not None:
        out["memory"] = str(res.memory)
    return out


# -- error paths -----------------------------------------------------------------


def error_path(loc: Loc, tree: dict[str, Any]) -> str:
    """('routers', 0, 'interfaces', 1, 'ipv4') -> /vr:routers/vr:router[vr:name='r1']/..."""
    if loc and loc[0] == "networks":
        return _network_path(loc[1:], networks_of(tree))
    if loc and loc[0] == "routers":
        return _router_path(loc[1:], routers_of(tree))
    if loc and loc[0] in ("underlay", "srv6"):
        return guarantees_path(loc, tree)
    return "/"


def _network_path(rest: Loc, nets: list[dict[str, Any]]) -> str:
    p = PREFIX
    path = f"/{p}:virtual-networks"
    if rest and isinstance(rest[0], int) and rest[0] < len(nets):
        path += f"/{p}:network{key_predicate([('name', nets[rest[0]]['name'])])}"
        if len(rest) > 1:
            inverse = {v: k for k, v in _NET_FIELDS.items()} | {"remote_vteps": "remote-vtep"}
            path += f"/{p}:{inverse.get(str(rest[1]), rest[1])}"
    return path


def _router_path(rest: Loc, routers: list[dict[str, Any]]) -> str:
    p = PREFIX
    path = f"/{p}:routers"
    if not rest or not isinstance(rest[0], int) or rest[0] >= len(routers):
        return path
    router = routers[rest[0]]
    path += f"/{p}:router{key_predicate([('name', router['name'])])}"
    rest = rest[1:]
    if not rest:
        return path
    if rest[0] == "interfaces" and len(rest) > 1 and isinstance(rest[1], int):
        itfs = router.get("interface", [])
        if rest[1] < len(itfs):
            path += f"/{p}:interface{key_predicate([('name', itfs[rest[1]]['name'])])}"
            path += routing.yang_steps(rest[2:])
        return path
    if rest[0] == "routes" and len(rest) > 1 and isinstance(rest[1], int):
        routes = router.get("route", [])
        if rest[1] < len(routes):
            path += f"/{p}:route" + key_predicate([("destination", routes[rest[1]]["destination"])])
            if len(rest) > 2:
                field = {"to": "destination", "via": "next-hop"}.get(str(rest[2]), rest[2])
                path += f"/{p}:{field}"
        return path
    if rest[0] in ("resources", "routing"):
        return path + routing.yang_steps(rest)
    inverse = {v: k for k, v in _VR_FIELDS.items()}
    return path + f"/{p}:{inverse.get(str(rest[0]), rest[0])}"


def problem_message(problem: Problem) -> str:
    who = f"{problem.subject}: " if problem.subject else ""
    return who + problem.message
