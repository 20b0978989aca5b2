"""Networks and VRs made through the controller's API, as one transaction across agents.

The same steps as a connection's transaction (transaction.py: lock every candidate, edit and
validate everywhere, confirmed commit with the request id as persist token, `on_committed`,
confirm everywhere; any failure backs every host out), but each host's edit is a call of
`vnet.client.NetconfClient` (create_router, create_network, ...) into its candidate instead
of connection pieces. It runs on its own, not grouped with connections: its hosts' candidate
locks order it against them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

from vnet.client import NetconfClient
from vnet.controller.agents.changes import HostChange
from vnet.controller.agents.realise import Agents
from vnet.controller.agents.transaction import CANDIDATE, Member, Transaction

Edit = Callable[[NetconfClient, str], None]  # (client, target datastore)


class InventoryTransaction(Transaction):
    def __init__(
        self,
        agents: Agents,
        request_id: str,
        edits: Mapping[str, Edit],
        on_committed: Callable[[], Awaitable[None]] | None = None,
    ):
        unknown = sorted(set(edits) - set(agents.sessions))
        if unknown:
            raise ValueError(f"no agent for host(s) {', '.join(unknown)}")
        # the members' changes only name the hosts: the edits are ours
        member = Member(request_id, {h: HostChange(h) for h in edits}, on_committed)
        super().__init__(agents.sessions, [member], agents.confirm_timeout, agents.lock_wait)
        self.edits = dict(edits)

    async def _edit_and_validate(self, host: str) -> None:
        edit, validate = self.edits[host], len(self.hosts) > 1

        def edit_and_validate(client: NetconfClient) -> None:
            edit(client, CANDIDATE)
            if validate:
                client.validate(CANDIDATE)

        await self.sessions[host].call(edit_and_validate, self.pinned[host])


async def change_inventory(
    agents: Agents,
    request_id: str,
    edits: Mapping[str, Edit],
    on_committed: Callable[[], Awaitable[None]] | None = None,
) -> None:
    """Apply `edits` (host -> edit of its candidate) on every host at once, or on none
    (AgentError naming the host that refused)."""
    await InventoryTransaction(agents, request_id, edits, on_committed).run()
