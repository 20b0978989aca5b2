"""The `underlay` and `srv6` containers of vnet-router (RFC 7951) <-> HostConfig fields.

`host.py` calls these for the whole tree; the CLI and clients use the per-entry
functions to show one connection. Field names map one to one, '-' for '_'.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from vnet.model.errors import Loc
from vnet.model.host_guarantees import (
    ConnectionPieces,
    Srv6OnHost,
    UnderlayInterface,
)
from vnet.model.yang.module import PREFIX, qualified
from vnet.model.yang.paths import key_predicate

UNDERLAY = qualified("underlay")
SRV6 = qualified("srv6")
_RATES = {"rate", "ceil", "reserved", "bandwidth"}  # uint64: a string in RFC 7951
# model field -> YANG name, where they differ beyond '_' -> '-'
_YANG_NAMES = {"classes": "class", "segments": "segment", "locators": "locator"}
_MODEL_NAMES = {v: k for k, v in _YANG_NAMES.items()}
# the ConnectionPieces of a connection entry parsed before, or None
KnownConnection = Callable[[dict[str, Any]], ConnectionPieces | None]


def underlay_of(tree: dict[str, Any]) -> list[dict[str, Any]]:
    return list(tree.get(UNDERLAY, {}).get("interface", []))


def connections_of(tree: dict[str, Any]) -> list[dict[str, Any]]:
    return list(tree.get(SRV6, {}).get("connection", []))


def locators_of(tree: dict[str, Any]) -> list[dict[str, Any]]:
    return list(tree.get(SRV6, {}).get("locator", []))


def _model(entry: dict[str, Any]) -> dict[str, Any]:
    """A YANG list entry as model data: names with '_', nested lists too; no state."""
    out: dict[str, Any] = {}
    for yname, value in entry.items():
        if yname.endswith("statistics"):
            continue
        field = _MODEL_NAMES.get(yname, yname.replace("-", "_"))
        if isinstance(value, list) and value and isinstance(value[0], dict):
            value = [_model(v) for v in value]
        out[field] = value
    return out


def _yang(data: dict[str, Any]) -> dict[str, Any]:
    """Model data (mode="json", no None) as a YANG list entry."""
    out: dict[str, Any] = {}
    for field, value in data.items():
        if value is None or value == []:
            continue
        yname = _YANG_NAMES.get(field, field.replace("_", "-"))
        if isinstance(value, list) and isinstance(value[0], dict):
            value = [_yang(v) for v in value]
        elif field in _RATES:
            value = str(value)
        out[yname] = value
    return out


def guarantees_data(tree: dict[str, Any], known: KnownConnection | None = None) -> dict[str, Any]:
    """HostConfig's `underlay` and `srv6` fields as plain data (pydantic parses them), but
    for the connections `known` gives as model objects (pydantic takes those as they are)."""
    return {
        "underlay": [_model(i) for i in underlay_of(tree)],
        "srv6": {
            "locators": [_model(x) for x in locators_of(tree)],
            "connections": [_known_or_model(c, known) for c in connections_of(tree)],
        },
    }


def _known_or_model(
    entry: dict[str, Any], known: KnownConnection | None
) -> ConnectionPieces | dict[str, Any]:
    conn = known(entry) if known is not None else None
    return conn if conn is not None else _model(entry)


def interface_entry(itf: UnderlayInterface) -> dict[str, Any]:
    return _yang(itf.model_dump(mode="json"))


def connection_entry(conn: ConnectionPieces) -> dict[str, Any]:
    return _yang(conn.model_dump(mode="json"))


def connection_of(entry: dict[str, Any]) -> ConnectionPieces:
    """The ConnectionPieces a `connection` list entry describes (pydantic's error if not)."""
    return ConnectionPieces.model_validate(_model(entry))


def guarantees_tree(underlay: list[UnderlayInterface], srv6: Srv6OnHost) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if underlay:
        out[UNDERLAY] = {"interface": [interface_entry(i) for i in underlay]}
    container: dict[str, Any] = {}
    if srv6.locators:
        container["locator"] = [_yang(x.model_dump(mode="json")) for x in srv6.locators]
    if srv6.connections:
        container["connection"] = [connection_entry(c) for c in srv6.connections]
    if container:
        out[SRV6] = container
    return out


# -- error paths -----------------------------------------------------------------

_KEYS = {
    "interface": ("name",),
    "class": ("network",),
    "locator": ("prefix",),
    "connection": ("name",),
    "ingress": ("router", "destination"),
    "transit": ("sid",),
    "egress": ("sid",),
}


def guarantees_path(loc: Loc, tree: dict[str, Any]) -> str:
    """("srv6", "connections", 0, "ingress", 1, "lan_network") -> /vr:srv6/vr:connection[...]/..."""
    p = PREFIX
    if loc[0] == "underlay":
        path, node, rest = f"/{p}:underlay", tree.get(UNDERLAY, {}), ("interfaces", *loc[1:])
    else:
        path, node, rest = f"/{p}:srv6", tree.get(SRV6, {}), loc[1:]
    while rest:
        name = _YANG_NAMES.get(str(rest[0]), str(rest[0]).replace("_", "-"))
        name = name.removesuffix("s") if name in ("interfaces", "connections") else name
        path += f"/{p}:{name}"
        if len(rest) < 2 or not isinstance(rest[1], int):
            break
        entries = node.get(name, []) if isinstance(node, dict) else []
        if rest[1] >= len(entries) or name not in _KEYS:
            break
        node = entries[rest[1]]
        path += key_predicate((k, node.get(k, "")) for k in _KEYS[name])
        rest = rest[2:]
    return path
