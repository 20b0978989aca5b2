"""One transaction across agents: one candidate edit and one confirmed commit per host,
for one request or a group of them (group.py decides which), step by step over the
southbound seam (vnet.controller.southbound: NETCONF agents, or hosts in memory).

1. Lock every host's candidate (NETCONF <lock>): all at once; if another session holds
   one, ours go and are taken again one by one in host-name order, each retried with
   backoff for at most `lock_wait` seconds (in one order, two controllers that want the
   same hosts never hold one each and wait for the other).
2. On every host in parallel: <edit-config> of the members' changes into the candidate
   and <validate> (not for a single host: its commit validates the same and changes
   nothing if it refuses).
3. On every host in parallel: <commit><confirmed/> with the persist token (the first
   member's request id) and the confirm timeout.
4. `on_committed` of every member (the service journals COMMITTED there): the others'
   first, the token owner's last, so a journal that has the token owner COMMITTED has
   every member COMMITTED (recovery settles the group by the token owner's phase).
5. Confirm everywhere (<commit><persist-id>) and unlock, in one trip per host.

A failure in 1-4 backs every host out: discard-changes where nothing was committed,
cancel-commit where a confirmed commit may be pending (cancel is harmless where none is),
then unlock; a host that does not answer the cancel is named in the error (`pending`), with
the time its own confirm timeout rolls the change back. A confirm that fails in 5 raises
ConfirmError: a host that refused it gets its commit cancelled, one that does not answer is
`pending`, and the hosts that did confirm are named (`kept`) for the caller to put back.
The agents' own timeout is the last resort when the controller dies.

A host that did not answer a step in time (TimedOut: hung, stopped, cut off) is asked
nothing more: not the cancel, discard or unlock of backing out, not a confirm again. Each
would wait the whole timeout again, and none is needed: the agent drops the lock and
discards the candidate by itself when the session ends, and rolls back a commit nobody
confirmed at its confirm timeout; such a host is `pending` if it was sent the commit. The
error names these hosts (`timed_out`), so that the request asks them nothing more either
(unanswered.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from vnet.client import ClientError, ConnectError, Refused, TimedOut
from vnet.controller.agents.changes import AgentError, ConfirmError, HostChange
from vnet.controller.southbound import Edit, Lease, Southbound
from vnet.model.yang.errors import AppTag
from vnet.tools.wait import retry_until

log = logging.getLogger("vnet.controller.agents")
BUSY = ("lock-denied", "in-use")  # another session holds the lock: try again shortly
T = TypeVar("T")


@dataclass
class Member:
    """One request of a transaction."""

    request_id: str
    changes: dict[str, HostChange]  # host -> its change
    on_committed: Callable[[], Awaitable[None]] | None = None


class JournalFailed(Exception):
    """`on_committed` raised for some members; every host is back where it was."""

    def __init__(self, errors: dict[str, BaseException]):
        super().__init__("; ".join(f"{rid}: {err}" for rid, err in errors.items()))
        self.errors = errors


def agent_error(host: str, err: Exception) -> AgentError:
    """The agent's own words (ClientError), or why it could not be reached."""
    if isinstance(err, AgentError):
        return err
    if isinstance(err, ClientError):
        return AgentError(host, err.message, err.tag, err.path)
    return AgentError(host, str(err))


def nothing_pending(err: ClientError) -> bool:
    """The agent has no confirmed commit pending under the token given (none at all, or
    one under another token): the error-app-tag of those refusals, not their wording."""
    return err.app_tag == AppTag.NOTHING_PENDING


def busy(err: Exception) -> bool:
    """Another session holds the lock: worth asking again shortly."""
    return isinstance(err, ClientError) and err.tag in BUSY


