"""What the SNMP front-end made of objects that are never changed in place (tree entries,
rows), kept while a request after the next still sees them: remaking every VR's rows and
values for each request after a change was most of SNMP's time with 1000 VRs."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

S = TypeVar("S")  # what something is made of
V = TypeVar("V")  # what is made of it


class Kept(Generic[S, V]):
    """One round (`of` for each object of one tree, then `end`) at a time: an object seen
    again under its key, the same object (identity), gets what was made of it last round;
    the objects a round did not see are forgotten at its end."""

    def __init__(self) -> None:
        self._last: dict[Hashable, tuple[S, V]] = {}
        self._now: dict[Hashable, tuple[S, V]] = {}

    def of(self, key: Hashable, source: S, make: Callable[[S], V]) -> V:
        last = self._last.get(key)
        made = last[1] if last is not None and last[0] is source else make(source)
        self._now[key] = (source, made)
        return made

    def end(self) -> None:
        self._last, self._now = self._now, {}

    def forget(self) -> None:
        self._last, self._now = {}, {}
