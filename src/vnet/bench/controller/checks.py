"""The integrity checks of every run, from the controller's public answers alone.

- Over-admission: on every link direction, what the held reservations add up to
  (`reserved_bps`, every generation counted during make-before-break) stays within the
  link's capacity, and the free capacity the controller reports is never negative.
- Leaks: after the removes every direction is back to 0 reserved and no connection the
  round created is still live (nova bug 1820588 and open-kilda#919 are this kind of bug).

A violation fails the run; the result records how many there were and the notes name them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from vnet.model.controller_api import ConnectionView, LinkView


@dataclass(frozen=True)
class Violation:
    kind: str  # "over-admission" or "leak"
    where: str  # link and direction, or connection
    detail: str

    def __str__(self) -> str:
        return f"{self.kind} on {self.where}: {self.detail}"


def over_admission(links: Sequence[LinkView]) -> list[Violation]:
    """Every link direction holding more than the link's capacity, or reporting negative free."""
    found = []
    for link in links:
        for d in link.directions:
            where = f"link {link.name} ({d.direction})"
            if d.reserved_bps > link.capacity_bps:
                over = d.reserved_bps - link.capacity_bps
                detail = f"{d.reserved_bps} bit/s held on {link.capacity_bps} ({over} over)"
                found.append(Violation("over-admission", where, detail))
            elif d.free_bps < 0:
                found.append(Violation("over-admission", where, f"free {d.free_bps} bit/s"))
    return found


def leaks(
    links: Sequence[LinkView], live: Iterable[ConnectionView], ours: Iterable[str]
) -> list[Violation]:
    """Reservations still held after everything was removed, and our connections still live."""
    found = [
        Violation("leak", f"link {link.name} ({d.direction})", f"{d.reserved_bps} bit/s held")
        for link in links
        for d in link.directions
        if d.reserved_bps != 0
    ]
    names = set(ours)
    found += [
        Violation("leak", f"connection {c.tenant}/{c.name}", f"still {c.status}")
        for c in live
        if c.name in names and c.status != "released"
    ]
    return found


def held_bps(links: Sequence[LinkView]) -> int:
    """Everything reserved, over every link direction (the leak's size, when nothing should be)."""
    return sum(d.reserved_bps for link in links for d in link.directions)
