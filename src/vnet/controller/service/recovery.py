"""Recovery at start: every request a previous run left in flight is finished or undone.

Only requests of controllers that are gone are touched: several controllers may share one
PostgreSQL database, and one that starts must leave the others' requests alone
(liveness.py: each controller holds an advisory lock while it runs).

The journal (db/journal.py) says how far each request got. A request whose journal reached
CONFIRMED had every agent confirm: it is finished as it would have been. Any other was
interrupted before the confirms: each of its hosts is told to cancel a confirmed commit still
pending under the request's persist tokens (an agent whose timeout already rolled back has
nothing pending and is left alone), and the database goes back to where it was before the
request: a create's reservation is released (once) and its connection retired, a modify's
new generation's rows are deleted and the connection stays on its old path, a release leaves the
connection established. Reconciliation (reconcile.py), run right after, then makes every
agent hold exactly what the database says, whatever state the crash left the hosts in.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from sqlalchemy.orm import Session

from vnet.controller.agents.realise import AgentError, Agents
from vnet.controller.db import journal, ledger
from vnet.controller.db.models import Connection, ConnectionState, RequestJournal, RequestPhase
from vnet.controller.service import store
from vnet.controller.service.database import Database
from vnet.controller.service.liveness import Liveness

log = logging.getLogger(__name__)

# the persist tokens a request may have used: create/release use its id; a modify's steps
# add ".0", ".1", ".2" and ".undo" (moves.py)
TOKENS = {"modify": (".0", ".1", ".2", ".undo")}


@dataclass(frozen=True)
class InFlight:
    request_id: str
    operation: str
    phase: RequestPhase
    hosts: tuple[str, ...]
    connection_id: int | None


@dataclass(frozen=True)
class Settled:
    request_id: str
    operation: str
    outcome: str  # "finished" or "undone"


def confirmed(phase: RequestPhase) -> bool:
    return journal.ORDER.index(phase) >= journal.ORDER.index(RequestPhase.CONFIRMED)


def in_flight(session: Session) -> list[InFlight]:
    return [
        InFlight(e.request_id, e.operation, e.phase, tuple(e.hosts), e.connection_id)
        for e in journal.in_flight(session)
    ]


class Recovery:
    """Settles the requests that dead controllers left in flight."""

    def __init__(self, db: Database, agents: Agents, liveness: Liveness):
        self.db = db
        self.agents = agents
        self.liveness = liveness

    async def run(self) -> list[Settled]:
        """Settle every request in flight whose controller is dead; what was done with each."""
        out = []
        for entry in await self.db.read(in_flight):
            if await asyncio.to_thread(self.liveness.owner_alive, entry.request_id):
                continue  # another controller on this database is in the middle of it
            if confirmed(entry.phase) and entry.operation in ("create", "release"):
                await self.db.write(lambda s, e=entry: finish(s, e))  # type: ignore[misc]
                out.append(Settled(entry.request_id, entry.operation, "finished"))
                continue
            await self._cancel(entry)
            await self.db.write(lambda s, e=entry: undo(s, e))  # type: ignore[misc]
            out.append(Settled(entry.request_id, entry.operation, "undone"))
        for settled in out:
            log.warning(
                "recovery: %s request %s %s",
                settled.operation,
                settled.request_id,
                settled.outcome,
            )
        return out

    async def _cancel(self, entry: InFlight) -> None:
        """Cancel what the request left pending on its hosts; a host that does not answer
        rolls back by itself at its confirm timeout (and is reconciled when it answers)."""
        for suffix in TOKENS.get(entry.operation, ("",)):
            try:
                hosts = list(entry.hosts)
                await self.agents.settle(entry.request_id + suffix, hosts, confirm=False)
            except AgentError as e:
                log.warning(
                    "recovery: request %s: %s (its timeout rolls it back)", entry.request_id, e
                )


def _connection(session: Session, entry: InFlight) -> Connection | None:
    if entry.connection_id is None:
        return None
    return session.get(Connection, entry.connection_id, with_for_update=True)


def finish(session: Session, entry: InFlight) -> None:
    conn = _connection(session, entry)
    if conn is not None and entry.operation == "create":
        conn.state = ConnectionState.ESTABLISHED
        store.add_event(session, conn, "created", "finished by recovery after a restart")
    elif conn is not None:
        ledger.release(session, conn)
        conn.state = ConnectionState.RELEASED
        store.add_event(session, conn, "released", "finished by recovery after a restart")
    _close(session, entry.request_id, None)


def undo(session: Session, entry: InFlight) -> None:
    conn = _connection(session, entry)
    why = f"interrupted at {entry.phase.value} by a controller restart; undone"
    if conn is not None and entry.operation == "create":
        ledger.release(session, conn)
        conn.state = ConnectionState.RELEASED
        store.add_event(session, conn, "failed", why)
    elif conn is not None and entry.operation == "modify":
        ledger.discard(session, conn, conn.generation + 1)
        conn.state = ConnectionState.ESTABLISHED
        store.add_event(session, conn, "failed", f"modify {why}")
    elif conn is not None:
        conn.state = ConnectionState.ESTABLISHED
        store.add_event(session, conn, "failed", f"release {why}")
    _close(session, entry.request_id, why)


def _close(session: Session, request_id: str, error: str | None) -> None:
    row = session.get(RequestJournal, request_id)
    if row is None or row.phase in journal.FINISHED:
        return  # another controller settled it meanwhile
    store.finish_journal(session, request_id, error=error)
