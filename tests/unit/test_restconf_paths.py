"""RESTCONF resource identifiers -> schema steps, and error paths (no root needed)."""

from __future__ import annotations

import pytest

from vnet.agent.restconf.paths import json_path, parse
from vnet.model.yang.errors import RpcError


def test_routers_router_interface() -> None:
    p = parse("vnet-router:routers/router=r1/interface=eth0")
    assert [s.name for s in p.steps] == ["routers", "router", "interface"]
    assert [s.node.kind for s in p.steps] == ["container", "list", "list"]
    assert p.steps[0].keys is None
    assert p.steps[1].keys == {"name": "r1"}
    assert p.steps[2].keys == {"name": "eth0"}
    assert p.xpath() == "/vr:routers/vr:router[vr:name='r1']/vr:interface[vr:name='eth0']"
    assert p.uri() == "vnet-router:routers/router=r1/interface=eth0"


def test_datastore_and_slashes() -> None:
    assert parse("").is_datastore
    assert parse("/").is_datastore
    p = parse("/vnet-router:virtual-networks/")
    assert [s.name for s in p.steps] == ["virtual-networks"]


def test_percent_encoded_key_holds_a_slash() -> None:
    p = parse("vnet-router:routers/router=r1/route=10.0.0.0%2F8")
    assert p.steps[-1].keys == {"destination": "10.0.0.0/8"}
    assert p.uri().endswith("route=10.0.0.0%2F8")  # encoded again for Location
    assert p.xpath().endswith("/vr:route[vr:destination='10.0.0.0/8']")


def test_later_nodes_may_repeat_the_module() -> None:
    p = parse("vnet-router:routers/vnet-router:router=r1/admin-state")
    assert [s.name for s in p.steps] == ["routers", "router", "admin-state"]
    assert p.node.kind == "leaf"


def _err(raw: str) -> RpcError:
    with pytest.raises(RpcError) as info:
        parse(raw)
    assert info.value.http_status == 400, info.value
    return info.value


def test_first_node_must_name_the_module() -> None:
    err = _err("routers/router=r1")
    assert err.tag == "invalid-value"
    assert "vnet-router:routers" in err.message


def test_wrong_module() -> None:
    err = _err("vnet-routr:routers")
    assert err.tag == "unknown-namespace"
    assert "vnet-routr" in err.message


def test_unknown_node_names_the_parent_and_what_it_has() -> None:
    err = _err("vnet-router:routers/router=r1/interfaces=eth0")
    assert err.tag == "unknown-element"
    assert err.path == "/vr:routers/vr:router[vr:name='r1']"
    assert "'interfaces'" in err.message and "interface" in err.message


def test_unknown_top_level_node() -> None:
    err = _err("vnet-router:routerz")
    assert err.tag == "unknown-element"
    assert "routers" in err.message  # says what exists


def test_notification_is_not_a_data_node() -> None:
    assert _err("vnet-router:router-event").tag == "unknown-element"


def test_list_without_key() -> None:
    err = _err("vnet-router:routers/router")
    assert "router=<name>" in err.message


def test_too_many_keys() -> None:
    err = _err("vnet-router:routers/router=a,b")
    assert "1 key" in err.message and "2 value" in err.message


def test_key_on_a_container_and_on_a_leaf() -> None:
    assert "takes no key" in _err("vnet-router:routers=x").message
    assert "takes no key" in _err("vnet-router:routers/router=r1/index=3").message


def test_child_of_a_leaf() -> None:
    err = _err("vnet-router:routers/router=r1/index/foo")
    assert err.tag == "unknown-element"
    assert "leaf" in err.message


def test_empty_segment() -> None:
    assert "empty path segment" in _err("vnet-router:routers//router=r1").message


def test_json_path_form() -> None:
    assert (
        json_path("/vr:routers/vr:router[vr:name='r1']/vr:interface[vr:name='eth0']/vr:network")
        == "/vnet-router:routers/router[name='r1']/interface[name='eth0']/network"
    )
    assert json_path("/vr:routers/vr:router[vr:name='vr:x']") == (
        "/vnet-router:routers/router[name='vr:x']"  # quoted values are left alone
    )
    assert json_path("/") == "/"
    assert json_path(None) is None
