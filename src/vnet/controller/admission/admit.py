"""Admission: a request in, a decision out (the ledger changes only on `Admitted`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from fractions import Fraction

from vnet.controller.admission.cost import DEFAULT_MARGIN, Encapsulation, link_cost
from vnet.controller.admission.ledger import Demand, Ledger, Reservation
from vnet.controller.admission.network import Arc
from vnet.controller.admission.paths import Rejection, Route, check_explicit, find_route


@dataclass(frozen=True)
class Policy:
    """The controller's admission settings."""

    margin: Fraction = DEFAULT_MARGIN
    encapsulation: Encapsulation = field(default_factory=Encapsulation)

    def cost_of(self, demand: Demand) -> Callable[[int], int]:
        """hops -> bit/s per arc for this demand."""

        def cost_at(hops: int) -> int:
            return link_cost(
                demand.bandwidth, demand.packet_size, self.encapsulation, hops, self.margin
            )

        return cost_at


@dataclass(frozen=True)
class Request:
    connection: str
    demand: Demand
    path: tuple[str, ...] | None = None  # explicit path of hosts, None: the controller chooses


@dataclass(frozen=True)
class Admitted:
    reservation: Reservation
    moves: tuple[Move, ...] = ()  # connections moved to make room (rearrangement)


@dataclass(frozen=True)
class Move:
    """A make-before-break move: `connection` goes from one path to another."""

    connection: str
    old: Reservation
    new: Reservation


def check_demand(ledger: Ledger, demand: Demand) -> Rejection | None:
    """Bad input, before any path is looked at."""
    hosts = ledger.view.hosts
    for name, host in (("source", demand.source), ("destination", demand.destination)):
        if host not in hosts:
            return Rejection("unknown-host", f"{name}: unknown host {host!r}", field=name)
    if demand.bandwidth <= 0:
        return Rejection(
            "bad-request",
            f"bandwidth {demand.bandwidth} bit/s: must be positive",
            field="bandwidth",
        )
    if demand.packet_size <= 0:
        return Rejection(
            "bad-request",
            f"packet size {demand.packet_size}: must be positive",
            field="packet_size",
        )
    return None


def route(
    ledger: Ledger,
    request: Request,
    policy: Policy,
    excluded: Iterable[Arc] = (),
    explain: bool = True,
) -> Route | Rejection:
    """Where the request would go in this ledger, or why it cannot."""
    demand = request.demand
    bad = check_demand(ledger, demand)
    if bad is not None:
        return bad
    cost_at = policy.cost_of(demand)
    if request.path is None:
        return find_route(ledger, demand.source, demand.destination, cost_at, excluded, explain)
    path = list(request.path)
    if not path or path[0] != demand.source or path[-1] != demand.destination:
        return Rejection(
            "bad-request",
            f"path {path} must start at the source {demand.source!r} and end at the"
            f" destination {demand.destination!r}",
            field="path",
        )
    return check_explicit(ledger, path, cost_at)


def admit(
    ledger: Ledger, request: Request, policy: Policy, generation: int = 1
) -> Admitted | Rejection:
    """Admit a new connection (or a new generation of one): reserve its path, or say why not."""
    found = route(ledger, request, policy)
    if isinstance(found, Rejection):
        return found
    reservation = Reservation(
        request.connection, generation, request.demand, found.path, found.arcs, found.cost
    )
    ledger.reserve(reservation)
    return Admitted(reservation)


def modify(ledger: Ledger, request: Request, policy: Policy) -> Admitted | Rejection:
    """Make-before-break: reserve the new generation while the old one still counts.

    The caller realises the new path, then calls `ledger.finish_move`; on failure it
    releases the new generation. Either way the old one is released exactly once.
    """
    old = ledger.current(request.connection)
    if old is None:
        return Rejection(
            "unknown-connection",
            f"connection {request.connection!r} holds no reservation",
            field="connection",
        )
    return admit(ledger, request, policy, old.generation + 1)
