"""GET and GETNEXT (and so GETBULK) over every instance the agent serves, in OID order."""

from __future__ import annotations

import time
from bisect import bisect_left, bisect_right, insort
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from vnet.agent.snmp import smi
from vnet.agent.snmp.rows import Key
from vnet.model.mib.oids import OID


class NeedsState(Exception):
    """A request reached kernel state that is not at hand, or too old: read it, then answer
    again. `vr`: the index of the one VR whose state it is (None: every VR's); `config`:
    the state was read before the configuration changed (read that of the VRs it changed)."""

    def __init__(self, vr: int | None = None, config: bool = False):
        super().__init__(vr, config)
        self.vr, self.config = vr, config


# whether the state an instance is made of may be served (None), or must be read first
Freshness = Callable[[Key], NeedsState | None]


ONE_BY_ONE = 3  # VRs whose state a request reads one by one, before it reads every VR's
T = TypeVar("T")


@dataclass(frozen=True)
class Reading:
    """One pass over a request that began at `since` (time.monotonic): the VRs whose state
    it reads first (`wanted`, indexes; empty: none; None: every VR's, and then it serves
    that state as it is: the last pass), and whether it reads that of the VRs the
    configuration changed since the last read (`config`)."""

    since: float
    wanted: frozenset[int] | None = frozenset()
    config: bool = False

    @property
    def last(self) -> bool:
        return self.wanted is None

    def after(self, need: NeedsState) -> Reading:
        """The next pass: the changed VRs' state read, or one more VR's, or, for a request
        that reaches many VRs (a walk) or every VR's state, every VR's (also when what was
        read does not do: each pass reads more, so the passes end)."""
        if need.config and not self.config:
            return Reading(self.since, self.wanted, config=True)
        wanted = self.wanted
        if need.vr is None or wanted is None or need.vr in wanted or len(wanted) >= ONE_BY_ONE:
            return Reading(self.since, None)
        return Reading(self.since, self.wanted | {need.vr}, self.config)


class Column:
    """The instances of one columnar object (or one scalar, key (0,)), in OID order.

    A lazy column stands for kernel state not read yet: touching it raises
    NeedsState, so only requests that reach state pay for reading it. A column with
    `fresh` asks it for each instance it serves (per VR: one VR's state is read again,
    not every VR's). A column of `kind` holds plain numbers, made values of that kind when
    served: a state read makes thousands of counters, and a request serves a few.
    """

    __slots__ = ("fresh", "keys", "kind", "lazy", "oid", "values")

    def __init__(
        self,
        oid: OID,
        values: dict[Key, smi.Value] | dict[Key, int],
        lazy: bool = False,
        kind: smi.Kind | None = None,
    ):
        self.oid = oid
        self.values: dict[Key, Any] = values  # smi.Value, or plain numbers of `kind`
        self.keys = sorted(values)
        self.lazy = lazy
        self.kind = kind
        self.fresh: Freshness | None = None

    def checked(self, fresh: Freshness) -> Column:
        """This column (its instances shared), asking `fresh` before it serves one."""
        out = Column.__new__(Column)
        out.oid, out.values, out.keys, out.lazy, out.kind = (
            self.oid,
            self.values,
            self.keys,
            self.lazy,
            self.kind,
        )
        out.fresh = fresh
        return out

    def put(self, key: Key, value: smi.Value | int) -> None:
        """Set an instance, a new one in its place in the order (changed between requests
        only: a view in use never sees it change)."""
        if key not in self.values:
            insort(self.keys, key)
        self.values[key] = value

    def drop(self, key: Key) -> None:
        if self.values.pop(key, None) is not None:
            del self.keys[bisect_left(self.keys, key)]

    def missing(self) -> NeedsState:
        """What a request that reaches a lazy column raises: what `fresh` says (the
        configuration changed since the state was read), or that no state was read."""
        need = self.fresh(()) if self.fresh is not None else None
        return need if need is not None else NeedsState()

    def at(self, key: Key) -> smi.Value:
        """The value of an instance the column holds."""
        if self.fresh is not None and (need := self.fresh(key)) is not None:
            raise need
        value = self.values[key]
        if isinstance(value, smi.Value):
            return value
        assert self.kind is not None, "a column of plain numbers says their kind"
        return smi.Value(self.kind, value)

    def first(self) -> smi.Varbind | None:
        if self.lazy:
            raise self.missing()
        if not self.keys:
            return None
        key = self.keys[0]
        return (*self.oid, *key), self.at(key)


async def read_through(views: Callable[[Reading], Awaitable[View]], ask: Callable[[View], T]) -> T:
    """`ask` answered over the view `views` gives for each pass of a request: a pass that
    reaches kernel state that is missing or old (NeedsState) is followed by one that reads
    it first (Reading.after), the last of which reads every VR's and serves it."""
    reading = Reading(time.monotonic())
    while True:
        try:
            return ask(await views(reading))
        except NeedsState as need:
            if reading.last:  # it serves what it read: a bug, answered genErr
                raise RuntimeError("kernel state still missing after reading it") from None
            reading = reading.after(need)


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
            raise col.missing()
        key = oid[len(col.oid) :]
        return col.at(key) if key in col.values else smi.NO_SUCH_INSTANCE

    def next(self, oid: OID) -> smi.Varbind | None:
        """The first instance after `oid`, or None (endOfMibView)."""
        i, col = self._column_of(oid)
        if col is not None:
            if col.lazy:
                raise col.missing()
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
