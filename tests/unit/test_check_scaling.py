"""Checking a topology grows with its size, not with its size squared (issue 17, finding 4).

The work is counted, not timed: how many shortest-path searches the bandwidth
checks start, how many (link, network) pairs they weigh, how many subnet pairs
the overlap check compares. `vnet bench agent --parts topology` times the whole check.
"""

from __future__ import annotations

import ipaddress
import random
from ipaddress import ip_network
from typing import Any

import networkx
import pytest

from vnet.model import Topology, TopologyError, build_topology
from vnet.model import qos as qos_module
from vnet.model.check import check, subnet_overlaps
from vnet.model.topology import VirtualNetwork

HOSTS = 1500


def tree_lab(n: int) -> dict[str, Any]:
    """n hosts in a 4-ary tree of rated links, a VR and a network per host, one rated network."""
    networks = [
        {"name": f"n{i}", "tenant": "t", "vni": 1000 + i, "ipv4": f"10.{i // 256}.{i % 256}.0/24"}
        for i in range(n)
    ]
    networks.append(
        {"name": "core", "tenant": "t", "vni": 9, "ipv4": "172.16.0.0/24", "bandwidth": "1mbit"}
    )
    routers = [
        {
            "name": f"r{i}",
            "host": f"h{i}",
            "interfaces": [{"network": f"n{i}", "ipv4": f"10.{i // 256}.{i % 256}.1/24"}]
            + ([{"network": "core", "ipv4": f"172.16.0.{i + 1}/24"}] if i < 3 else []),
        }
        for i in range(n)
    ]
    return {
        "name": "big",
        "hosts": [{"name": f"h{i}"} for i in range(n)],
        "links": [{"a": f"h{(i - 1) // 4}", "b": f"h{i}", "rate": "1gbit"} for i in range(1, n)],
        "tenants": [{"name": "t", "routing": "static"}],
        "networks": networks,
        "routers": routers,
    }


@pytest.fixture(scope="module")
def big() -> Topology:
    return Topology.model_validate(tree_lab(HOSTS))


def test_paths_are_searched_only_from_hosts_of_rated_networks(big, monkeypatch):
    searches: list[str] = []
    real = networkx.single_source_shortest_path

    def counted(graph, source, *args, **kwargs):  # type: ignore[no-untyped-def]
        searches.append(source)
        return real(graph, source, *args, **kwargs)

    monkeypatch.setattr(networkx, "single_source_shortest_path", counted)
    assert check(big) == []
    assert sorted(set(searches)) == ["h0", "h1", "h2"]  # the hosts of "core", once each
    assert len(searches) == 3


def test_link_classes_weigh_only_networks_on_the_link(big, monkeypatch):
    weighed = 0
    real = qos_module.network_ceil

    def counted(net, link):  # type: ignore[no-untyped-def]
        nonlocal weighed
        weighed += 1
        return real(net, link)

    monkeypatch.setattr(qos_module, "network_ceil", counted)
    shares = qos_module.link_shares(big)
    # core crosses the links h0-h1 and h0-h2; every rated link has its management class
    assert weighed == 2
    assert len(shares) == HOSTS - 1
    assert sorted(j for j, s in shares.items() if len(s) == 2) == [0, 1]


def test_subnet_overlaps_compare_no_pairs(big, monkeypatch):
    compared = 0
    real = ipaddress._BaseNetwork.overlaps

    def counted(self, other):  # type: ignore[no-untyped-def]
        nonlocal compared
        compared += 1
        return real(self, other)

    monkeypatch.setattr(ipaddress._BaseNetwork, "overlaps", counted)
    assert check(big) == []
    assert compared < HOSTS  # all pairs would be over a million


def _brute_force(nets: list[VirtualNetwork]) -> dict[int, list[tuple[str, str]]]:
    out: dict[int, list[tuple[str, str]]] = {}
    for i, net in enumerate(nets):
        for fam in ("ipv4", "ipv6"):
            mine = getattr(net, fam)
            for other in nets[:i]:
                theirs = getattr(other, fam)
                both = mine is not None and theirs is not None and other.tenant == net.tenant
                if both and mine.overlaps(theirs):
                    out.setdefault(i, []).append((fam, other.name))
    return out


@pytest.mark.parametrize("seed", range(20))
def test_subnet_overlaps_match_all_pairs(seed):
    rng = random.Random(seed)
    nets = []
    for i in range(60):
        v4 = ip_network(f"10.{rng.randrange(4)}.{rng.randrange(4)}.0/24").supernet(
            new_prefix=rng.choice([16, 20, 23, 24])
        )
        v6 = ip_network(f"fd00:{rng.randrange(3)}::/64").supernet(new_prefix=rng.choice([48, 64]))
        nets.append(
            VirtualNetwork(
                name=f"n{i}",
                tenant=rng.choice(["a", "b"]),
                vni=i + 1,
                ipv4=v4 if rng.random() < 0.8 else None,
                ipv6=v6 if rng.random() < 0.5 else None,
            )
        )
    found = {i: [(f, n.name) for f, n in pairs] for i, pairs in subnet_overlaps(nets).items()}
    assert found == _brute_force(nets)


def test_overlap_is_still_reported_at_the_later_network():
    data = tree_lab(3)
    data["networks"][2]["ipv4"] = "10.0.0.0/16"
    with pytest.raises(TopologyError) as err:
        build_topology(data)
    problems = err.value.problems
    assert [(p.loc, p.message) for p in problems if p.loc[0] == "networks"] == [
        (
            ("networks", 2, "ipv4"),
            "10.0.0.0/16 overlaps 10.0.0.0/24 of network 'n0' in the same tenant 't'",
        ),
        (
            ("networks", 2, "ipv4"),
            "10.0.0.0/16 overlaps 10.0.1.0/24 of network 'n1' in the same tenant 't'",
        ),
    ]
