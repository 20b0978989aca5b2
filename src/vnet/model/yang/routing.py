"""The `routing` container of a router and the `ospf` container of an interface <-> the model.

YANG names are the model's field names with hyphens (router-id, min-rx),
except the leaf-list `family` for the model's `families`; uint16/uint8 leaves
come as numbers in RFC 7951 and decimal strings from XML, and pydantic reads both.
"""

from __future__ import annotations

from typing import Any

from vnet.model.routing import Bfd, InterfaceOspf, Routing
from vnet.model.yang.module import PREFIX

_RENAMED = {"families": "family"}  # model field -> YANG name, where not just hyphens


def _yang_name(field: str) -> str:
    return _RENAMED.get(field, field.replace("_", "-"))


def _field(yname: str) -> str:
    inverse = {v: k for k, v in _RENAMED.items()}
    return inverse.get(yname, yname.replace("-", "_"))


def routing_data(entry: dict[str, Any]) -> dict[str, Any]:
    """The model's data of a `routing` container (its state subtree is not configuration)."""
    return {_field(k): v for k, v in entry.items() if k != "state"}


def ospf_data(entry: dict[str, Any]) -> dict[str, Any]:
    data = {_field(k): v for k, v in entry.items() if k != "bfd"}
    if "bfd" in entry:
        data["bfd"] = {_field(k): v for k, v in entry["bfd"].items()}
    return data


def routing_entry(r: Routing) -> dict[str, Any]:
    out: dict[str, Any] = {"protocol": r.protocol}
    if r.router_id is not None:
        out["router-id"] = str(r.router_id)
    if r.families is not None:
        out["family"] = list(r.families)
    return out


def ospf_entry(o: InterfaceOspf) -> dict[str, Any]:
    out: dict[str, Any] = {"area": o.area, "hello": o.hello, "dead": o.dead}
    if o.cost is not None:
        out["cost"] = o.cost
    if o.passive:
        out["passive"] = True
    if o.bfd is not None:
        out["bfd"] = bfd_entry(o.bfd)
    return out


def bfd_entry(b: Bfd) -> dict[str, Any]:
    return {"min-rx": b.min_rx, "min-tx": b.min_tx, "multiplier": b.multiplier}


def yang_steps(loc: tuple[str | int, ...]) -> str:
    """('ospf', 'bfd', 'min_rx') -> '/vr:ospf/vr:bfd/vr:min-rx' (a problem's place in the tree)."""
    return "".join(f"/{PREFIX}:{_yang_name(str(part))}" for part in loc if isinstance(part, str))
