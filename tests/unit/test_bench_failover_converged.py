"""When the failover lab's OSPF network has converged: what the topology lets one expect,
and FRR's answers judged against it (answers shaped as FRR 8.4's JSON, taken from a lab
of examples/ospf-triangle.yaml: one converged, one caught while r1's and r2's LSAs did
not yet list their adjacency on a12, a state in which a run lost the whole outage)."""

from __future__ import annotations

from typing import Any

from vnet.bench.failover import EXAMPLE
from vnet.bench.failover.converged import expected, judge
from vnet.bench.failover.scenario import load, variant

IDS = {"r1": "10.51.1.254", "r2": "10.51.12.2", "r3": "10.51.3.254"}
LANS = {"r1": "10.51.1.0/24", "r3": "10.51.3.0/24"}
# network -> (DR, routers on it); r1-r2 on a12, r2-r3 on a23, r1-r3 on a13
SHARED = {"a12": ("r2", ["r1", "r2"]), "a23": ("r2", ["r2", "r3"]), "a13": ("r3", ["r1", "r3"])}
NETS = {"a12": "10.51.12.0/24", "a23": "10.51.23.0/24", "a13": "10.51.13.0/24", **LANS}


def router_lsa(name: str, seq: str, stub: tuple[str, ...] = ()) -> dict[str, Any]:
    links = {
        f"link{k}": {"linkType": "Stub Network" if net in stub else "a Transit Network"}
        for k, net in enumerate(n for n, (_, on) in SHARED.items() if name in on)
    }
    return {
        "lsaType": "router-LSA", "linkStateId": IDS[name], "advertisingRouter": IDS[name],
        "lsaSeqNumber": seq, "routerLinks": links,
    }  # fmt: skip


def network_lsa(net: str) -> dict[str, Any]:
    dr, on = SHARED[net]
    return {
        "lsaType": "network-LSA", "linkStateId": IDS[dr], "advertisingRouter": IDS[dr],
        "lsaSeqNumber": "80000001", "attchedRouters": {IDS[r]: {} for r in on},
    }  # fmt: skip


def answers(name: str, lsas: list[dict[str, Any]], spf_ago: int = 9000) -> list[Any]:
    mine = {n for n, (_, on) in SHARED.items() if name in on} | ({name} & set(LANS))
    routes = {prefix: [{"selected": n not in mine}] for n, prefix in NETS.items()}
    neighbors = {
        IDS[other]: [{"nbrState": "Full/DR"}]
        for _, on in SHARED.values()
        if name in on
        for other in on
        if other != name
    }
    ospf = {
        "routerId": IDS[name], "holdtimeMinMsecs": 50, "holdtimeMultplier": 2,
        "holdtimeMaxMsecs": 5000, "spfLastExecutedMsecs": spf_ago,
    }  # fmt: skip
    out = [
        ospf,
        {"neighbors": neighbors},
        {"routerLinkStates": {"areas": {"0.0.0.0": [x for x in lsas if "routerLinks" in x]}}},
        {"networkLinkStates": {"areas": {"0.0.0.0": [x for x in lsas if "attchedRouters" in x]}}},
        routes,
    ]
    if name != "r2":
        out.append([{"status": "up"}, {"status": "up"}])  # BFD on a13, OSPFv2 and v3
    return out


CONVERGED = [
    router_lsa("r1", "80000007"),
    router_lsa("r2", "80000006"),
    router_lsa("r3", "80000008"),
    *(network_lsa(n) for n in SHARED),
]


def test_the_triangle_converged_shows_its_adjacencies_in_every_database() -> None:
    want = expected(variant(load(EXAMPLE), "bfd"))
    assert want.shared == (2, 2, 2)
    r1, r2 = want.routers["r1"], want.routers["r2"]
    assert (r1.host, r1.adjacencies, r1.transit, r1.bfd_peers) == ("h1", 2, 2, 2)
    assert r1.prefixes == {"10.51.23.0/24", "10.51.3.0/24"}
    assert (r2.adjacencies, r2.transit, r2.bfd_peers) == (2, 2, 0)
    assert r2.prefixes == {"10.51.13.0/24", "10.51.1.0/24", "10.51.3.0/24"}
    assert judge({n: answers(n, CONVERGED) for n in IDS}, want) is None


