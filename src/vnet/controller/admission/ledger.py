"""The reservation ledger: what each connection holds on each arc (in memory).

This is the model of what the database holds. A reservation is keyed by
(connection, generation): a make-before-break move reserves generation g+1 while
g still exists, so both paths count until the move ends, and then releases g.
Releasing is exactly once: a second release of the same key is an error, not a
silent no-op, so a retried move can neither free capacity twice (open-kilda#919)
nor forget the old path (nova bug 1820588 leaked it).

Every change checks before it writes: a reservation that does not fit raises
`OverAdmission` and leaves the ledger unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from vnet.controller.admission.network import Arc, NetworkView


class LedgerError(ValueError):
    """A reserve/release that does not match what the ledger holds."""


class OverAdmission(LedgerError):
    """A reservation would take more than an arc's capacity."""

    def __init__(self, arc: Arc, label: str, shortfall: int):
        super().__init__(f"{label} lacks {shortfall} bit/s")
        self.arc = arc
        self.shortfall = shortfall


@dataclass(frozen=True)
class Demand:
    """What a connection asks for, enough to route it again when it moves."""

    source: str  # host
    destination: str  # host
    bandwidth: int  # bit/s at the tenant's packets
    packet_size: int = 1500


@dataclass(frozen=True)
class Reservation:
    connection: str
    generation: int
    demand: Demand
    path: tuple[str, ...]  # hosts
    arcs: tuple[Arc, ...]
    cost: int  # bit/s on each arc


class Ledger:
    def __init__(self, view: NetworkView):
        self.view = view
        self._held: dict[tuple[str, int], Reservation] = {}
        self._used: dict[Arc, int] = {}

    @classmethod
    def of_books(cls, view: NetworkView, held: Iterable[Reservation]) -> Ledger:
        """A ledger holding `held` as the books say, unchecked: the database is the truth,
        and what it holds may exceed a capacity that was lowered since."""
        ledger = cls(view)
        for r in held:
            ledger._held[(r.connection, r.generation)] = r
            for arc in r.arcs:
                ledger._used[arc] = ledger.used(arc) + r.cost
        return ledger

    def copy(self) -> Ledger:
        """An independent ledger to try changes on (rearrangement)."""
        other = Ledger(self.view)
        other._held = dict(self._held)
        other._used = dict(self._used)
        return other

    def used(self, arc: Arc) -> int:
        return self._used.get(arc, 0)

    def residual(self, arc: Arc) -> int:
        return self.view.capacity(arc) - self.used(arc)

    def reservations(self) -> list[Reservation]:
        return list(self._held.values())

    def of(self, connection: str) -> list[Reservation]:
        """The connection's reservations, oldest generation first (two during a move)."""
        return sorted(
            (r for r in self._held.values() if r.connection == connection),
            key=lambda r: r.generation,
        )

    def current(self, connection: str) -> Reservation | None:
        held = self.of(connection)
        return held[-1] if held else None

    def reserve(self, reservation: Reservation) -> None:
        key = (reservation.connection, reservation.generation)
        if key in self._held:
            raise LedgerError(f"connection {key[0]!r} generation {key[1]} is already reserved")
        older = self.current(reservation.connection)
        if older is not None and older.generation >= reservation.generation:
            raise LedgerError(
                f"connection {key[0]!r}: generation {key[1]} is not newer than {older.generation}"
            )
        self._check_fits(reservation.arcs, reservation.cost)
        self._held[key] = reservation
        for arc in reservation.arcs:
            self._used[arc] = self.used(arc) + reservation.cost

    def _check_fits(self, arcs: Iterable[Arc], cost: int) -> None:
        arcs = list(arcs)
        if len(set(arcs)) != len(arcs):
            raise LedgerError(f"a path crosses an arc twice: {[self.view.label(a) for a in arcs]}")
        for arc in arcs:
            if cost > self.residual(arc):
                raise OverAdmission(arc, self.view.label(arc), cost - self.residual(arc))

    def release(self, connection: str, generation: int) -> Reservation:
        """Give back one generation's capacity; exactly once."""
        held = self._held.pop((connection, generation), None)
        if held is None:
            raise LedgerError(
                f"connection {connection!r} generation {generation} holds nothing"
                " (never reserved, or released already)"
            )
        for arc in held.arcs:
            self._used[arc] -= held.cost
            if self._used[arc] == 0:
                del self._used[arc]
        return held

    def release_all(self, connection: str) -> list[Reservation]:
        return [self.release(r.connection, r.generation) for r in self.of(connection)]

    def finish_move(self, connection: str) -> Reservation:
        """End a make-before-break move: release every generation but the newest."""
        held = self.of(connection)
        if len(held) < 2:
            raise LedgerError(f"connection {connection!r} is not moving")
        for old in held[:-1]:
            self.release(old.connection, old.generation)
        return held[-1]
