"""What a transaction across agents is given (HostChange, from the southbound seam) and
raises (AgentError)."""

from __future__ import annotations

from vnet.controller.southbound import HostChange

__all__ = ["NO_AGENT", "AgentError", "ConfirmError", "HostChange"]

# AgentError's tag for a host the controller has no agent for: refused before anything is
# sent to any agent (the request is then a conflict with the inventory, not an agent's fault)
NO_AGENT = "no-agent"


class AgentError(Exception):
    """An agent refused or failed; every host of the transaction is back where it was,
    except the hosts in `pending`: they were sent the confirmed commit and did not answer it
    in time or did not answer its cancel, so they may hold the change unconfirmed until their
    agent rolls it back (at its confirm timeout, `rollback_by` at the latest while it runs,
    or when it starts again if it died). The hosts in `timed_out` did not answer a step in
    time: nothing more was asked of them (agents/unanswered.py)."""

    def __init__(self, host: str, reason: str, tag: str | None = None, path: str | None = None):
        super().__init__(f"host {host}: {reason}")
        self.host = host
        self.reason = reason
        self.tag = tag  # the agent's error-tag; None: the agent could not be reached
        self.path = path  # the agent's error-path, if it gave one
        self.pending: tuple[str, ...] = ()
        self.rollback_by: float | None = None  # time.time() of the pending hosts' timeout
        self.timed_out: tuple[str, ...] = ()


class ConfirmError(AgentError):
    """After every host committed and `on_committed` ran, a host could not be confirmed:
    the hosts in `kept` confirmed and keep the change, a host that refused the confirm had
    its commit cancelled, one that did not answer is in `pending`. Not 'back where it was':
    the caller must bring the `kept` hosts back to what the database says (reconcile)."""

    def __init__(self, host: str, reason: str, tag: str | None = None, path: str | None = None):
        super().__init__(host, reason, tag, path)
        self.kept: tuple[str, ...] = ()
