"""When the failover lab's OSPF network has converged, so that a run starts from it.

A failure's outage is only the routing's reaction if, when the link fails, every router
already holds the network as it is: each adjacency Full, each router's and each
network's LSA saying so and the same in every router's database, the routes computed
from them, no SPF run held back and every BFD session up. A cut made earlier measured
something else: before BFD ran, OSPF's dead interval (5.4 s instead of 0.3 s); before
r1's and r2's LSAs listed their adjacency on a12 (flooding still going on about 15 s
after `lab up`), nothing at all, for r1 then had no way round r3 until the link returned
(a CI run lost the whole 5 s; 3 to 5 of 10-12 first runs after `lab up` here lost
3.2 to 6 s).

The expectations come from the topology file, the answers from each router's vtysh
(FRR 8.4's JSON).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any

from vnet.lab import agents
from vnet.tools import frr
from vnet.tools.errors import ToolError

TRANSIT = "a Transit Network"
MAX_AGE = 3600  # seconds (RFC 2328's MaxAge)


@dataclass(frozen=True)
class RouterView:
    """What one OSPF router shows once the network has converged."""

    host: str
    adjacencies: int  # OSPFv2 neighbours Full, at least
    transit: int  # networks its router-LSA lists as transit: those it shares with others
    prefixes: frozenset[str]  # IPv4 networks it routes by OSPF: all it is not attached to
    bfd_peers: int  # BFD sessions up: one per neighbour and OSPF version


@dataclass(frozen=True)
class Converged:
    routers: dict[str, RouterView]
    shared: tuple[int, ...]  # routers on each shared network (its network-LSA's), sorted


def expected(data: dict[str, Any]) -> Converged:
    """The converged network of a topology. A router is Full with every other router on
    each of its non-passive networks, or with the DR and BDR only (2) where it is
    neither; so with at least min(others, 2) per network."""
    routers = [r for r in data.get("routers", []) if (r.get("routing") or {}).get("protocol")]
    ospf = {r["name"]: [i for i in r.get("interfaces", []) if "ospf" in i] for r in routers}
    active: dict[str, set[str]] = {}  # network -> routers with a non-passive interface on it
    for name, itfs in ospf.items():
        for itf in itfs:
            if not (itf["ospf"] or {}).get("passive"):
                active.setdefault(itf["network"], set()).add(name)
    shared = {net: on for net, on in active.items() if len(on) > 1}
    every = {_prefix(i) for itfs in ospf.values() for i in itfs if i.get("ipv4")}
    views = {
        r["name"]: RouterView(
            host=r["host"],
            adjacencies=sum(min(len(on) - 1, 2) for on in shared.values() if r["name"] in on),
            transit=sum(1 for on in shared.values() if r["name"] in on),
            prefixes=frozenset(every - {_prefix(i) for i in ospf[r["name"]] if i.get("ipv4")}),
            bfd_peers=sum(
                ("ipv4" in i) + ("ipv6" in i)  # a session per OSPF version
                for i in ospf[r["name"]]
                if (i["ospf"] or {}).get("bfd")
            ),
        )
        for r in routers
    }
    return Converged(views, tuple(sorted(len(on) for on in shared.values())))


def _prefix(itf: dict[str, Any]) -> str:
    return str(ipaddress.ip_interface(itf["ipv4"]).network)


COMMANDS = [
    "show ip ospf json",
    "show ip ospf neighbor json",
    "show ip ospf database router json",
    "show ip ospf database network json",
    "show ip route ospf json",
]


def lagging(lab: str, want: Converged) -> str | None:
    """What of `lab`'s routers does not yet show the network `want` describes (None: all
    does)."""
    answers = {}
    for name, view in want.routers.items():
        commands = COMMANDS + (["show bfd peers json"] if view.bfd_peers else [])
        directory = frr.instance_dir(agents.agent_scope(lab, view.host), name)
        try:
            answers[name] = frr.vtysh_json(directory, commands)
        except ToolError as err:
            return f"{name} does not answer: {err}"
    return judge(answers, want)


def judge(answers: dict[str, list[Any]], want: Converged) -> str | None:
    """`answers`: router -> its answers to COMMANDS (and BFD's, where it has sessions)."""
    if missing := sorted(set(want.routers) - set(answers)):
        return f"no answer from {', '.join(missing)}"
    for name, view in want.routers.items():
        if why := _router_lags(answers[name], view):
            return f"{name}: {why}"
    if not answers:
        return None  # no OSPF: routed statically, nothing to converge
    if len({_headers(a) for a in answers.values()}) > 1:
        return "the routers' LSAs differ (still flooding)"
    ids = {name: a[0]["routerId"] for name, a in answers.items()}
    some = next(iter(answers.values()))
    return _database_lags(some, {ids[n]: v.transit for n, v in want.routers.items()}, want)


def _router_lags(answer: list[Any], want: RouterView) -> str | None:
    ospf, neighbors, _, _, routes, *bfd = answer
    if "routerId" not in ospf:
        return "OSPF is not running yet"
    # an SPF run held back by the throttle (50 ms more for each run inside the hold, up to
    # 5 s) would delay the failure's: the next one must start at once
    hold = min(ospf["holdtimeMinMsecs"] * ospf["holdtimeMultplier"], ospf["holdtimeMaxMsecs"])
    full = [e for _, e in frr.ospf_neighbors(neighbors) if frr.neighbor_state(e) == "Full"]
    selected = {p for p, entries in routes.items() if any(e.get("selected") for e in entries)}
    peers = bfd[0] if bfd else []
    if ospf.get("spfLastExecutedMsecs", hold) < hold:
        return f"the next SPF run would be held back (last {ospf['spfLastExecutedMsecs']} ms ago)"
    if len(full) < want.adjacencies:
        return f"{len(full)} adjacencies Full of {want.adjacencies}"
    if unrouted := sorted(want.prefixes - selected):
        return f"no OSPF route to {', '.join(unrouted)}"
    up = [p for p in peers if p.get("status") == "up"]
    if len(up) < want.bfd_peers or len(up) < len(peers):
        return f"{len(up)} BFD sessions up of {max(want.bfd_peers, len(peers))}"
    return None


def _router_lsas(answer: list[Any]) -> list[dict[str, Any]]:
    return _live(answer[2].get("routerLinkStates", {}))


def _network_lsas(answer: list[Any]) -> list[dict[str, Any]]:
    return _live(answer[3].get("networkLinkStates", {}))


def _live(states: dict[str, Any]) -> list[dict[str, Any]]:
    """The LSAs SPF uses: not those at MaxAge, which are being flushed (the network-LSA
    of a13's DR while the link was down stays about a minute after it returns)."""
    lsas = [lsa for area in states.get("areas", {}).values() for lsa in area]
    return [lsa for lsa in lsas if lsa.get("lsaAge", 0) < MAX_AGE]


def _headers(answer: list[Any]) -> frozenset[tuple[str, str, str, str]]:
    return frozenset(
        (lsa["lsaType"], lsa["linkStateId"], lsa["advertisingRouter"], lsa["lsaSeqNumber"])
        for lsa in _router_lsas(answer) + _network_lsas(answer)
    )


def _database_lags(answer: list[Any], transit: dict[str, int], want: Converged) -> str | None:
    """Each router's LSA lists its shared networks as transit; each shared network's LSA
    (from its DR) lists every router on it."""
    listed = {
        lsa["advertisingRouter"]: sum(
            1 for link in lsa.get("routerLinks", {}).values() if link["linkType"] == TRANSIT
        )
        for lsa in _router_lsas(answer)
    }
    if listed != transit:
        return f"router-LSAs list {listed} transit networks, not {transit}"
    attached = tuple(sorted(len(lsa.get("attchedRouters", {})) for lsa in _network_lsas(answer)))
    if attached != want.shared:
        return f"network-LSAs list {attached} routers, not {want.shared}"
    return None
