"""SNMP values as types: the SMIv2 syntax of a value (RFC 2578) and its pysnmp form.

Everything in the front-end (rows, columns, SET checks, notifications) speaks
`Value`; only `to_pysnmp` and `from_pysnmp` know pysnmp's classes, so the
planning code stays pure and testable without a network.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

from pyasn1.type import univ
from pysnmp.proto import rfc1902, rfc1905

from vnet.model.mib.oids import OID


class Kind(Enum):
    """The syntaxes this agent reads and writes, and RFC 3416's exception values."""

    INTEGER = "INTEGER"  # Integer32, and enumerations such as RowStatus
    OCTETS = "OCTET STRING"
    OBJECT_ID = "OBJECT IDENTIFIER"
    UNSIGNED = "Unsigned32"  # on the wire the same as Gauge32; a SET decodes to this
    GAUGE = "Gauge32"
    COUNTER32 = "Counter32"
    COUNTER64 = "Counter64"
    TIMETICKS = "TimeTicks"
    IP_ADDRESS = "IpAddress"
    OPAQUE = "Opaque"
    NULL = "NULL"
    NO_SUCH_OBJECT = "noSuchObject"
    NO_SUCH_INSTANCE = "noSuchInstance"
    END_OF_MIB_VIEW = "endOfMibView"
    UNKNOWN = "unknown"  # a SET carried a syntax none of the above


Raw = int | str | bytes | OID | None


@dataclass(frozen=True, slots=True)
class Value:
    """One value of a variable binding: its syntax and its Python value.

    OCTETS holds `str` for what the agent serves and `bytes` for what a manager
    wrote (IP_ADDRESS and OPAQUE: bytes too); OBJECT_ID holds a tuple of arcs;
    the exceptions and NULL hold None.
    """

    kind: Kind
    raw: Raw = None


def integer(n: int) -> Value:
    return Value(Kind.INTEGER, n)


def octets(text: str | bytes) -> Value:
    return Value(Kind.OCTETS, text)


def unsigned(n: int) -> Value:
    return Value(Kind.UNSIGNED, n)


def gauge(n: int) -> Value:
    return Value(Kind.GAUGE, n)


def counter32(n: int) -> Value:
    return Value(Kind.COUNTER32, n % 2**32)  # wraps, as a Counter32 does


def counter64(n: int) -> Value:
    return Value(Kind.COUNTER64, n)


def timeticks(n: int) -> Value:
    return Value(Kind.TIMETICKS, n)


def object_id(oid: OID) -> Value:
    return Value(Kind.OBJECT_ID, oid)


NO_SUCH_OBJECT = Value(Kind.NO_SUCH_OBJECT)
NO_SUCH_INSTANCE = Value(Kind.NO_SUCH_INSTANCE)
END_OF_MIB_VIEW = Value(Kind.END_OF_MIB_VIEW)

Varbind = tuple[OID, Value]

# -- pysnmp ---------------------------------------------------------------------

_CLASSES: dict[Kind, Any] = {
    Kind.INTEGER: rfc1902.Integer32,
    Kind.OCTETS: rfc1902.OctetString,
    Kind.OBJECT_ID: rfc1902.ObjectIdentifier,
    Kind.UNSIGNED: rfc1902.Unsigned32,
    Kind.GAUGE: rfc1902.Gauge32,
    Kind.COUNTER32: rfc1902.Counter32,
    Kind.COUNTER64: rfc1902.Counter64,
    Kind.TIMETICKS: rfc1902.TimeTicks,
    Kind.IP_ADDRESS: rfc1902.IpAddress,
    Kind.OPAQUE: rfc1902.Opaque,
}
_SINGLETONS: dict[Kind, Any] = {
    Kind.NULL: univ.Null(""),
    Kind.NO_SUCH_OBJECT: rfc1905.noSuchObject,
    Kind.NO_SUCH_INSTANCE: rfc1905.noSuchInstance,
    Kind.END_OF_MIB_VIEW: rfc1905.endOfMibView,
}
# Gauge32 and Unsigned32 share one tag: what a manager writes reads as UNSIGNED
_BY_TAG = {cls.tagSet: kind for kind, cls in _CLASSES.items() if kind is not Kind.GAUGE} | {
    univ.Null.tagSet: Kind.NULL
}


def to_pysnmp(value: Value) -> Any:
    """The pysnmp object a response or a notification carries for `value`."""
    if value.kind in _SINGLETONS:
        return _SINGLETONS[value.kind]
    if value.kind not in _CLASSES:
        raise ValueError(f"no encoding for {value.kind.value}")
    return _CLASSES[value.kind](value.raw)


def from_pysnmp(obj: Any) -> Value:
    """A value from a SET request; a syntax this agent does not know is Kind.UNKNOWN."""
    kind = _BY_TAG.get(obj.tagSet, Kind.UNKNOWN)
    if kind in (Kind.OCTETS, Kind.IP_ADDRESS, Kind.OPAQUE):
        return Value(kind, obj.asOctets())
    if kind is Kind.OBJECT_ID:
        return Value(kind, tuple(obj))
    if kind in (Kind.NULL, Kind.UNKNOWN):
        return Value(kind)
    return Value(kind, int(obj))


def _oid_size(oid: OID) -> int:
    n = 1
    for arc in oid[2:]:
        n += 1 if arc < 128 else 2 if arc < 16384 else 3 if arc < 2097152 else 5
    return n


def varbind_size(oid: OID, value: Value) -> int:
    """An upper bound on the BER size of one variable binding."""
    if value.kind is Kind.OCTETS:
        assert isinstance(value.raw, str | bytes)
        vsize = len(value.raw) + 4
    elif value.kind is Kind.OBJECT_ID:
        assert isinstance(value.raw, tuple)
        vsize = _oid_size(value.raw) + 4
    else:
        vsize = 11
    return _oid_size(oid) + 4 + vsize + 4
