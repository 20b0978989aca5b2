"""One transactional datastore per physical host, shared by every front-end.

Every change follows one path: decode (front-end) -> the tree's HostConfig
(model/yang/host.py), validated (model invariants with exact error paths, then
YANG via libyang; validation.py) -> realised (substrate.realize_host) ->
staged on disk, fsynced (persist.py) -> substrate.converge (plan, apply with
rollback) -> the commit point, a rename (persist.py) -> notify (events.py) ->
reply; a failure anywhere leaves kernel, memory and disk as they were. One
writer at a time (store.py). The candidate, locks and confirmed commit:
candidate.py (the operations) and confirm.py (the pending commit and its timer).

A commit replaces the running tree with a new object (`prepare` deep-copies
what it is given) and never changes a committed tree in place. So a reader
that only reads (SNMP, <get-config>, RESTCONF GET) takes `running_snapshot()`,
the committed tree itself, at no cost, and keeps a consistent view while
later commits happen; whoever edits takes a copy with `tree()`. Operational
state (state.py) is read from the kernel per request.
"""

from vnet.agent.datastore.events import Event
from vnet.agent.datastore.locks import CANDIDATE, RUNNING
from vnet.agent.datastore.store import Datastore

__all__ = ["CANDIDATE", "RUNNING", "Datastore", "Event"]
