"""vnet's marks on kernel objects, and how a namespace is named in state and text.

Namespace None means "the namespace vnet itself runs in" (an agent on a real host).
"""

from __future__ import annotations

from typing import Literal

NsName = str | None
Role = Literal["host", "router", "endhost", "mgmt"]

# Routes and rules vnet installs carry this protocol number (ip route ... proto 118),
# which is how vnet recognises its own and leaves others alone.
RTPROT_VNET = 118
MARK = "vnet"


def ns_label(ns: NsName) -> str:
    return ns if ns is not None else "-"


def ns_from_label(label: str) -> NsName:
    return None if label == "-" else label


def ip_cmd(ns: NsName, family: int | None = None) -> str:
    """The iproute2 prefix an operation prints as: `ip -n NS [-4|-6]`."""
    fam = {4: " -4", 6: " -6"}.get(family or 0, "")
    return (f"ip -n {ns}" if ns else "ip") + fam


def tc_cmd(ns: NsName) -> str:
    return f"tc -n {ns}" if ns else "tc"
