"""The southbound's subscriptions over NETCONF: one session of its own per agent, subscribed
to its notification stream (RFC 5277 <create-subscription>), apart from the session that runs
the transactions (a long RPC there must not hold a notice or a probe up).

ncclient delivers each notification, and the session's end, on its own session thread
(vnet.client.NetconfClient.subscribe); they are handed to the event loop as they come, so no
thread waits for them. The connect, the state read and the probes are blocking RPCs: they run
on the pool the southbound gives.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import TypeVar

from lxml import etree

from vnet.client import ClientError, ConnectError, Endpoint, NetconfClient
from vnet.controller.southbound import Notices, UnderlayNotice
from vnet.model.yang.guarantees import underlay_of
from vnet.model.yang.module import NAMESPACE

UNDERLAY = f'<underlay xmlns="{NAMESPACE}"/>'
EVENT = f"{{{NAMESPACE}}}underlay-event"
T = TypeVar("T")


def notice_of(host: str, notification: etree._Element) -> UnderlayNotice | None:
    """The underlay-event a <notification> carries (None: another kind)."""
    event = notification.find(EVENT)
    if event is None:
        return None
    interface = event.findtext(f"{{{NAMESPACE}}}interface", "").strip()
    status = event.findtext(f"{{{NAMESPACE}}}oper-status", "").strip()
    return UnderlayNotice(host, interface, status == "up") if interface else None


def _abort_late(connecting: Future[NetconfClient]) -> None:
    if not connecting.cancelled() and connecting.exception() is None:
        connecting.result().abort()


class NetconfSubscription:
    """One agent's notifications on a session of its own (southbound.Subscription)."""

    def __init__(self, host: str, client: NetconfClient, pool: Executor):
        self.host = host
        self.client = client
        self._pool = pool
        self._loop = asyncio.get_running_loop()
        self.notices = Notices()

    @classmethod
    async def open(cls, host: str, endpoint: Endpoint, pool: Executor) -> NetconfSubscription:
        loop = asyncio.get_running_loop()
        connecting = pool.submit(NetconfClient, endpoint)
        try:
            client = await asyncio.wrap_future(connecting)
        except asyncio.CancelledError:  # the controller stops: the session, if it comes, ends
            connecting.add_done_callback(_abort_late)
            raise
        subscription = cls(host, client, pool)
        try:
            await loop.run_in_executor(
                pool, client.subscribe, subscription._heard, subscription._ended
            )
        except BaseException:
            await subscription.close()
            raise
        return subscription

    def _heard(self, notification: etree._Element) -> None:  # on ncclient's thread
        notice = notice_of(self.host, notification)
        if notice is not None:
            self._to_loop(self.notices.hear, notice)

    def _ended(self, why: Exception) -> None:  # on ncclient's thread
        self._to_loop(
            self.notices.end, f"the notification session to {self.host}'s agent ended: {why}"
        )

    def _to_loop(self, call: Callable[[T], None], arg: T) -> None:
        # a session that ends as the controller stops may outlive its event loop: no one
        # listens any more
        with contextlib.suppress(RuntimeError):
            self._loop.call_soon_threadsafe(call, arg)

    async def next(self) -> UnderlayNotice:
        return await self.notices.next()

    async def underlay(self) -> dict[str, bool]:
        tree = await self._loop.run_in_executor(self._pool, self.client.get_tree, UNDERLAY, None)
        return {itf["name"]: itf.get("oper-status") == "up" for itf in underlay_of(tree)}

    async def probe(self, timeout: float) -> None:
        def ask() -> None:
            self.client.m.timeout = timeout
            self.client.get_tree(UNDERLAY, None)

        try:
            await self._loop.run_in_executor(self._pool, ask)
        except ClientError:
            return  # a refusal is an answer
        except Exception as err:  # not in time, or the transport broke (the caller closes)
            if isinstance(err, ConnectError):
                raise
            why = f"the notification session to {self.host}'s agent broke: {err}"
            raise ConnectError(why) from err

    async def close(self) -> None:
        """The connection ends (no <close-session>: the agent may be the one that hangs);
        `next` says so from now on."""
        self.notices.end(f"the subscription to {self.host}'s agent closed")
        await self._loop.run_in_executor(self._pool, self.client.abort)
