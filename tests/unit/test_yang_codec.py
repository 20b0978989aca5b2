"""The one codec (model/yang) and the clients' VR mapping, without a server."""

from __future__ import annotations

import json

import pytest
from lxml import etree

from vnet.client.routers import RouterState
from vnet.model import VirtualRouter
from vnet.model.yang import decode, encode
from vnet.model.yang.errors import (
    ErrorTag,
    ErrorType,
    RpcError,
    netconf_error_xml,
    parse_restconf_error,
    restconf_error_json,
)
from vnet.model.yang.host import router_entry
from vnet.model.yang.schema import root

ROUTERS = root().children["routers"]


def test_error_tags_are_an_enumeration() -> None:
    err = RpcError(ErrorTag.DATA_EXISTS, "r1 exists")
    assert err.tag is ErrorTag.DATA_EXISTS and err.error_type is ErrorType.APPLICATION
    assert err.http_status == 409
    for free_string in ("data-exists", "no-such-tag"):
        with pytest.raises(TypeError):
            RpcError(free_string, "x")  # type: ignore[arg-type]
    xml = etree.fromstring(netconf_error_xml(err))
    assert xml.findtext("error-tag") == "data-exists"


def test_tree_to_xml_and_back_is_the_same_tree() -> None:
    tree = {
        "vnet-router:routers": {
            "router": [{"index": 2, "name": "r1", "interface": [{"name": "eth0", "network": "n1"}]}]
        }
    }
    xml = etree.fromstring(f"<data>{encode.tree_to_xml(tree)}</data>")
    (routers,) = xml
    assert [c.tag.split("}")[1] for c in routers[0]] == ["name", "index", "interface"]
    assert {"vnet-router:routers": decode.element_value(routers, ROUTERS)} == tree


def test_identityrefs_declare_their_module_prefix() -> None:
    state = {"ietf-netconf-monitoring:netconf-state": {"schemas": {"schema": [
        {"identifier": "m", "version": "1", "format": "ietf-netconf-monitoring:yang",
         "namespace": "urn:m"}
    ]}}}  # fmt: skip
    xml = etree.fromstring(encode.tree_to_xml(state))
    fmt = xml.find(".//{*}format")
    assert fmt.text == "ietf-netconf-monitoring:yang"
    assert fmt.nsmap["ietf-netconf-monitoring"].endswith("ietf-netconf-monitoring")


def test_client_router_mapping_round_trips() -> None:
    vr = VirtualRouter.model_validate(
        {
            "name": "r1",
            "host": "h1",
            "index": 4,
            "interfaces": [{"network": "n1", "name": "eth0", "ipv4": "10.1.0.1/24"}],
            "routes": [{"to": "10.9.0.0/16", "via": "10.1.0.254"}],
        }
    )
    entry = router_entry(vr)
    state = RouterState.from_entry({**entry, "oper-state": "running", "uptime": "5"}, "h1")
    assert state.router == vr and state.oper_state == "running" and state.uptime == 5


def test_restconf_errors_parse_back_to_the_same_error() -> None:
    err = RpcError(ErrorTag.DATA_MISSING, "no r9", ErrorType.APPLICATION, info={"k": "v"})
    back = parse_restconf_error(json.loads(restconf_error_json(err, "/vnet-router:routers")))
    assert (back.tag, back.message, back.path, back.info) == (
        ErrorTag.DATA_MISSING,
        "no r9",
        "/vnet-router:routers",
        {"k": "v"},
    )
