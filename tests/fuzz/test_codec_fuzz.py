"""The YANG codecs under arbitrary input: JSON bodies decode to a tree or an RpcError,
trees of any valid host configuration come back as the same configuration, and XML
from a tree reads back as the same tree."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from vnet.model import TopologyError
from vnet.model.check import check_host
from vnet.model.host import HostConfig, NetworkOnHost
from vnet.model.topology import VirtualNetwork, VirtualRouter
from vnet.model.yang import host as codec
from vnet.model.yang.decode import parse_json, tree_from_json
from vnet.model.yang.errors import ErrorTag, RpcError

MEMBERS = [
    "vnet-router:routers",
    "vnet-router:virtual-networks",
    "router",
    "network",
    "name",
    "index",
    "interface",
    "ipv4",
    "ipv6",
    "admin-state",
    "route",
    "destination",
    "next-hop",
    "vni",
    "tenant",
    "ipv4-prefix",
    "mtu",
    "bandwidth",
    "x",
]
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(), st.text(max_size=12)
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(
            st.one_of(st.sampled_from(MEMBERS), st.text(max_size=8)), inner, max_size=4
        ),
    ),
    max_leaves=30,
)


@given(st.dictionaries(st.sampled_from([*MEMBERS[:2], "y:z"]), json_values, max_size=2))
def test_any_json_body_decodes_or_is_refused_with_an_rpc_error(data: dict[str, Any]) -> None:
    try:
        tree = tree_from_json(parse_json(json.dumps(data)))
    except RpcError as err:
        assert err.message
        return
    try:
        check_host(codec.host_config(tree, "h1"))
    except TopologyError as err:
        assert err.problems


@given(st.binary(max_size=200))
def test_any_bytes_parse_as_json_or_are_refused(body: bytes) -> None:
    """Refused as malformed-message (never another exception), or read as Python's own JSON
    reader reads it."""
    try:
        parsed = parse_json(body)
    except RpcError as err:
        assert err.tag == ErrorTag.MALFORMED_MESSAGE and err.message, err
    else:
        assert parsed == json.loads(body), (body, parsed)


def router(i: int, net: str, ip: int, admin: str) -> VirtualRouter:
    return VirtualRouter.model_validate(
        {
            "name": f"r{i}",
            "host": "h1",
            "index": i + 1,
            "admin_state": admin,
            "interfaces": [{"name": "eth0", "network": net, "ipv4": f"10.{i}.0.{ip}/24"}],
        }
    )


@given(
    st.lists(
        st.tuples(st.integers(1, 254), st.sampled_from(["up", "down"]), st.booleans()),
        max_size=6,
    ),
    st.one_of(st.none(), st.integers(1280, 9000)),
)
def test_host_configurations_round_trip_through_their_tree(
    vrs: list[tuple[int, str, bool]], mtu: int | None
) -> None:
    nets = [
        VirtualNetwork(name=f"n{i}", tenant="t", vni=i + 1, ipv4=f"10.{i}.0.0/24", mtu=mtu)
        for i in range(len(vrs))
    ]
    routers = [router(i, f"n{i}", ip, admin) for i, (ip, admin, _) in enumerate(vrs)]
    hc = HostConfig(host="h1", networks=[NetworkOnHost(network=n) for n in nets], routers=routers)
    back = codec.host_config(codec.tree(hc), "h1")
    assert back.networks == hc.networks
    assert [r.model_dump() for r in back.routers] == [r.model_dump() for r in hc.routers]
