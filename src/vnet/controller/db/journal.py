"""The request journal: where each request that changes agents stands, for crash recovery.

A request opens its row first and advances it phase by phase, each step committed on its
own, so a controller restarted after a crash finds in `in_flight` every request it must
finish or undo (the agents' confirmed-commit timeout has already rolled back any host that
was not confirmed). Phases only move forward; `failed` may follow any unfinished phase.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Sequence

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from vnet.controller.db.models import RequestJournal, RequestPhase

ORDER = list(RequestPhase)  # declaration order is the order a request goes through
FINISHED = (RequestPhase.DONE, RequestPhase.FAILED)


def open_request(
    session: Session,
    operation: str,
    *,
    request_id: str | None = None,
    tenant_id: int | None = None,
    connection_id: int | None = None,
    hosts: Sequence[str] = (),
    phase: RequestPhase = RequestPhase.RECEIVED,
) -> RequestJournal:
    """A request's row, written with the caller's transaction (its next flush or commit)."""
    entry = RequestJournal(
        request_id=request_id or uuid.uuid4().hex,
        operation=operation,
        tenant_id=tenant_id,
        connection_id=connection_id,
        phase=phase,
        hosts=list(hosts),
    )
    session.add(entry)
    return entry


def advance(
    session: Session, request_id: str, phase: RequestPhase, error: str | None = None
) -> None:
    """Move a request to `phase`; moving backwards or out of a finished request is a bug."""
    advance_all(session, [request_id], phase, error)


def advance_all(
    session: Session, request_ids: Collection[str], phase: RequestPhase, error: str | None = None
) -> None:
    """Move requests to `phase` (see `advance`). One conditional UPDATE for all (the phases
    they may come from in its WHERE), so a request advanced by two writers at once moves
    once; the rows are read only to say why one did not."""
    earlier = [
        p
        for p in ORDER
        if p not in FINISHED
        and (phase == RequestPhase.FAILED or ORDER.index(p) < ORDER.index(phase))
    ]
    values: dict[str, object] = {"phase": phase}
    if error is not None:
        values["error"] = error
    wanted = set(request_ids)
    moved = session.scalars(
        update(RequestJournal)
        .where(RequestJournal.request_id.in_(wanted), RequestJournal.phase.in_(earlier))
        .values(**values)
        .returning(RequestJournal.request_id)
    )
    for request_id in sorted(wanted - set(moved)):
        entry = session.get(RequestJournal, request_id)
        if entry is None:
            raise LookupError(f"request {request_id}: not in the journal")
        raise ValueError(f"request {request_id}: cannot go from {entry.phase} to {phase}")


def in_flight(session: Session) -> list[RequestJournal]:
    """Requests neither done nor failed, oldest first: what recovery must look at."""
    query = (
        select(RequestJournal)
        .where(RequestJournal.phase.not_in(FINISHED))
        .order_by(RequestJournal.updated)
    )
    return list(session.scalars(query))