def test_a_run_waits_while_lsas_do_not_list_an_adjacency_yet_or_differ() -> None:
    """Caught in a lab: every adjacency Full and every route there, but r2's LSA in r1's
    database still had a12 as a stub (and r1's in r2's), so a cut of a13 left r1 no way."""
    want = expected(variant(load(EXAMPLE), "bfd"))
    stale = [
        router_lsa("r1", "80000006", stub=("a12",)),
        router_lsa("r2", "80000005", stub=("a12",)),
        *CONVERGED[2:],
    ]
    assert judge({n: answers(n, stale) for n in IDS}, want) == (
        "router-LSAs list {'10.51.1.254': 1, '10.51.12.2': 1, '10.51.3.254': 2} transit "
        "networks, not {'10.51.1.254': 2, '10.51.12.2': 2, '10.51.3.254': 2}"
    )
    flooding = {n: answers(n, CONVERGED if n != "r1" else stale) for n in IDS}
    assert judge(flooding, want) == "the routers' LSAs differ (still flooding)"
    spf_held = {n: answers(n, CONVERGED, spf_ago=20 if n == "r3" else 9000) for n in IDS}
    assert judge(spf_held, want) == "r3: the next SPF run would be held back (last 20 ms ago)"
    bfd_down = {n: answers(n, CONVERGED) for n in IDS}
    bfd_down["r1"][-1] = [{"status": "up"}, {"status": "down"}]
    assert judge(bfd_down, want) == "r1: 1 BFD sessions up of 2"
    assert judge({n: answers(n, CONVERGED) for n in ("r1", "r3")}, want) == "no answer from r2"
    starting = {n: answers(n, CONVERGED) for n in IDS}
    starting["r2"][0] = {}  # an answer without the instance's fields
    assert judge(starting, want) == "r2: OSPF is not running yet"


def test_lsas_being_flushed_are_not_the_network() -> None:
    """After the link returns, the network-LSA r1 made for a13 while it was alone there
    stays at MaxAge for about a minute: SPF ignores it, and so does the wait."""
    want = expected(variant(load(EXAMPLE), "bfd"))
    flushed = {**network_lsa("a13"), "linkStateId": "10.51.13.1", "lsaAge": 3600}
    flushed["advertisingRouter"], flushed["attchedRouters"] = IDS["r1"], {IDS["r1"]: {}}
    assert judge({n: answers(n, [*CONVERGED, flushed]) for n in IDS}, want) is None
    ageing = {n: answers(n, [*CONVERGED, {**flushed, "lsaAge": 3599}]) for n in IDS}
    assert judge(ageing, want) == "network-LSAs list (1, 2, 2, 2) routers, not (2, 2, 2)"


def test_the_static_baseline_has_nothing_to_wait_for_and_a_crowd_counts_on_dr_and_bdr() -> None:
    base = load(EXAMPLE)
    assert all(v.bfd_peers == 0 for v in expected(variant(base, "ospf")).routers.values())
    static = expected(variant(base, "static"))
    assert static.routers == {}
    assert judge({}, static) is None  # (a run of the baseline once waited for it in vain)
    ends = [{"network": "lan", "ipv4": f"10.0.0.{n}/24", "ospf": {}} for n in (1, 2, 3, 4)]
    crowd = expected(
        {
            "routers": [
                {"name": f"r{n}", "host": "h", "routing": {"protocol": "ospf"}, "interfaces": [e]}
                for n, e in enumerate(ends)
            ]
        }
    )
    assert {v.adjacencies for v in crowd.routers.values()} == {2}
    assert crowd.shared == (4,)
