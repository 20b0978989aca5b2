"""The <edit-config> one host's agent gets for the changes of one or more requests.

Each connection put is one `connection` list entry with nc:operation="replace": the
entry becomes exactly the pieces given (created if absent), never a field-by-field
merge with what was there. A deleted connection is an entry with nc:operation="remove"
(no error when it is already gone: a retried release stays harmless). Locators merge.
The entries are encoded by the model's own YANG codec (vnet.model.yang.guarantees).
"""

from __future__ import annotations

from collections.abc import Iterable
from xml.sax.saxutils import escape

from lxml import etree

from vnet.controller.agents.changes import HostChange
from vnet.model.host_guarantees import Srv6OnHost
from vnet.model.yang.encode import to_xml
from vnet.model.yang.guarantees import SRV6, guarantees_tree
from vnet.model.yang.module import NAMESPACE
from vnet.model.yang.module import NETCONF_NS as NC
from vnet.model.yang.schema import root


def touched(change: HostChange) -> set[str]:
    """The connection names a change puts or deletes."""
    return {c.name for c in change.put} | set(change.delete)


def edit_xml(changes: Iterable[HostChange]) -> str:
    """One `srv6` element carrying every change (of one host); the changes must not
    touch the same connection twice (the caller groups only disjoint ones)."""
    changes = list(changes)
    locators = {x.prefix: x for c in changes for x in c.locators}
    pieces = [p for c in changes for p in c.put]
    tree = guarantees_tree([], Srv6OnHost(locators=list(locators.values()), connections=pieces))
    value = tree.get(SRV6, {})
    element = etree.fromstring(to_xml("srv6", value, root().children["srv6"]))
    for entry in element.iterchildren(f"{{{NAMESPACE}}}connection"):
        entry.set(f"{{{NC}}}operation", "replace")
    for name in (n for c in changes for n in c.delete):
        element.append(
            etree.fromstring(
                f'<connection xmlns="{NAMESPACE}" xmlns:nc="{NC}" nc:operation="remove">'
                f"<name>{escape(name)}</name></connection>"
            )
        )
    return etree.tostring(element, encoding=str)
