"""One periodic task: a piece of work done every so many seconds in the background, until
stopped (the controller's reconcile watcher and utilisation poller, the agent's drift look).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

log = logging.getLogger(__name__)


class Periodic:
    """`work()` every `interval` seconds in a task of its own (`at_start`: the first round
    at once, else after one interval). A round that raises is logged with `name` and the
    next one goes on: one failed look must not end the watching."""

    def __init__(
        self,
        work: Callable[[], Awaitable[object]],
        interval: float,
        name: str,
        *,
        at_start: bool = False,
    ):
        self.work = work
        self.interval = interval
        self.name = name
        self.at_start = at_start
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._loop(), name=self.name)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _loop(self) -> None:
        if not self.at_start:
            await asyncio.sleep(self.interval)
        while True:
            try:
                await self.work()
            except Exception:
                log.exception("%s: a round failed", self.name)
            await asyncio.sleep(self.interval)
