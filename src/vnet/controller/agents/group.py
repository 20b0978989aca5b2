"""Group commit: requests waiting for the same hosts share one transaction.

Inside one controller a host takes part in one transaction at a time (an agent holds one
pending confirmed commit, and the candidate is one per agent). Requests that arrive while
their hosts are busy queue; when hosts come free, queued requests whose hosts are all free
form groups (in arrival order, up to `max_group` each): one candidate edit and one
confirmed commit per host for all of a group; groups on disjoint hosts run side by side.
A group's first member, whose request id is the persist token, touches every host of the
group (a request joins if its hosts are a subset of the group's, or becomes the first if
they are a superset): recovery settles the group by that request on that request's hosts.
A request that must wait for a busy host keeps its hosts for itself (later requests
touching them wait behind it), so nobody starves. Two requests touching the same
connection on a host never share a group.

A group an agent refused is split so that only the refusing request fails: if the agent's
error-path names a connection only one request touches, that request fails and all the
others are tried again as one group; else the requests that do not touch the refusing
host are tried again as a group and those that do in halves (a half refused again is
halved again, down to single requests: log2(n) retries instead of n). A host that could
not be reached fails every request that touches it (trying each alone would wait for
the same timeout again and again).
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable

from vnet.controller.agents.changes import AgentError, ConfirmError
from vnet.controller.agents.edits import touched
from vnet.controller.agents.transaction import JournalFailed, Member

log = logging.getLogger("vnet.controller.agents")
_CONNECTION_IN_PATH = re.compile(r"connection\[(?:\w+:)?name='([^']*)'\]")
RunMembers = Callable[[list[Member]], Awaitable[None]]


class _Queued:
    def __init__(self, member: Member, done: asyncio.Future[None]):
        self.member = member
        self.done = done
        self.hosts = set(member.changes)
        # host -> the connections it puts or deletes there: derived once, as a group of n
        # members is checked against them n times (the moves of one failure: 100 at once)
        self.touches = {host: touched(change) for host, change in member.changes.items()}


def _conflicts(item: _Queued, claimed: dict[str, set[str]]) -> bool:
    """Does `item` touch a connection the group has `claimed` (host -> names) on its host?"""
    return any(not names.isdisjoint(claimed.get(h, ())) for h, names in item.touches.items())


class GroupCommit:
    def __init__(self, run: RunMembers, max_group: int = 256):
        self._run = run  # one transaction for these members; raises as Transaction.run
        self.max_group = max_group
        self._queue: list[_Queued] = []
        self._busy: set[str] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self.groups = 0  # transactions run (for tests and benchmarks)

    async def submit(self, member: Member) -> None:
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._queue.append(_Queued(member, done))
        # not at once: requests submitted in the same turn of the event loop (the moves of
        # one failure, started together) then start as one group, not the first one alone
        asyncio.get_running_loop().call_soon(self._dispatch)
        # the group goes on if the caller goes away: its other members need it
        await asyncio.shield(done)

    def _dispatch(self) -> None:
        while self._start_group():  # groups on disjoint hosts run side by side
            pass

    def _start_group(self) -> bool:
        blocked = set(self._busy)
        group: list[_Queued] = []
        hosts: set[str] = set()  # the group's: its first member's (the token owner's)
        claimed: dict[str, set[str]] = {}  # host -> the connections the group touches there
        for item in self._queue:
            if len(group) >= self.max_group:
                break
            fits = item.hosts <= hosts or hosts <= item.hosts
            if item.hosts & blocked or not fits or _conflicts(item, claimed):
                blocked |= item.hosts  # reserved for it: later requests wait behind it
                continue
            for host, names in item.touches.items():
                claimed.setdefault(host, set()).update(names)
            if hosts < item.hosts or not group:
                group.insert(0, item)  # it covers the group: the new token owner
                hosts = set(item.hosts)
            else:
                group.append(item)
        if not group:
            return False
        for item in group:
            self._queue.remove(item)
        self._busy |= hosts
        task = asyncio.get_running_loop().create_task(self._settle(group, hosts))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return True

    async def _settle(self, group: list[_Queued], hosts: set[str]) -> None:
        try:
            await self._try(group)
        except BaseException as err:  # a bug: the callers hear of it, the queue goes on
            for item in group:
                _finish(item, err)
        finally:
            self._busy -= hosts
            self._dispatch()

    async def _try(self, group: list[_Queued]) -> None:
        parts = _covered(group)
        if len(parts) > 1:  # what is left of a split group may lack a covering owner
            for part in parts:
                await self._try(part)
            return
        self.groups += 1
        try:
            await self._run([i.member for i in group])
        except (ConfirmError, JournalFailed) as err:
            for item in group:
                _finish(item, _own_error(err, item))
            return
        except AgentError as err:
            if len(group) == 1:
                _finish(group[0], err)
                return
            await self._split(group, err)
            return
        except Exception as err:  # on_committed of a lone request raised: its own error
            for item in group:
                _finish(item, err)
            return
        for item in group:
            _finish(item, None)

    async def _split(self, group: list[_Queued], err: AgentError) -> None:
        hit = [i for i in group if err.host in i.hosts]
        rest = [i for i in group if err.host not in i.hosts]
        log.info("group of %d refused by %s: %s", len(group), err.host, err.reason)
        culprit = _named_by(err, hit)
        if err.tag is None:  # unreachable, not a refusal: do not wait for it again
            failed, hit = hit, []
        elif culprit is not None:  # the agent named the connection it refused
            failed, hit = [culprit], []
            rest = [i for i in group if i is not culprit]
        elif len(rest) == len(group):  # the error concerns no member's host: a bug
            failed, rest = group, []
        else:
            failed = []
        for item in failed:
            _finish(item, err)
        # the others again: the ones the refusing host never saw as one group, the ones
        # it did in halves (a half refused again is halved again, down to one request)
        half = len(hit) // 2
        for part in (rest, hit[:half], hit[half:]):
            if part:
                await self._try(part)

    async def close(self) -> None:
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)


def _covered(items: list[_Queued]) -> list[list[_Queued]]:
    """`items` as groups whose first member's hosts cover every member's (see realise.py:
    recovery settles a group by its token owner, on the owner's hosts)."""
    left, out = list(items), []
    while left:
        owner = max(left, key=lambda i: len(i.hosts))
        part = [owner] + [i for i in left if i is not owner and i.hosts <= owner.hosts]
        out.append(part)
        left = [i for i in left if all(i is not p for p in part)]
    return out


def _named_by(err: AgentError, hit: list[_Queued]) -> _Queued | None:
    """The one request that touches the connection the agent's error-path names, if any."""
    names = set(_CONNECTION_IN_PATH.findall(err.path or ""))
    named = [i for i in hit if names & i.touches[err.host]]
    return named[0] if len(named) == 1 else None


def _own_error(err: Exception, item: _Queued) -> BaseException:
    if isinstance(err, JournalFailed):
        mine = err.errors.get(item.member.request_id)
        if mine is not None:
            return mine
        host = min(item.hosts)
        return AgentError(
            host, f"rolled back with its group: on_committed of another request failed ({err})"
        )
    return err


def _finish(item: _Queued, err: BaseException | None) -> None:
    if item.done.done():
        return
    if err is None:
        item.done.set_result(None)
    else:
        item.done.set_exception(err)
