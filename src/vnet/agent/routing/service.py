"""The datastore's view of routing: sync after a commit, watch every second, add state.

Starting and stopping daemons runs on the datastore's kernel thread (it enters
the VR's namespace); the watch is an asyncio task for the agent's life.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Collection
from typing import Any

from vnet.agent.datastore.events import Event, EventBus
from vnet.agent.routing import state
from vnet.agent.routing.supervisor import RoutingSupervisor
from vnet.model.topology import VirtualRouter

log = logging.getLogger("vnet.agent.routing")
CHECK_INTERVAL = 1.0
RunInKernel = Callable[..., Awaitable[Any]]


class RoutingService:
    def __init__(
        self,
        scope: str,
        node_ns: Callable[[str], str],
        in_kernel: RunInKernel,
        events: EventBus,
    ):
        self.supervisor = RoutingSupervisor(scope, node_ns)
        self._in_kernel = in_kernel
        self._events = events  # a death, restart or failure is a router-event "routing"
        self._task: asyncio.Task[None] | None = None
        self._seen: dict[str, Any] = {}

    async def start(self, routers: list[VirtualRouter]) -> None:
        await self._in_kernel(self.supervisor.clean_leftovers)
        await self.sync(routers)
        self._task = asyncio.create_task(self._watch(), name="vnet-routing-watch")

    async def sync(self, routers: list[VirtualRouter], only: Collection[str] | None = None) -> None:
        """RoutingSupervisor.sync in the kernel thread."""
        await self._in_kernel(self.supervisor.sync, routers, only)

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self._in_kernel(self.supervisor.stop_all)

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(CHECK_INTERVAL)
            try:
                changes = await self._in_kernel(self.supervisor.check)
            except Exception:  # the watch outlives one bad round; the next one retries
                log.exception("checking the routing daemons failed")
                continue
            self._events.publish(
                [Event(c.vr.name, c.vr.index, "routing", c.result, c.message) for c in changes]
            )

    async def add_state(self, routers: list[dict[str, Any]]) -> None:
        """Each OSPF VR entry gets routing/state; a VR whose daemons are not running is failed."""
        asked = [(r, i) for r in routers if (i := self.supervisor.instances.get(r["name"]))]
        # one vtysh per VR, side by side (the default executor bounds how many at once)
        views = await asyncio.gather(
            *(asyncio.to_thread(state.read, inst, self._seen) for _, inst in asked)
        )
        for (r, _), view in zip(asked, views, strict=True):
            r["routing"] = {**r.get("routing", {}), "state": view}
            if view["daemons"] != "running" and r.get("oper-state") == "running":
                r["oper-state"] = "failed"
