"""Networks and VRs made through the controller's API, as one transaction across agents.

The same steps as a connection's transaction (transaction.py: lock every candidate, edit and
validate everywhere, confirmed commit with the request id as persist token, `on_committed`,
confirm everywhere; any failure backs every host out), but each host's edit is inventory
(`southbound.InventoryEdit`: create a VR or a network, add routes) instead of connection
pieces. It runs on its own, not grouped with connections: its hosts' candidate locks order
it against them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence

from vnet.controller.agents.changes import HostChange
from vnet.controller.agents.transaction import Member, Transaction
from vnet.controller.southbound import Edit, InventoryEdit, Southbound


class InventoryTransaction(Transaction):
    def __init__(
        self,
        southbound: Southbound,
        request_id: str,
        edits: Mapping[str, Sequence[InventoryEdit]],
        on_committed: Callable[[], Awaitable[None]] | None,
        confirm_timeout: int,
        lock_wait: float,
    ):
        unknown = sorted(set(edits) - set(southbound.hosts))
        if unknown:
            raise ValueError(f"no agent for host(s) {', '.join(unknown)}")
        # the members' changes only name the hosts: the edits are ours
        member = Member(request_id, {h: HostChange(h) for h in edits}, on_committed)
        super().__init__(southbound, [member], confirm_timeout, lock_wait)
        self.edits = {host: list(host_edits) for host, host_edits in edits.items()}

    def _edits(self, host: str) -> list[Edit]:
        return list(self.edits[host])
