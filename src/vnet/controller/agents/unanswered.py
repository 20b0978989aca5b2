"""Hosts that did not answer in time, remembered for the rest of one request.

One request may reach a host several times: a modify's later steps and its undo, and the
put-back that reconciles the hosts it touched (service/putback.py). An agent that did not
answer one of them in time (hung, stopped, cut off) would make each later one wait the whole
RPC timeout again, for nothing: its agent drops the lock and discards the candidate by itself
when the session ends, and rolls back a commit it took but nobody confirmed at its own
confirm timeout. So within one request (`one_request()` around it) a host that timed out is
not asked again: `Agents` fails its later calls at once with an AgentError that says so, and
the answer names the host as not put back. The next request asks it afresh: the scope is one
request, never longer (a stopped agent may run again at any moment).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from contextvars import ContextVar

from vnet.controller.agents.changes import AgentError

_silent: ContextVar[set[str] | None] = ContextVar("vnet_unanswered_hosts", default=None)
NOT_ASKED_AGAIN = "did not answer in time earlier in this request: not asked again"


@contextlib.contextmanager
def one_request() -> Iterator[None]:
    """The scope of one request: what times out inside is remembered until it ends."""
    token = _silent.set(set())
    try:
        yield
    finally:
        _silent.reset(token)


def note(hosts: Iterable[str]) -> None:
    """These hosts did not answer in time (nothing outside `one_request`)."""
    silent = _silent.get()
    if silent is not None:
        silent.update(hosts)


def check(hosts: Iterable[str]) -> None:
    """AgentError for the first of `hosts` that did not answer earlier in this request."""
    silent = _silent.get()
    if silent:
        for host in sorted(hosts):
            if host in silent:
                raise AgentError(host, NOT_ASKED_AGAIN)
