"""GET and GETNEXT (and so GETBULK) over every instance the agent serves, in OID order."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable

from vnet.agent.snmp import smi
from vnet.agent.snmp.rows import Key
from vnet.model.mib.oids import OID


class NeedsState(Exception):
    """A request reached kernel state that is not at hand: read it, then answer again."""


class Column:
    """The instances of one columnar object (or one scalar, key (0,)), in OID order.

    A lazy column stands for kernel state not read yet: touching it raises
    NeedsState, so only requests that reach state pay for reading it. A column of `kind`
    holds plain numbers, made values of that kind when served: a state read makes
    thousands of counters, and a request serves a few.
    """

    __slots__ = ("keys", "kind", "lazy", "oid", "values")

    def __init__(
        self,
        oid: OID,
        values: dict[Key, smi.Value] | dict[Key, int],
        lazy: bool = False,
        kind: smi.Kind | None = None,
    ):
        self.oid = oid
        self.values = values
        self.keys = sorted(values)
        self.lazy = lazy
        self.kind = kind

    def at(self, key: Key) -> smi.Value:
        """The value of an instance the column holds."""
        value = self.values[key]
        if isinstance(value, smi.Value):
            return value
        assert self.kind is not None, "a column of plain numbers says their kind"
        return smi.Value(self.kind, value)

    def first(self) -> smi.Varbind | None:
        if self.lazy:
            raise NeedsState
        if not self.keys:
            return None
        key = self.keys[0]
        return (*self.oid, *key), self.at(key)


def lazy(columns: Iterable[Column]) -> list[Column]:
    return [Column(c.oid, {}, lazy=True) for c in columns]


def scalar(oid_without_zero: OID, value: smi.Value) -> Column:
    return Column(oid_without_zero, {(0,): value})


class View:
    """Every instance the agent serves, for GET and GETNEXT (and so GETBULK)."""

    def __init__(self, columns: Iterable[Column]):
        # in OID order whatever order the tables are built in (state spans subtrees 5, 6, 9)
        self.columns = sorted(columns, key=lambda c: c.oid)
        self.oids = [c.oid for c in self.columns]
        for a, b in zip(self.oids, self.oids[1:], strict=False):
            if not a < b or b[: len(a)] == a:
                raise ValueError(f"columns out of order: {a} {b}")

    def _column_of(self, oid: OID) -> tuple[int, Column | None]:
        """The position of the last column at or before `oid`, and that column if it holds `oid`."""
        i = bisect_right(self.oids, oid) - 1
        if i < 0:
            return i, None
        col = self.columns[i]
        return i, (col if oid[: len(col.oid)] == col.oid else None)

    def get(self, oid: OID) -> smi.Value:
        _, col = self._column_of(oid)
        if col is None:
            return smi.NO_SUCH_OBJECT
        if col.lazy:
            raise NeedsState
        key = oid[len(col.oid) :]
        return col.at(key) if key in col.values else smi.NO_SUCH_INSTANCE

    def next(self, oid: OID) -> smi.Varbind | None:
        """The first instance after `oid`, or None (endOfMibView)."""
        i, col = self._column_of(oid)
        if col is not None:
            if col.lazy:
                raise NeedsState
            n = len(col.oid)
            j = bisect_right(col.keys, oid[n:])
            if j < len(col.keys):
                key = col.keys[j]
                return (*col.oid, *key), col.at(key)
        for later in self.columns[i + 1 :]:
            found = later.first()
            if found is not None:
                return found
        return None
