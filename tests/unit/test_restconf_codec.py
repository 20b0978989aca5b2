"""RESTCONF bodies: JSON and XML decoded against the schema, rendered back (no root)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from lxml import etree

from vnet.agent.restconf import codec, resource
from vnet.agent.restconf.paths import parse
from vnet.model.yang import decode, encode
from vnet.model.yang.errors import (
    RESTCONF_NS,
    ErrorTag,
    ErrorType,
    RpcError,
    restconf_error_json,
    restconf_error_xml,
)
from vnet.model.yang.schema import NAMESPACE, root

ROUTERS = root().children["routers"]
ROUTER = ROUTERS.children["router"]

R1: dict[str, Any] = {
    "name": "r1",
    "index": 3,
    "interface": [{"name": "eth0", "network": "n1", "ipv4": "10.1.0.1/24"}],
    "route": [{"destination": "10.9.0.0/16", "next-hop": "10.1.0.254"}],
}
R1_XML = (
    f'<router xmlns="{NAMESPACE}"><name>r1</name><index>3</index>'
    "<interface><name>eth0</name><network>n1</network><ipv4>10.1.0.1/24</ipv4></interface>"
    "<route><destination>10.9.0.0/16</destination><next-hop>10.1.0.254</next-hop></route>"
    "</router>"
)


def dec(body: Any, fmt: str = "json", parent: Any = ROUTERS, path: str = "/vr:routers"):
    raw = json.dumps(body).encode() if fmt == "json" and not isinstance(body, bytes) else body
    return codec.decode(raw, fmt, parent, path)


def err_of(*args: Any, **kw: Any) -> RpcError:
    with pytest.raises(RpcError) as info:
        dec(*args, **kw)
    return info.value


def test_json_router() -> None:
    assert dec({"vnet-router:router": [R1]}) == ("router", [R1])


def test_xml_router_decodes_to_the_same_tree() -> None:
    assert dec(R1_XML.encode(), "xml") == ("router", [R1])


def test_one_bare_object_is_taken_as_one_entry() -> None:
    assert dec({"vnet-router:router": R1}) == ("router", [R1])


def test_uint64_becomes_a_string_and_ints_stay_numbers() -> None:
    body = {"vnet-router:network": [{"name": "n1", "tenant": "a", "vni": 10, "bandwidth": 10**9}]}
    _name, value = dec(
        body, parent=root().children["virtual-networks"], path="/vr:virtual-networks"
    )
    assert value[0]["bandwidth"] == "1000000000"
    assert value[0]["vni"] == 10


def test_missing_key() -> None:
    err = err_of({"vnet-router:router": [{"index": 3}]})
    assert err.tag == "missing-element"
    assert err.info["bad-element"] == "name"


def test_unknown_member_has_its_path() -> None:
    err = err_of(
        {"vnet-router:router": [{"name": "r1", "interface": [{"name": "e", "colour": 1}]}]}
    )
    assert err.tag == "unknown-element"
    assert err.path == "/vr:routers/vr:router[vr:name='r1']/vr:interface[vr:name='e']/vr:colour"


def test_wrong_module_in_body() -> None:
    err = err_of({"other-module:router": [R1]})
    assert err.tag == "unknown-namespace"
    assert err.http_status == 400


def test_unqualified_top_member() -> None:
    err = err_of({"router": [R1]})
    assert err.tag == "invalid-value"
    assert "vnet-router:router" in err.message


def test_state_data_cannot_be_written() -> None:
    err = err_of({"vnet-router:router": [{"name": "r1", "oper-state": "running"}]})
    assert err.tag == "invalid-value"
    assert err.path is not None and err.path.endswith("/vr:oper-state")


def test_wrong_json_types() -> None:
    err = err_of({"vnet-router:router": [{"name": "r1", "index": "3"}]})
    assert "JSON number" in err.message
    err = err_of({"vnet-router:router": [{"name": 5}]})
    assert "JSON string" in err.message
    err = err_of({"vnet-router:router": [{"name": "r1", "index": True}]})
    assert "JSON number" in err.message


def test_duplicate_entries_in_body() -> None:
    err = err_of({"vnet-router:router": [{"name": "r1"}, {"name": "r1"}]})
    assert "two entries" in err.message


def test_body_must_hold_one_member() -> None:
    assert err_of({"vnet-router:router": [R1], "vnet-router:x": 1}).tag == "malformed-message"
    assert err_of([R1]).tag == "malformed-message"


def test_malformed_json_and_xml() -> None:
    assert err_of(b"{bad", "json").tag == "malformed-message"
    assert err_of(b"<router><name>r1</router>", "xml").tag == "malformed-message"


def test_xml_wrong_namespace() -> None:
    err = err_of(b'<router xmlns="urn:other"><name>r1</name></router>', "xml")
    assert err.tag == "unknown-namespace"


def test_xml_unknown_element_and_bad_number() -> None:
    body = f'<router xmlns="{NAMESPACE}"><name>r1</name><colour>red</colour></router>'
    assert err_of(body.encode(), "xml").tag == "unknown-element"
    body = f'<router xmlns="{NAMESPACE}"><name>r1</name><index>three</index></router>'
    err = err_of(body.encode(), "xml")
    assert err.tag == "invalid-value" and "uint16" in err.message


def test_xml_entities_are_not_expanded() -> None:
    body = (
        b'<!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
        b'<router xmlns="urn:vnet:yang:vnet-router"><name>&x;</name></router>'
    )
    try:
        _, value = dec(body, "xml")
    except RpcError:
        return  # refused: nothing leaked
    assert "root:" not in json.dumps(value)


def test_datastore_bodies() -> None:
    data = {"vnet-router:routers": {"router": [R1]}}
    assert dec({"ietf-restconf:data": data}, parent=root(), path="/") == ("", data)
    inner = R1_XML.replace(f' xmlns="{NAMESPACE}"', "")
    xml = (
        '<data xmlns="urn:ietf:params:xml:ns:yang:ietf-restconf">'
        f'<routers xmlns="{NAMESPACE}">{inner}</routers></data>'
    )
    assert dec(xml.encode(), "xml", parent=root(), path="/") == ("", data)


def test_render_xml_round_trip() -> None:
    xml = encode.to_xml("router", [R1], ROUTER).encode()
    assert dec(xml, "xml") == ("router", [R1])
    el = etree.fromstring(xml)
    assert decode.element_value(el, ROUTER) == R1


def test_ordered_puts_keys_and_schema_order_first() -> None:
    messy = {"route": R1["route"], "index": 3, "interface": R1["interface"], "name": "r1"}
    assert list(encode.ordered([messy], ROUTER)[0]) == ["name", "index", "interface", "route"]


def test_media_types() -> None:
    assert codec.response_type(None) == codec.JSON
    assert codec.response_type("*/*") == codec.JSON
    assert codec.response_type("application/yang-data+xml") == codec.XML
    assert codec.response_type("application/yang-data+json;q=0.5, application/xml") == codec.XML
    with pytest.raises(RpcError) as info:
        codec.response_type("text/html")
    assert info.value.http_status == 406
    assert codec.request_format("application/yang-data+json; charset=utf-8") == "json"
    assert codec.request_format("application/yang-data+xml") == "xml"
    with pytest.raises(RpcError) as info:
        codec.request_format("application/x-www-form-urlencoded")
    assert info.value.http_status == 415


def test_error_bodies() -> None:
    err = RpcError(
        ErrorTag.DATA_EXISTS,
        "r1 exists",
        ErrorType.APPLICATION,
        "/vr:routers/vr:router[vr:name='r1']",
    )
    body = json.loads(restconf_error_json(err, "/vnet-router:routers/router[name='r1']"))
    e = body["ietf-restconf:errors"]["error"][0]
    assert e == {
        "error-type": "application",
        "error-tag": "data-exists",
        "error-path": "/vnet-router:routers/router[name='r1']",
        "error-message": "r1 exists",
    }
    x = etree.fromstring(restconf_error_xml(err))
    ns = {"rc": RESTCONF_NS}
    assert x.findtext("rc:error/rc:error-tag", namespaces=ns) == "data-exists"
    path_el = x.find("rc:error/rc:error-path", namespaces=ns)
    assert path_el.text == "/vr:routers/vr:router[vr:name='r1']"
    assert path_el.nsmap["vr"] == NAMESPACE


# -- tree operations ---------------------------------------------------------------
NETS = {"vnet-router:virtual-networks": {"network": [{"name": "n1", "tenant": "a", "vni": 1}]}}


def tree_with(*routers: dict[str, Any]) -> dict[str, Any]:
    t = dict(NETS)
    if routers:
        t["vnet-router:routers"] = {"router": [dict(r) for r in routers]}
    return t


def test_post_creates_and_refuses_duplicates() -> None:
    new, created = resource.post(tree_with(), parse("vnet-router:routers"), "router", [R1])
    assert new["vnet-router:routers"]["router"] == [R1]
    assert created.uri() == "vnet-router:routers/router=r1"
    with pytest.raises(RpcError) as info:
        resource.post(new, parse("vnet-router:routers"), "router", [R1])
    assert info.value.tag == "data-exists" and info.value.http_status == 409


def test_post_into_a_missing_entry_is_404() -> None:
    itf = [{"name": "eth1", "network": "n1"}]
    with pytest.raises(RpcError) as info:
        resource.post(tree_with(), parse("vnet-router:routers/router=r9"), "interface", itf)
    assert info.value.http_status == 404


def test_put_creates_replaces_and_checks_keys() -> None:
    path = parse("vnet-router:routers/router=r1")
    new, created = resource.put(tree_with(), path, "router", [R1])
    assert created and new["vnet-router:routers"]["router"] == [R1]
    new2, created2 = resource.put(new, path, "router", [{"name": "r1"}])
    assert not created2 and new2["vnet-router:routers"]["router"] == [{"name": "r1"}]
    with pytest.raises(RpcError) as info:
        resource.put(new, path, "router", [{"name": "r2"}])
    assert info.value.http_status == 400 and "differs" in info.value.message
    with pytest.raises(RpcError):
        resource.put(new, path, "interface", [{"name": "r1"}])  # body is not the target


def test_merge_deep_and_404() -> None:
    path = parse("vnet-router:routers/router=r1")
    patch = [
        {"name": "r1", "admin-state": "down", "interface": [{"name": "eth1", "network": "n1"}]}
    ]
    new = resource.merge(tree_with(R1), path, "router", patch)
    r = new["vnet-router:routers"]["router"][0]
    assert r["admin-state"] == "down" and r["index"] == 3
    assert [i["name"] for i in r["interface"]] == ["eth0", "eth1"]
    with pytest.raises(RpcError) as info:
        resource.merge(tree_with(), path, "router", patch)
    assert info.value.http_status == 404


def test_delete_and_prune() -> None:
    new = resource.delete(tree_with(R1), parse("vnet-router:routers/router=r1"))
    assert "vnet-router:routers" not in new  # empty containers vanish
    with pytest.raises(RpcError) as info:
        resource.delete(new, parse("vnet-router:routers/router=r1"))
    assert info.value.http_status == 404
    new = resource.delete(tree_with(R1), parse("vnet-router:routers/router=r1/route=10.9.0.0%2F16"))
    assert "route" not in new["vnet-router:routers"]["router"][0]
    with pytest.raises(RpcError):
        resource.delete(tree_with(R1), parse("vnet-router:routers/router=r1/name"))


def random_edit(tree: dict[str, Any], kind: int, name: str) -> dict[str, Any]:
    routers = parse("vnet-router:routers")
    vr = parse(f"vnet-router:routers/router={name}")
    itf = [{"name": "eth0", "network": "n1"}]
    if kind == 0:
        return resource.post(tree, routers, "router", [{**R1, "name": name}])[0]
    if kind == 1:
        return resource.post(tree, vr, "interface", itf)[0]
    if kind == 2:
        return resource.put(tree, vr, "router", [{"name": name, "interface": itf}])[0]
    if kind == 3:
        return resource.merge(tree, vr, "router", [{"name": name, "index": 7}])
    if kind == 4:
        return resource.merge(tree, routers, "routers", {"router": [{"name": name}]})
    if kind == 5:
        return resource.delete(tree, vr)
    route = parse(f"vnet-router:routers/router={name}/route=10.9.0.0%2F16")
    return resource.delete(tree, route)


@pytest.mark.parametrize("seed", range(3))
def test_an_edit_changes_nothing_it_was_given_and_shares_what_it_does_not_touch(
    seed: int,
) -> None:
    """Copy on write over a random history of POST, PUT, PATCH and DELETE of VRs, their
    interfaces and routes: the given tree is never changed (checked against a deep copy
    taken before), the result holds no empty container or list, and a VR the edit does not
    name is the given tree's own object."""
    import copy
    import random

    rng = random.Random(seed)
    tree = tree_with()
    for _ in range(300):
        name = f"r{rng.randrange(6)}"
        before = copy.deepcopy(tree)
        try:
            new = random_edit(tree, rng.randrange(7), name)
        except RpcError:
            assert tree == before
            continue
        assert tree == before, "the edit changed the tree it was given"
        assert new == resource.prune(new), "the edit left an empty container or list"
        old = {r["name"]: r for r in tree.get("vnet-router:routers", {}).get("router", [])}
        for r in new.get("vnet-router:routers", {}).get("router", []):
            if r["name"] != name and r["name"] in old:
                assert r is old[r["name"]], f"{r['name']} was copied"
        tree = new
    assert tree["vnet-router:virtual-networks"] is NETS["vnet-router:virtual-networks"]


