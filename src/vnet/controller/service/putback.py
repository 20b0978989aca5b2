"""A failed request puts back every host it changed before it answers, or says which host
still holds what and until when.

An agent transaction that fails leaves every host as it was, with two exceptions it names:
after a ConfirmError the hosts in `kept` confirmed the change, and a host in `pending` took
a confirmed commit and then answered nothing (killed, stopped, cut off), so it may hold the
change unconfirmed until its agent rolls it back by itself. A modify's make-before-break
steps add a third: an earlier step confirmed, a later one failed and putting the earlier
back failed too. In each case, once the request's own database transaction has written
what is true (the caller's undo), every host the request touched that answers is
reconciled with the database now, before the answer goes out; a host that does not answer
is named in the answer with when its agent undoes the change by itself, and is reconciled
when it answers again (Service.repair).

The request's agent transactions are collected per request in a context variable: the
steps of a modify live in moves.py and reach the agents through `Flows.run_agents`. The same
scope is the request's for agents/unanswered.py: a host that did not answer one of its steps
in time is asked nothing more by the request (not its later steps, its undo or the put-back),
and is named as not put back.
`PutBack` is given the reconciler and the service's `repair` (what reconciles a host when it
answers again).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator, Callable
from contextvars import ContextVar
from dataclasses import dataclass

from vnet.controller.agents import unanswered
from vnet.controller.agents.realise import AgentError, ConfirmError
from vnet.controller.errors import AgentRefused
from vnet.controller.service.reconcile import Reconciler


@dataclass(frozen=True)
class Call:
    """One agent transaction of a request: the hosts it touched, and how it failed."""

    hosts: tuple[str, ...]
    error: AgentError | None


_calls: ContextVar[list[Call] | None] = ContextVar("vnet_agent_calls", default=None)


def record(hosts: list[str], error: AgentError | None) -> None:
    """One agent transaction of the current request (nothing outside `answering`)."""
    calls = _calls.get()
    if calls is not None:
        calls.append(Call(tuple(sorted(set(hosts))), error))


class PutBack:
    """Puts back what a failed request left changed, before its answer goes out."""

    def __init__(self, reconciler: Reconciler, repair: Callable[[list[str]], None]):
        self.reconciler = reconciler
        self.repair = repair  # reconcile these hosts when they answer again

    @contextlib.asynccontextmanager
    async def answering(self) -> AsyncIterator[None]:
        """Around one request: an AgentRefused that left hosts changed puts them back first
        and says in its reason what stays where."""
        calls: list[Call] = []
        token = _calls.set(calls)
        try:
            with unanswered.one_request():
                try:
                    yield
                except AgentRefused as refused:
                    note = await self.put_back(calls)
                    if note is None:
                        raise
                    raise refused.noted(note) from None
        finally:
            _calls.reset(token)

    async def put_back(self, calls: list[Call]) -> str | None:
        """Reconcile the hosts the request touched that answer; what the answer must add
        (None: nothing was left changed)."""
        if not left_changed(calls):
            return None
        pending = sorted({h for c in calls if c.error is not None for h in c.error.pending})
        touched = sorted({h for c in calls for h in c.hosts} - set(pending))
        outcome = await self.reconciler.all_hosts(touched) if touched else {}
        unreached = {h: r for h, r in outcome.items() if isinstance(r, Exception)}
        later = sorted(set(pending) | set(unreached))
        if later:
            self.repair(later)
        rollback = [c.error.rollback_by for c in calls if c.error and c.error.rollback_by]
        back = [h for h in touched if h not in unreached]
        return describe(back, pending, unreached, min(rollback, default=None))


def left_changed(calls: list[Call]) -> bool:
    """Whether the failed transactions may have left a host changed."""
    errors = [c.error for c in calls if c.error is not None]
    if any(e.pending or (isinstance(e, ConfirmError) and e.kept) for e in errors):
        return True
    # an earlier transaction confirmed and the last one (the undo, if any) failed
    first_ok = next((i for i, c in enumerate(calls) if c.error is None), None)
    return first_ok is not None and bool(errors) and calls[-1].error is not None


def describe(
    back: list[str],
    pending: list[str],
    unreached: dict[str, Exception],
    rollback_by: float | None,
) -> str:
    parts = []
    if back:
        parts.append(f"{_hosts(back)} put back as the database says")
    if pending:
        when = (
            f" by {time.strftime('%H:%M:%S UTC', time.gmtime(rollback_by))}"
            if rollback_by is not None
            else ""
        )
        parts.append(
            f"{_hosts(pending)} did not answer and may hold the change unconfirmed until its"
            f" agent rolls it back by itself (at its confirm timeout{when} if it runs, when it"
            " starts again if it died); the controller reconciles it when it answers again"
        )
    for host, err in unreached.items():
        parts.append(
            f"host {host} could not be put back now ({err}); the controller reconciles it"
            " when it answers again"
        )
    return "; ".join(parts)


def _hosts(hosts: list[str]) -> str:
    return ("host " if len(hosts) == 1 else "hosts ") + ", ".join(hosts)