class Transaction:
    def __init__(
        self,
        southbound: Southbound,
        members: Sequence[Member],
        confirm_timeout: int,
        lock_wait: float,
    ):
        self.members = list(members)
        self.token = self.members[0].request_id
        self.hosts = sorted({h for m in self.members for h in m.changes})
        self.southbound = southbound
        self.confirm_timeout = confirm_timeout
        self.lock_wait = lock_wait
        self.pinned: dict[str, Lease] = {}  # host -> the session holding its lock
        self.commit_sent: set[str] = set()
        self.unanswered: set[str] = set()  # hosts whose commit went unanswered
        self.timed_out: set[str] = set()  # hosts that did not answer a step in time
        self.committed_at = time.monotonic()

    async def run(self) -> None:
        try:
            await self._lock_all()
            await self._everywhere(self._edit_and_validate)
            self.committed_at = time.monotonic()  # the agents' confirm timeouts start about now
            await self._everywhere(self._commit)
            await self._journal()
        except BaseException as err:
            pending = await self._back_out()
            if isinstance(err, AgentError):
                err.timed_out = tuple(sorted(self.timed_out))
                if pending:
                    err.pending, err.rollback_by = pending, self._rollback_by()
            raise
        await self._confirm_all(self.committed_at + self.confirm_timeout * 0.9)

    def _rollback_by(self) -> float:
        """When the commits sent roll back by their agents' own timeout (time.time()), if the
        agents took them when they were sent and run on."""
        return time.time() + self.committed_at + self.confirm_timeout - time.monotonic()

    # -- the steps ----------------------------------------------------------------------
    async def _ask(self, host: str, step: Callable[[], Awaitable[T]]) -> T:
        """One step on `host`, unless it did not answer an earlier one in time."""
        if host in self.timed_out:
            raise TimedOut(f"the agent of {host} did not answer in time earlier: not asked again")
        try:
            return await step()
        except TimedOut:
            self.timed_out.add(host)
            raise

    async def _lock_all(self) -> None:
        """Every host's candidate lock at once (the usual case: nobody else holds one); if
        someone does, let go of ours and take them one by one in host order, waiting."""
        results = await asyncio.gather(
            *(self._try_lock(h) for h in self.hosts), return_exceptions=True
        )
        outcome = dict(zip(self.hosts, results, strict=True))
        # every lock taken is known before any error goes up: backing out lets go of them
        self.pinned = {h: r for h, r in outcome.items() if isinstance(r, Lease)}
        busy = False
        for host, result in outcome.items():
            if isinstance(result, ClientError) and result.tag in BUSY:
                busy = True
            elif isinstance(result, (ClientError, ConnectError)):
                raise agent_error(host, result)
            elif isinstance(result, BaseException):
                raise result
        if busy:
            log.debug("%s: a candidate is locked elsewhere; locking in host order", self.token)
            await asyncio.gather(*(self._unlock(h) for h in self.pinned))
            self.pinned.clear()
            for host in self.hosts:
                self.pinned[host] = await self._lock(host)

    async def _try_lock(self, host: str) -> Lease:
        """Lock `host`'s candidate; the session that holds the lock."""
        return await self._ask(host, lambda: self.southbound.lock(host))

    async def _lock(self, host: str) -> Lease:
        deadline = time.monotonic() + self.lock_wait
        try:
            return await retry_until(lambda: self._try_lock(host), deadline, busy)
        except (ClientError, ConnectError) as err:
            raise agent_error(host, err) from None

    def _edits(self, host: str) -> list[Edit]:
        """What the members change on `host`."""
        return [m.changes[host] for m in self.members if host in m.changes]

    async def _edit_and_validate(self, host: str) -> None:
        lease = self.pinned[host]
        await self._ask(host, lambda: self.southbound.edit(host, lease, self._edits(host)))
        # alone, a host's confirmed commit validates exactly what <validate> would, and
        # a refusal there changes nothing: the separate round would only cost time
        if len(self.hosts) > 1:
            await self._ask(host, lambda: self.southbound.validate(host, lease))

    async def _commit(self, host: str) -> None:
        self.commit_sent.add(host)
        lease = self.pinned[host]
        try:
            await self._ask(
                host,
                lambda: self.southbound.commit(host, lease, self.token, self.confirm_timeout),
            )
        except ConnectError:
            self.unanswered.add(host)  # backing out asks it once, not again and again
            raise

    async def _journal(self) -> None:
        errors: dict[str, BaseException] = {}

        async def journal(member: Member) -> None:
            if member.on_committed is not None:
                try:
                    await member.on_committed()
                except Exception as err:
                    errors[member.request_id] = err

        await asyncio.gather(*(journal(m) for m in self.members[1:]))
        if not errors:  # the token owner last: its COMMITTED implies everyone's
            await journal(self.members[0])
        if errors:
            if len(self.members) == 1:
                raise errors[self.token]
            raise JournalFailed(errors)

    async def _confirm_all(self, deadline: float) -> None:
        results = await asyncio.gather(
            *(self._confirm(h, deadline) for h in self.hosts), return_exceptions=True
        )
        outcome = dict(zip(self.hosts, results, strict=True))
        failed = {h: r for h, r in outcome.items() if isinstance(r, BaseException)}
        if not failed:
            return
        first = next(iter(failed.values()))
        if not isinstance(first, AgentError):
            raise first
        error = ConfirmError(first.host, first.reason, first.tag, first.path)
        error.kept = tuple(h for h in self.hosts if h not in failed)
        error.timed_out = tuple(sorted(self.timed_out))
        # a host that answered (a refusal) takes back its commit now; one that did not
        # answer keeps it pending until its own timeout (or its next start)
        answered = [h for h, r in failed.items() if isinstance(r, AgentError) and r.tag]
        cancelled = await asyncio.gather(*(self._cancel(h) for h in answered))
        undone = {h for h, state in zip(answered, cancelled, strict=True) if state != MAYBE_PENDING}
        error.pending = tuple(h for h in failed if h not in undone)
        error.rollback_by = self._rollback_by()
        raise error from first

    async def _confirm(self, host: str, deadline: float) -> None:
        try:
            await self._confirm_until(host, deadline)
        except BaseException:  # the next transaction must be able to lock all the same
            await self._unlock(host)
            raise

    async def _confirm_until(self, host: str, deadline: float) -> None:
        async def confirm_and_unlock() -> None:
            # any session may confirm with the token; a new one if ours broke
            await self._ask(host, lambda: self.southbound.confirm(host, self.token))
            with contextlib.suppress(ClientError, ConnectError):  # a new session holds none
                await self._ask(host, lambda: self.southbound.unlock(host, None))

        def again(err: Exception) -> bool:
            # a session that broke: a new one; an agent that did not answer in time: no more;
            # one that refuses the connect does not run, and rolls the commit back when it
            # starts: no confirm can land (retried, it held a failover 54 s, to the deadline)
            stop = (TimedOut, Refused)
            return busy(err) or (isinstance(err, ConnectError) and not isinstance(err, stop))

        try:
            await retry_until(confirm_and_unlock, deadline, again)
        except (ClientError, ConnectError) as err:
            raise agent_error(host, err) from None

    # -- backing out -----------------------------------------------------------------------
    async def _back_out(self) -> tuple[str, ...]:
        """Every host back; the hosts that may still hold a commit (their cancel went
        unanswered)."""
        states = await asyncio.gather(*(self._back_out_host(h) for h in self.pinned))
        return tuple(h for h, state in zip(self.pinned, states, strict=True) if state)

    async def _back_out_host(self, host: str) -> bool:
        """Back out of `host`; True if a commit sent there may be pending still."""
        pending = False
        if host in self.commit_sent:
            pending = await self._cancel(host) == MAYBE_PENDING
        lease = self.pinned[host]
        with contextlib.suppress(ClientError, ConnectError):
            # a lost session (or one that timed out: not asked): the agent discards the
            # candidate and drops the lock by itself
            await self._ask(host, lambda: self.southbound.discard(host, lease))
        await self._unlock(host)
        return pending

    async def _cancel(self, host: str) -> str:
        attempts = 1 if host in self.unanswered else 3
        return await cancelling(
            lambda: self._ask(host, lambda: self.southbound.cancel(host, self.token)),
            host,
            self.token,
            attempts,
        )

    async def _unlock(self, host: str) -> None:
        lease = self.pinned[host]
        with contextlib.suppress(ClientError, ConnectError):
            await self._ask(host, lambda: self.southbound.unlock(host, lease))

    async def _everywhere(self, step: Callable[[str], Awaitable[None]]) -> None:
        """`step` on every host at once; all of them finish before the first error (in
        host order) is raised, so backing out sees every host at rest."""
        results = await asyncio.gather(*(step(h) for h in self.hosts), return_exceptions=True)
        for host, result in zip(self.hosts, results, strict=True):
            if isinstance(result, (ClientError, ConnectError)):
                raise agent_error(host, result)
            if isinstance(result, BaseException):
                raise result