def test_get_empty_container_and_missing_entry() -> None:
    assert resource.get(tree_with(), parse("vnet-router:routers")) == ("vnet-router:routers", {})
    with pytest.raises(RpcError) as info:
        resource.get(tree_with(), parse("vnet-router:routers/router=r1"))
    assert info.value.http_status == 404


def test_content_and_depth() -> None:
    state = {
        **R1,
        "oper-state": "running",
        "interface": [{**R1["interface"][0], "oper-status": "up"}],
    }
    tree = tree_with(state)
    config = resource.filter_tree(tree, "config")
    assert config == tree_with(R1)
    nonconfig = resource.filter_tree(tree, "nonconfig")
    assert nonconfig == {
        "vnet-router:routers": {
            "router": [
                {
                    "name": "r1",
                    "oper-state": "running",
                    "interface": [{"name": "eth0", "oper-status": "up"}],
                }
            ]
        }
    }
    assert resource.limit_depth([R1], ROUTER, 1) == [{"name": "r1"}]
    two = resource.limit_depth([R1], ROUTER, 2)
    assert two[0]["index"] == 3 and two[0]["interface"] == [{"name": "eth0"}]
    assert resource.limit_tree(tree_with(R1), 1) == {
        "vnet-router:virtual-networks": {},
        "vnet-router:routers": {},
    }
