"""What the agent makes of the kernel's link notifications (vnet.agent.underlay),
and how an underlay event reads in NETCONF and SNMP, on messages and trees built here."""

from __future__ import annotations

from typing import Any

from lxml import etree

from vnet.agent.datastore.events import Event, UnderlayEvent
from vnet.agent.netconf.notifications import notification_xml
from vnet.agent.snmp import smi
from vnet.agent.snmp.notify import underlay_varbinds
from vnet.agent.underlay import UnderlayWatcher
from vnet.model.mib import oids
from vnet.model.yang.guarantees import UNDERLAY
from vnet.model.yang.module import NAMESPACE
from vnet.substrate.rtquery import IFF_LOWER_UP, IFF_UP, LinkBrief

RUNNING = IFF_UP | IFF_LOWER_UP


class _Running:
    """What the watcher asks of the datastore: the running configuration."""

    def __init__(self, underlay: list[str]):
        self.tree = {UNDERLAY: {"interface": [{"name": n} for n in underlay]}}

    def running_snapshot(self) -> dict[str, Any]:
        return self.tree


def _watcher(underlay: list[str]) -> UnderlayWatcher:
    return UnderlayWatcher(_Running(underlay), None)  # type: ignore[arg-type]


def test_only_a_change_of_a_watched_interface_is_an_event() -> None:
    w = _watcher(["ul0"])
    # the first word of each interface is its state, not a change
    assert w.heard([LinkBrief(4, RUNNING, "ul0"), LinkBrief(5, RUNNING, "eth9")]) == []
    assert w.heard([LinkBrief(4, RUNNING, "ul0")]) == []  # the same state again
    assert w.heard([LinkBrief(5, IFF_UP, "eth9")]) == []  # not an underlay interface
    [down] = w.heard([LinkBrief(4, IFF_UP, "ul0")])  # carrier lost, still set up
    assert (down.interface, down.index, down.up, down.admin_up) == ("ul0", 4, False, True)
    [up] = w.heard([LinkBrief(4, RUNNING, "ul0")])
    assert (up.up, up.admin_up) == (True, True)
    [deleted] = w.heard([LinkBrief(4, 0, "ul0")])
    assert (deleted.up, deleted.admin_up) == (False, False)


def test_an_interface_named_under_underlay_later_is_watched_from_then_on() -> None:
    w = _watcher([])
    assert w.heard([LinkBrief(4, RUNNING, "ul0")]) == []
    w.ds.tree = {UNDERLAY: {"interface": [{"name": "ul0"}]}}  # type: ignore[attr-defined]
    assert [e.up for e in w.heard([LinkBrief(4, IFF_UP, "ul0")])] == [False]


def test_the_netconf_notification_names_the_interface_and_its_state() -> None:
    class Everyone:
        def may_read_underlay(self, user: str | None, running: Any, name: str) -> bool:
            return user != "tenant"

    event = UnderlayEvent("ul0", 4, up=False, admin_up=True)
    xml = notification_xml(event, Everyone(), "admin", {})  # type: ignore[arg-type]
    assert xml is not None
    el = etree.fromstring(xml)
    assert el.tag == f"{{{NAMESPACE}}}underlay-event"
    assert el.findtext(f"{{{NAMESPACE}}}interface") == "ul0"
    assert el.findtext(f"{{{NAMESPACE}}}oper-status") == "down"
    assert notification_xml(event, Everyone(), "tenant", {}) is None  # type: ignore[arg-type]
    assert not isinstance(event, Event)


def test_the_snmp_notification_is_if_mibs_link_down_and_up() -> None:
    down = dict(underlay_varbinds(UnderlayEvent("ul0", 4, up=False, admin_up=True), 100))
    assert down == {
        oids.SYS_UPTIME: smi.timeticks(100),
        oids.SNMP_TRAP_OID: smi.object_id(oids.LINK_DOWN),
        (*oids.IF_ENTRY, oids.IF_INDEX, 4): smi.integer(4),
        (*oids.IF_ENTRY, oids.IF_ADMIN_STATUS, 4): smi.integer(1),  # up
        (*oids.IF_ENTRY, oids.IF_OPER_STATUS, 4): smi.integer(2),  # down
        (*oids.IF_X_NAME, 4): smi.octets("ul0"),
    }
    up = dict(underlay_varbinds(UnderlayEvent("ul0", 4, up=True, admin_up=True), 100))
    assert up[oids.SNMP_TRAP_OID] == smi.object_id(oids.LINK_UP)
    assert up[(*oids.IF_ENTRY, oids.IF_OPER_STATUS, 4)] == smi.integer(1)
