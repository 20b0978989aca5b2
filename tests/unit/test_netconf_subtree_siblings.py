"""Subtree filters with several entries of one list (RFC 6241 6.2.5): each selects its own."""

from __future__ import annotations

from lxml import etree

from vnet.agent.netconf.subtree import apply_filter

NS = "urn:vnet:yang:vnet-router"


def test_sibling_list_selections_each_select_their_entry() -> None:
    data = etree.fromstring(
        f'<routers xmlns="{NS}">'
        + "".join(f"<router><name>r{i}</name><index>{i}</index></router>" for i in range(1, 5))
        + "</routers>"
    )
    wanted = etree.fromstring(
        f'<filter><routers xmlns="{NS}"><router><name>r2</name></router>'
        "<router><name>r4</name></router></routers></filter>"
    )
    (routers,) = apply_filter([data], wanted)
    assert [r.findtext(f"{{{NS}}}name") for r in routers] == ["r2", "r4"]
    assert routers[1].findtext(f"{{{NS}}}index") == "4"


def test_prune_keeps_what_the_filter_can_select_and_changes_nothing() -> None:
    from vnet.agent.netconf.subtree import prune_tree

    tree = {
        "vnet-router:routers": {"router": [{"name": f"r{i}"} for i in range(1, 1001)]},
        "vnet-router:virtual-networks": {"network": [{"name": "n1"}]},
        "ietf-yang-library:yang-library": {},
    }
    wanted = etree.fromstring(
        f'<filter><routers xmlns="{NS}"><router><name>r7</name></router></routers></filter>'
    )
    pruned = prune_tree(tree, wanted, {"r7"})
    assert pruned == {"vnet-router:routers": {"router": [{"name": "r7"}]}}
    assert len(tree["vnet-router:routers"]["router"]) == 1000  # the datastore's tree unchanged
    assert prune_tree(tree, None, None) is tree  # no filter: everything
    everything = etree.fromstring(f'<filter><routers xmlns="{NS}"/></filter>')
    assert len(prune_tree(tree, everything, None)["vnet-router:routers"]["router"]) == 1000
