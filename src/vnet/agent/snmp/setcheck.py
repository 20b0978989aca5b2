"""One variable binding of a SET on its own: RFC 3416 section 4.2.5, steps 2 to 7.

In the RFC's order: notWritable (no read-create column under that name),
wrongType, wrongLength, wrongValue (`decode_value`), then noCreation (an
index no row can ever have, `valid_key`).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable

from vnet.agent.snmp import rowstatus as rs
from vnet.agent.snmp import smi
from vnet.agent.snmp.errors import SnmpError
from vnet.agent.snmp.rows import (
    COLUMNS,
    ENTRY,
    IF_TABLE,
    STATUS_COLUMN,
    VR_TABLE,
    Cell,
    Key,
    route_destination,
)
from vnet.model.mib import oids
from vnet.model.mib.oids import OID

_VR_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_\-]*")
_NET_NAME = _VR_NAME
_IF_NAME = re.compile(r"[^/:\s]+")


def writable(oid: OID) -> tuple[str, int, Key] | None:
    """(table, column, raw index) for an OID under a read-create column, else None."""
    for table, entry in ENTRY.items():
        n = len(entry)
        if oid[:n] == entry and len(oid) > n and oid[n] in COLUMNS[table]:
            return table, oid[n], tuple(oid[n + 1 :])
    return None


def _valid_route_key(key: Key) -> bool:
    """vr, type, n, n address bytes, prefix length; no host bits."""
    if len(key) < 4:
        return False
    typ, n = key[1], key[2]
    if (typ, n) not in ((1, 4), (2, 16)) or len(key) != 4 + n:
        return False
    if any(not 0 <= b <= 255 for b in key[3 : 3 + n]):
        return False
    if key[3 + n] > (32 if typ == 1 else 128):
        return False
    net = ipaddress.ip_network(route_destination(key), strict=False)
    return net.network_address.packed == bytes(key[3 : 3 + n])


def valid_key(table: str, key: Key) -> bool:
    if not key or not 1 <= key[0] <= 65535:
        return False
    if table == VR_TABLE:
        return len(key) == 1
    if table == IF_TABLE:
        return len(key) == 2 and 1 <= key[1] <= 64
    return _valid_route_key(key)


def _text(value: smi.Value, index: int, lo: int, hi: int) -> str:
    raw = value.raw
    if value.kind is not smi.Kind.OCTETS or not isinstance(raw, str | bytes):
        raise SnmpError("wrongType", index, "an OCTET STRING is required")
    if not lo <= len(raw) <= hi:
        raise SnmpError("wrongLength", index, f"length must be {lo}..{hi}")
    try:
        text = raw.decode("ascii") if isinstance(raw, bytes) else raw
    except UnicodeDecodeError:
        raise SnmpError("wrongValue", index, "DisplayString must be ASCII") from None
    if any(ord(ch) < 32 for ch in text):
        raise SnmpError("wrongValue", index, "control characters are not allowed")
    return text


Decoder = Callable[[smi.Value, int, Key], Cell]  # value, varbind index, row key -> cell


def _integer(value: smi.Value, index: int) -> int:
    if value.kind is not smi.Kind.INTEGER or not isinstance(value.raw, int):
        raise SnmpError("wrongType", index, "an INTEGER is required")
    return value.raw


def _name(value: smi.Value, index: int, hi: int, pattern: re.Pattern[str], why: str) -> str:
    text = _text(value, index, 1, hi)
    if not pattern.fullmatch(text):
        raise SnmpError("wrongValue", index, why)
    return text


def _row_status(value: smi.Value, index: int, key: Key) -> int:
    v = _integer(value, index)
    try:
        rs.check_settable(v)
    except rs.RowStatusError as err:
        raise SnmpError(err.status, index, err.why) from None
    return v


def _vr_name(value: smi.Value, index: int, key: Key) -> str:
    why = "a name starts with a letter, then letters, digits, '_' or '-'"
    return _name(value, index, 12, _VR_NAME, why)


def _admin_state(value: smi.Value, index: int, key: Key) -> int:
    v = _integer(value, index)
    if v not in (1, 2):
        raise SnmpError("wrongValue", index, "admin state is up(1) or down(2)")
    return v


def _if_name(value: smi.Value, index: int, key: Key) -> str:
    return _name(value, index, 15, _IF_NAME, "no '/', ':' or blanks in names")


def _network(value: smi.Value, index: int, key: Key) -> str:
    return _name(value, index, 32, _NET_NAME, "no such network name")


def _address(version: int) -> Decoder:
    def decode(value: smi.Value, index: int, key: Key) -> str:
        text = _text(value, index, 0, 49)
        if text == "":
            return text
        try:
            itf = ipaddress.ip_interface(text)
        except ValueError:
            raise SnmpError("wrongValue", index, f"{text!r} is no address/prefix-length") from None
        if itf.version != version or "/" not in text:
            raise SnmpError("wrongValue", index, f"{text!r} is no IPv{version} address/length")
        return text

    return decode


def _next_hop(value: smi.Value, index: int, key: Key) -> str:
    text = _text(value, index, 1, 45)
    try:
        hop = ipaddress.ip_address(text)
    except ValueError:
        raise SnmpError("wrongValue", index, f"{text!r} is no IP address") from None
    if len(key) > 1 and hop.version != (4 if key[1] == 1 else 6):
        raise SnmpError("wrongValue", index, "the next hop's family differs from the route's")
    return text


_DECODERS: dict[tuple[str, int], Decoder] = {
    (VR_TABLE, oids.VR_NAME): _vr_name,
    (VR_TABLE, oids.VR_ADMIN): _admin_state,
    (IF_TABLE, oids.IF_NAME): _if_name,
    (IF_TABLE, oids.IF_NETWORK): _network,
    (IF_TABLE, oids.IF_IPV4): _address(4),
    (IF_TABLE, oids.IF_IPV6): _address(6),
}


def decode_value(table: str, col: int, key: Key, value: smi.Value, index: int) -> Cell:
    """Check one variable binding's value (wrongType, wrongLength, wrongValue)."""
    if col == STATUS_COLUMN[table]:
        return _row_status(value, index, key)
    return _DECODERS.get((table, col), _next_hop)(value, index, key)
