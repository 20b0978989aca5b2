"""The model under arbitrary topologies: build_topology returns a Topology or raises a
TopologyError (every problem located), nothing else; subnet overlaps are all found."""

from __future__ import annotations

from ipaddress import ip_network
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from vnet.model import TopologyError, build_topology
from vnet.model.check import subnet_overlaps
from vnet.model.topology import VirtualNetwork

junk = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**40), 2**40),
    st.text(max_size=20),
    st.lists(st.integers(), max_size=2),
)
names = st.one_of(
    st.sampled_from(["h1", "h2", "r1", "r2", "n1", "n2", "t", "lo"]), st.text(max_size=20)
)
prefixes = st.one_of(
    st.sampled_from(["10.0.0.0/24", "10.0.0.0/16", "10.0.1.0/24", "fd00::/64", "fd00::/48"]), junk
)
addresses = st.one_of(
    st.sampled_from(["10.0.0.1/24", "10.0.0.0/24", "10.0.1.1/24", "fd00::1/64", "10.0.0.2/16"]),
    junk,
)


def maybe(d: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    """Each key present or left out, with a value from its strategy."""
    return st.fixed_dictionaries({}, optional=d)


hosts = st.lists(maybe({"name": names}), max_size=3)
links = st.lists(
    maybe({"a": names, "b": names, "rate": st.one_of(st.just("1gbit"), junk)}), max_size=3
)
networks = st.lists(
    maybe(
        {
            "name": names,
            "tenant": names,
            "vni": st.one_of(st.integers(0, 2**25), junk),
            "ipv4": prefixes,
            "ipv6": prefixes,
            "mtu": st.one_of(st.integers(0, 10000), junk),
            "bandwidth": st.one_of(st.sampled_from(["10mbit", "1gbit", "0"]), junk),
        }
    ),
    max_size=3,
)
interfaces = st.lists(maybe({"network": names, "ipv4": addresses, "ipv6": addresses}), max_size=3)
routers = st.lists(
    maybe({"name": names, "host": names, "interfaces": interfaces, "index": junk}), max_size=3
)
topologies = maybe(
    {
        "name": st.one_of(st.just("lab"), junk),
        "hosts": hosts,
        "links": links,
        "tenants": st.lists(
            maybe({"name": names, "routing": st.sampled_from(["auto", "static", "x"])}), max_size=2
        ),
        "networks": networks,
        "routers": routers,
        "endhosts": st.lists(
            maybe({"name": names, "host": names, "network": names, "ipv4": addresses}), max_size=2
        ),
    }
)


@given(topologies)
def test_any_topology_is_built_or_refused_with_located_problems(data: dict[str, Any]) -> None:
    try:
        build_topology(data)
    except TopologyError as err:
        assert err.problems
        assert all(isinstance(p.loc, tuple) and p.message for p in err.problems)


v4_blocks = st.builds(
    lambda a, plen: ip_network((a, 32)).supernet(new_prefix=plen),
    st.integers(0x0A000000, 0x0A0003FF),
    st.integers(20, 32),
)


@given(st.lists(st.tuples(v4_blocks, st.sampled_from("ab")), max_size=25))
def test_subnet_overlaps_are_exactly_the_overlapping_pairs(blocks: list[Any]) -> None:
    nets = [
        VirtualNetwork(name=f"n{i}", tenant=t, vni=i + 1, ipv4=b) for i, (b, t) in enumerate(blocks)
    ]
    found = {(i, o.name) for i, pairs in subnet_overlaps(nets).items() for _, o in pairs}
    expected = {
        (i, nets[k].name)
        for i in range(len(nets))
        for k in range(i)
        if nets[k].tenant == nets[i].tenant and nets[k].ipv4.overlaps(nets[i].ipv4)
    }
    assert found == expected
