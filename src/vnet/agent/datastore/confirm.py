"""Confirmed commit (RFC 6241 Sec. 8.4, :confirmed-commit:1.1): who may confirm, follow up
or cancel a pending confirmed commit, and when it times out.

A confirmed commit keeps a rollback point: the running configuration before
the first confirmed commit of a series, on disk in the same file and fsync as
the commit itself (persist.py), before that commit changes the kernel.
Unless a confirming commit arrives within the timeout, running and the
kernel go back to it: at the timeout, when the session that started it ends
(unless it gave <persist>), on <cancel-commit>, or at the next start of an
agent that died meanwhile. Changes made by anyone in between go back with
it, as on every NETCONF server that keeps one rollback point.

This module holds the state machine only; the datastore (store.py) does the
commits and the rollback, under its write lock.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from vnet.model.yang.errors import AppTag, ErrorTag, ErrorType, RpcError

log = logging.getLogger("vnet.agent.datastore")

DEFAULT_TIMEOUT = 600  # seconds (RFC 6241 Sec. 8.4.5)
RETRY_AFTER = 5.0  # a rollback the disk refused is tried again after this long
_generations = itertools.count(1)


@dataclass
class Pending:
    rollback: dict[str, Any]  # running before the first confirmed commit of the series
    session: str  # the session that issued the latest confirmed commit
    persist: str | None  # its <persist> token: then any session may confirm with it
    generation: int  # changes with every (follow-up) confirmed commit
    timer: asyncio.Task[None] | None = None


def nothing_pending(message: str) -> RpcError:
    """No confirmed commit is pending that the caller may settle: the controller tells it
    by the app-tag."""
    return RpcError(
        ErrorTag.OPERATION_FAILED, message, ErrorType.PROTOCOL, app_tag=AppTag.NOTHING_PENDING
    )


def _bad_persist_id(message: str) -> RpcError:
    """Nothing pending under the persist-id given: the controller tells it by the app-tag."""
    return RpcError(
        ErrorTag.INVALID_VALUE,
        message,
        ErrorType.PROTOCOL,
        info={"bad-element": "persist-id"},
        app_tag=AppTag.NOTHING_PENDING,
    )


class ConfirmedCommits:
    """The pending confirmed commit, if any. `rollback_due(generation)` is awaited when
    its time has come; it must roll back under the datastore's write lock."""

    def __init__(self, rollback_due: Callable[[int], Awaitable[None]]) -> None:
        self.pending: Pending | None = None
        self._rollback_due = rollback_due

    # -- who may do what ---------------------------------------------------------
    def authorise(self, session: str, persist_id: str | None, what: str) -> None:
        """May `session` (with `persist_id`) confirm, follow up or cancel? RpcError if not."""
        p = self.pending
        if p is None:
            if persist_id is not None:
                raise _bad_persist_id(
                    f"{what}: no confirmed commit is pending with persist-id {persist_id!r}"
                )
            return
        if p.persist is not None:
            if persist_id != p.persist:
                raise _bad_persist_id(
                    f"{what}: a confirmed commit with <persist> is pending; "
                    "give its token as <persist-id>"
                )
        elif session != p.session:
            raise nothing_pending(
                f"{what}: a confirmed commit of session {p.session} is pending; only that "
                "session can confirm or cancel it (it gave no <persist>)"
            )
        elif persist_id is not None:
            raise _bad_persist_id(f"{what}: the pending confirmed commit has no persist token")

    # -- transitions ---------------------------------------------------------------
    def arm(
        self, rollback: dict[str, Any], session: str, persist: str | None, timeout: float
    ) -> None:
        """A (follow-up) confirmed commit succeeded: (re)start the timer. A follow-up keeps
        the series' first rollback point."""
        if self.pending is not None:
            rollback = self.pending.rollback
            self._stop_timer()
        self.pending = Pending(rollback, session, persist, next(_generations))
        self._start_timer(timeout)

    def settle(self) -> None:
        """Confirmed or rolled back: nothing is pending any more."""
        self._stop_timer()
        self.pending = None

    def session_ended(self, session: str) -> None:
        """RFC 6241 Sec. 8.4.1: the session that started a confirmed commit without
        <persist> ended; roll back now."""
        p = self.pending
        if p is not None and p.persist is None and p.session == session:
            log.info("session %s ended with a confirmed commit pending: rolling back", session)
            self._stop_timer()
            self._start_timer(0)

    def retry_later(self) -> None:
        """A rollback failed (the disk refused it): keep the rollback point, try again."""
        if self.pending is not None:
            self.pending.generation = next(_generations)
            self._start_timer(RETRY_AFTER)

    def is_current(self, generation: int) -> bool:
        return self.pending is not None and self.pending.generation == generation

    # -- the timer -----------------------------------------------------------------
    def _start_timer(self, delay: float) -> None:
        assert self.pending is not None
        self.pending.timer = asyncio.get_running_loop().create_task(
            self._expire(self.pending.generation, delay)
        )

    def _stop_timer(self) -> None:
        # never cancel the rollback that is running now (it calls settle() itself)
        p = self.pending
        if p is not None and p.timer is not None and p.timer is not asyncio.current_task():
            p.timer.cancel()

    async def _expire(self, generation: int, delay: float) -> None:
        await asyncio.sleep(delay)
        with contextlib.suppress(asyncio.CancelledError):
            await self._rollback_due(generation)

    def close(self) -> None:
        """The agent stops: the timer goes, the rollback point stays on disk for the next
        start."""
        self._stop_timer()