CANCELLED, NONE_PENDING, MAYBE_PENDING = "cancelled", "none pending", "maybe pending"


async def cancel(southbound: Southbound, host: str, token: str, attempts: int = 3) -> str:
    """Cancel the confirmed commit pending under `token`: CANCELLED if one was, NONE_PENDING
    if none was, MAYBE_PENDING if the agent did not answer or refused for another reason (its
    own timeout rolls it back)."""
    return await cancelling(lambda: southbound.cancel(host, token), host, token, attempts)


async def cancelling(
    send: Callable[[], Awaitable[None]], host: str, token: str, attempts: int
) -> str:
    """`cancel` with the cancel-commit sent by `send`: tried `attempts` times while the
    connection fails, once if the agent does not answer in time (each try would wait the
    whole timeout again)."""
    for _ in range(attempts):
        try:
            await send()
            return CANCELLED
        except ClientError as err:
            if nothing_pending(err):
                return NONE_PENDING
            log.warning("cancel-commit %s on %s refused: %s", token, host, err)
            return MAYBE_PENDING
        except TimedOut as err:
            log.warning("cancel-commit %s on %s: %s", token, host, err)
            return MAYBE_PENDING
        except ConnectError as err:
            log.warning("cancel-commit %s on %s: %s", token, host, err)
    return MAYBE_PENDING
