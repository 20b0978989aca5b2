"""The NETCONF operations on the candidate and the confirmed commit (RFC 6241 8.3, 8.4):
<commit> (confirmed or confirming), <cancel-commit>, the timer's rollback,
<discard-changes>, <lock>, <unlock> and a session's end.

A part of `Datastore` (store.py), which holds the trees and the commit path these
operations drive; confirm.py keeps the pending confirmed commit and its timer.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

from vnet.agent.datastore.confirm import DEFAULT_TIMEOUT, ConfirmedCommits, nothing_pending
from vnet.agent.datastore.durability import Written
from vnet.agent.datastore.locks import CANDIDATE, RUNNING, Locks
from vnet.agent.datastore.persist import RunningFile, disk_error
from vnet.agent.datastore.validation import Change, Validator
from vnet.agent.nacm import Nacm
from vnet.model.host import HostConfig
from vnet.model.yang.errors import RpcError

T = TypeVar("T")
log = logging.getLogger("vnet.agent.datastore")


class CandidateOperations:
    """What a NETCONF session does to the shared candidate, the locks and a confirmed
    commit, over the store's trees and commit path."""

    if TYPE_CHECKING:  # the store's (store.py)
        running: dict[str, Any]
        candidate: dict[str, Any]
        candidate_dirty: bool
        candidate_base: dict[str, Any]
        locks: Locks
        nacm: Nacm
        file: RunningFile
        confirms: ConfirmedCommits
        validator: Validator
        write_lock: asyncio.Lock
        _epoch: int

        def check_lock(self, target: str, session: str) -> None: ...
        async def _to_the_end(self, work: Coroutine[Any, Any, T]) -> T: ...
        def _wrote(self, commit: Written) -> None: ...
        async def _commit_locked(
            self, new_tree: dict[str, Any], session: str, rollback: dict[str, Any] | None
        ) -> None: ...
        async def _transact(
            self,
            tree: dict[str, Any],
            hc: HostConfig,
            change: Change,
            rollback: dict[str, Any] | None,
        ) -> None: ...

    def _pending_rollback(self) -> dict[str, Any] | None:
        """The rollback point an ordinary commit keeps on disk (a confirmed commit's)."""
        pending = self.confirms.pending
        return pending.rollback if pending is not None else None

    def _confirm_unchanged(self, session: str) -> None:
        """A confirming commit of an unchanged candidate: running is valid and in the kernel
        already, so only the disk drops the rollback point (no full commit per request)."""
        self.check_lock(RUNNING, session)
        try:
            position = self.file.append(self.running, None)
        except OSError as err:
            raise disk_error("saving the configuration", err, "nothing was changed") from None
        self._wrote(Written(position, self._epoch, self.running, []))

    async def commit(
        self,
        session: str = "",
        *,
        confirmed: bool = False,
        confirm_timeout: float = DEFAULT_TIMEOUT,
        persist: str | None = None,
        persist_id: str | None = None,
        user: str | None = None,
    ) -> None:
        """<commit>: the candidate becomes running. `confirmed`: only until a confirming
        commit (a plain one from this session, or with `persist_id` = `persist` from any)
        arrives within `confirm_timeout` seconds; else running goes back (confirm.py).
        `user`: who commits, authorised by the commit's effect (Nacm.authorise_commit)."""
        await self._to_the_end(
            self._commit(session, confirmed, confirm_timeout, persist, persist_id, user)
        )

    async def _commit(
        self,
        session: str,
        confirmed: bool,
        timeout: float,
        persist: str | None,
        persist_id: str | None,
        user: str | None,
    ) -> None:
        async with self.write_lock:
            self.check_lock(CANDIDATE, session)
            self.confirms.authorise(session, persist_id, "commit")
            self.nacm.authorise_commit(user, self.running, self.candidate, confirmed)
            # confirmed: the rollback point (the series' first) is on disk with the commit;
            # else this confirms what is pending, and the rollback point goes
            rollback = None
            if confirmed:
                kept = self._pending_rollback()
                rollback = kept if kept is not None else self.running
            if rollback is None and self.confirms.pending is not None and not self.candidate_dirty:
                self._confirm_unchanged(session)
            else:
                await self._commit_locked(self.candidate, session, rollback)
            self.candidate = self.running  # trees are never changed in place
            self.candidate_dirty = False
            if rollback is not None:
                self.confirms.arm(rollback, session, persist, timeout)
            elif self.confirms.pending is not None:
                self.confirms.settle()
                log.info("confirmed commit confirmed")

    async def cancel_commit(self, session: str = "", *, persist_id: str | None = None) -> None:
        """<cancel-commit>: the pending confirmed commit goes back now."""
        await self._to_the_end(self._cancel_commit(session, persist_id))

    async def _cancel_commit(self, session: str, persist_id: str | None) -> None:
        async with self.write_lock:
            if self.confirms.pending is None:
                raise nothing_pending("cancel-commit: no confirmed commit is pending")
            self.confirms.authorise(session, persist_id, "cancel-commit")
            await self._roll_back_locked()

    async def _rollback_due(self, generation: int) -> None:
        """The timer fired (or its session ended): go back, unless it was settled meanwhile."""
        await self._to_the_end(self._rollback_if_current(generation))

    async def _rollback_if_current(self, generation: int) -> None:
        async with self.write_lock:
            if not self.confirms.is_current(generation):
                return
            try:
                await self._roll_back_locked()
            except RpcError as err:
                log.error("rolling back the confirmed commit failed, retrying: %s", err)
                self.confirms.retry_later()

    async def _roll_back_locked(self) -> None:
        pending = self.confirms.pending
        assert pending is not None
        tree, hc, change = self.validator.prepare(pending.rollback, self.running)
        # no lock check: a rollback is owed to everyone; a candidate someone is editing
        # keeps their changes (as after any commit)
        await self._transact(tree, hc, change, None)
        self.confirms.settle()
        log.info("confirmed commit rolled back")

    def discard_changes(self, session: str = "", user: str | None = None) -> None:
        """<discard-changes>, if `user` may undo what is staged (Nacm.authorise_discard)."""
        self.check_lock(CANDIDATE, session)
        if self.candidate_dirty:
            self.nacm.authorise_discard(user, self.running, self.candidate, self.candidate_base)
        self.candidate = self.running  # trees are never changed in place
        self.candidate_dirty = False

    def lock(self, target: str, session: str) -> None:
        self.locks.lock(target, session, self.candidate_dirty)

    def unlock(self, target: str, session: str) -> None:
        self.locks.unlock(target, session)

    def release(self, session: str) -> None:
        """A session ended: drop its locks (a held candidate lock discards its changes);
        a confirmed commit it started without <persist> goes back."""
        if CANDIDATE in self.locks.release(session):
            self.candidate = self.running  # trees are never changed in place
            self.candidate_dirty = False
        self.confirms.session_ended(session)
