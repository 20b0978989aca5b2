"""model.yang.paths: the one builder of XPath error and rule paths; a key value holding a
quote still gives a path an XPath parser reads."""

from __future__ import annotations

import pytest
from lxml import etree

from vnet.agent.nacm import rules
from vnet.model.yang.errors import RpcError
from vnet.model.yang.paths import entry_path, key_predicate

NAMESPACES = {
    "vr": "urn:vnet:yang:vnet-router",
    "nacm": "urn:ietf:params:xml:ns:yang:ietf-netconf-acm",
}


def test_key_predicates_quote_what_holds_a_quote() -> None:
    assert key_predicate([("name", "r1")]) == "[vr:name='r1']"
    assert key_predicate([("name", "it's")]) == '[vr:name="it\'s"]'
    assert key_predicate([("router", "r1"), ("up", True)], None) == "[router='r1'][up='true']"
    assert entry_path("routers", "router", "r1") == "/vr:routers/vr:router[vr:name='r1']"


def test_a_nacm_rule_error_names_a_list_with_a_quote_in_a_readable_path() -> None:
    nacm = {"rule-list": [{"name": "ops' list", "rule": [{"name": "r", "path": "/nope"}]}]}
    with pytest.raises(RpcError) as err:
        rules.canonical(nacm)
    path = err.value.path
    assert (
        path
        == "/nacm:nacm/nacm:rule-list[nacm:name=\"ops' list\"]/nacm:rule[nacm:name='r']/nacm:path"
    )
    etree.XPath(path, namespaces=NAMESPACES)  # raises XPathSyntaxError on a broken literal
