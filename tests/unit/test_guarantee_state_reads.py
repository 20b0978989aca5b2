"""A <get> reads the kernel counters of what its filter can select, and only those: the
controller's utilisation poll asks for the underlay alone every second, and reading every
connection's ingress classes with it held the agent's kernel thread (which its commits
share) for a tenth of a second per poll with 100 connections."""

from __future__ import annotations

from typing import Any

import pytest
from lxml import etree

from vnet.agent.datastore.guarantee_state import read_counters, with_counters
from vnet.agent.netconf.subtree import selected_tops
from vnet.model.yang.guarantees import SRV6 as SRV6_KEY
from vnet.model.yang.guarantees import UNDERLAY as UNDERLAY_KEY
from vnet.model.yang.schema import NAMESPACE
from vnet.substrate import Placement

from .test_host_guarantees import base_tree

PLACEMENT = Placement(scope="agent", prefix="vnet-t-", own_host="h1", endhosts=False)


class RecordingKernel:
    """The kernel calls `read_counters` makes, recorded; every interface has index 1 and
    no classes, every link is up."""

    def __init__(self) -> None:
        self.class_reads: list[tuple[str | None, str]] = []
        self.names: dict[int, tuple[str | None, str]] = {}

    def index(self, ns: str | None, dev: str) -> int:
        self.names[len(self.names) + 1] = (ns, dev)
        return len(self.names)

    def classes(self, ns: str | None, index: int) -> list[Any]:
        self.class_reads.append(self.names[index])
        return []

    def link_brief(self, ns: str | None, name: str) -> Any:
        return None


UNDERLAY = (None, "ul-h2")  # the host's own namespace
INGRESS = ("vnet-t-r1", "eth1")  # the connection's shaper at r1


@pytest.mark.parametrize(
    ("tops", "read"),
    [
        (None, [UNDERLAY, INGRESS]),
        ({"underlay"}, [UNDERLAY]),
        ({"srv6"}, [INGRESS]),
        ({"routers"}, []),
        ({"underlay", "srv6"}, [UNDERLAY, INGRESS]),
    ],
)
def test_only_the_selected_members_counters_are_read(
    tops: set[str] | None, read: list[tuple[str | None, str]]
) -> None:
    kernel = RecordingKernel()
    read_counters(kernel, PLACEMENT, "h1", base_tree(), tops)
    assert kernel.class_reads == read


@pytest.mark.parametrize(
    ("tops", "copied"),
    [(None, {UNDERLAY_KEY, SRV6_KEY}), ({"underlay"}, {UNDERLAY_KEY}), ({"srv6"}, {SRV6_KEY})],
)
def test_only_the_selected_members_are_copied_to_carry_counters(
    tops: set[str] | None, copied: set[str]
) -> None:
    """The running tree is shared, so a member that gets counters is copied first; one the
    request cannot select stays shared (copying every connection's pieces for the
    manager's poll of the underlay held the agent's commits back)."""
    running = base_tree()
    tree = dict(running)
    readings = read_counters(RecordingKernel(), PLACEMENT, "h1", running, tops)
    with_counters(tree, running, readings, PLACEMENT, "h1", tops)
    assert {k for k in (UNDERLAY_KEY, SRV6_KEY) if tree[k] is not running[k]} == copied


@pytest.mark.parametrize(
    ("xml", "tops"),
    [
        (None, None),
        (
            '<filter type="subtree"><underlay xmlns="urn:vnet:yang:vnet-router"/></filter>',
            {"underlay"},
        ),
        (
            f'<filter><srv6 xmlns="{NAMESPACE}"/><routers xmlns="{NAMESPACE}"/></filter>',
            {"srv6", "routers"},
        ),
        ('<filter type="xpath" select="/underlay"/>', None),
        ("<filter/>", set()),
    ],
)
def test_a_filter_names_the_top_level_members_it_can_select(
    xml: str | None, tops: set[str] | None
) -> None:
    element = None if xml is None else etree.fromstring(xml)
    assert selected_tops(element) == tops
