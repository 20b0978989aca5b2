"""The service's use of the planner: plans made inside a ledger transaction, their time
counted as "path", and the ledger's refusals turned into the API's rejections.

The planning copy of the ledger is rebuilt from SQL (`ledger.held_by_direction`, one
aggregate query) in the transaction that then reserves; `ledger.reserve` re-checks under the
links' row locks, and a refusal there (another request or controller won the race) gets one
more plan over what is held now before the request is rejected.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from sqlalchemy.orm import Session

from vnet.controller import planner
from vnet.controller.admission.admit import Policy
from vnet.controller.agents.realise import HostChange
from vnet.controller.db import ledger
from vnet.controller.db.models import Connection, ReservationRole
from vnet.controller.errors import Rejected
from vnet.controller.inventory import Inventory, usable_bps
from vnet.controller.service.database import planning_clock
from vnet.model.controller_api import ConnectionRequest, Shortfall
from vnet.model.host_guarantees import ConnectionPieces, Locator

Plan = planner.Plan
T = TypeVar("T")


@dataclass(frozen=True)
class HostPieces:
    """A plan's pieces and locators per host, as `steps` takes them."""

    pieces: dict[str, ConnectionPieces]
    locators: dict[str, tuple[Locator, ...]]

    @classmethod
    def of(cls, changes: tuple[HostChange, ...] | list[HostChange]) -> HostPieces:
        pieces = {c.host: c.put[0] for c in changes if c.put}
        return cls(pieces, {c.host: tuple(c.locators) for c in changes})


def timed(session: Session, make: Callable[[], Plan]) -> Plan:
    """`make()`, its seconds counted as path computation."""
    return timed_any(session, make)


def timed_any(session: Session, work: Callable[[], T]) -> T:
    started = time.perf_counter()
    try:
        return work()
    finally:
        planning_clock(session)["path"] += time.perf_counter() - started


def rejection(refused: ledger.Refused) -> Rejected:
    shortfalls = [
        Shortfall(
            link=s.link,
            direction=s.direction,
            requested_bps=s.requested_bps,
            free_bps=max(s.free_bps, 0),
            missing_bps=s.missing_bps,
        )
        for s in refused.shortfalls
    ]
    return Rejected(f"no capacity: {refused}", shortfalls, field="bandwidth")


def reserve_planned(
    session: Session,
    inv: Inventory,
    conn: Connection,
    make: Callable[[Mapping[tuple[str, bool], int]], Plan],
    *,
    generation: int,
    role: ReservationRole,
    replacing: int | None = None,
) -> Plan:
    """Plan over what is held now and reserve the plan's demands; on a lost race, plan once
    more; then reject naming each link direction that lacks capacity."""
    for attempt in (1, 2):
        held = ledger.held_by_direction(session)
        plan = timed(session, lambda held=held: make(held))  # type: ignore[misc]
        try:
            ledger.reserve(
                session,
                conn,
                plan.demands,
                usable_bps,
                generation=generation,
                role=role,
                replacing=replacing,
            )
            return plan
        except ledger.Refused as refused:
            if attempt == 2:
                raise rejection(refused) from None
    raise AssertionError("unreachable")


def plan_new(
    inv: Inventory, tenant: str, request: ConnectionRequest, conn: Connection, policy: Policy
) -> Callable[[Mapping[tuple[str, bool], int]], Plan]:
    def make(held: Mapping[tuple[str, bool], int]) -> Plan:
        return planner.plan_connection(
            inv,
            held,
            tenant,
            request,
            conn.id,
            conn.number,
            policy,
        )

    return make


def request_of(conn: Connection, **changes: object) -> ConnectionRequest:
    """The request a stored connection stands for (on its current path), with `changes`."""
    fields = {
        "name": conn.name,
        "a": conn.a,
        "b": conn.b,
        "protocol": conn.protocol,
        "src_port": conn.src_port,
        "dst_port": conn.dst_port,
        "bandwidth": conn.bandwidth_bps,
        "bidirectional": conn.bidirectional,
        "path": [h["host"] for h in conn.hops] or conn.path,
        "packet_size": conn.packet_size,
    }
    return ConnectionRequest.model_validate({**fields, **changes})


def current_pieces(inv: Inventory, tenant: str, conn: Connection, policy: Policy) -> HostPieces:
    """The pieces the connection's current generation has on each host (what the agents
    should hold), derived again by the planner from its stored path; nothing is checked
    again (the connection was admitted there, and holds its capacity). Remembered with the
    inventory's topology (a drain asks it of every connection it moves, a reconcile of every
    connection on a host): the pieces depend on nothing else the key leaves out."""
    request = request_of(conn)

    def derive() -> HostPieces:
        plan = planner.plan_connection(
            inv, {}, tenant, request, conn.id, conn.number, policy, admitted=True
        )
        return HostPieces.of(plan.changes)

    return inv.pieces.derived(_current_key(tenant, conn, request), derive)


def remember_current(inv: Inventory, tenant: str, conn: Connection, plan: Plan) -> None:
    """`plan` is the connection's current generation now (recorded): what `current_pieces`
    would derive again from its stored path, remembered as the planner made it."""
    key = _current_key(tenant, conn, request_of(conn))
    inv.pieces.derived(key, lambda: HostPieces.of(plan.changes))


def _current_key(tenant: str, conn: Connection, request: ConnectionRequest) -> Hashable:
    return ("current", tenant, conn.id, conn.number, request.model_dump_json())


def record_plan(conn: Connection, plan: Plan) -> None:
    conn.hops = [h.model_dump() for h in plan.hops]
    conn.segments = [str(s) for s in plan.segments]
