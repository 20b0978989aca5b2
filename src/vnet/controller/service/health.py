"""Failure detection: the controller listens to every agent and knows which hosts and links
work.

Per host, one task keeps a subscription to the agent's notifications (southbound.Subscription,
a session of its own, the controller's to close): it subscribes, reads the underlay
interfaces' operational state on that session, then follows the agent's `underlay-event`s.
When the session ends (the agent stopped, or a probe went unanswered) it subscribes again at
once and then with a backoff that doubles from 50 ms up to `most` seconds (tools.wait's
retry_until), for as long as the controller runs.

Liveness: a host is `up` while its subscription stands, `unreachable` as soon as the session
ended and the first new subscription failed (an agent whose process stopped: milliseconds),
or when a probe on the session (a small <get>, every `interval` seconds, each given `timeout`
seconds) went unanswered (an agent that hangs or a host whose power failed, with no TCP
goodbye): so within `interval` + `timeout` seconds (0.5 + 1 by default) of the agent's last
answer. It is `up` again when a subscription succeeds. While a host is not heard its
interfaces are unknown, and its links follow what their other end says (opstate.py).

Each change is written to the database (element_state), published to the event stream's
listeners (`changes`) and, when it is news (opstate.Deliveries), handed to the hooks, one
change at a time in the order they happened, by a task of its own: a slow hook holds no
detection up.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from collections.abc import Iterator, Mapping

from vnet.client import ConnectError
from vnet.controller.db.models import OperState
from vnet.controller.service.database import Database
from vnet.controller.service.opstate import (
    CONTROLLER,
    Deliveries,
    Key,
    StateHook,
    link_status,
    read_states,
    status,
    write_state,
)
from vnet.controller.southbound import Southbound, Subscription
from vnet.model.controller_api import ElementStatus, StateChange
from vnet.tools.periodic import Periodic
from vnet.tools.wait import retry_until

log = logging.getLogger(__name__)
FIRST_RETRY = 0.05  # seconds before the second attempt to subscribe again


def _any(err: Exception) -> bool:
    if not isinstance(err, ConnectError):
        log.warning("cannot subscribe to an agent: %s", err)
    return True


class Health:
    """Subscriptions to the agents of `hosts`, their liveness, and the states of `links`
    (name -> its two hosts); see the module's words."""

    def __init__(
        self,
        db: Database,
        southbound: Southbound,
        hosts: list[str],
        links: Mapping[str, tuple[str, str]],
        interval: float,
        timeout: float,
        most: float,
        hooks: list[StateHook] | None = None,
    ):
        self.db, self.southbound = db, southbound
        self.hosts = [h for h in hosts if h in southbound.hosts]
        self.links = dict(links)
        self.interval, self.timeout, self.most = interval, timeout, most
        self.interfaces: dict[str, dict[str, bool]] = {}  # host -> interface -> up, as heard
        self.states: dict[Key, ElementStatus] = {}
        self.hooks = hooks if hooks is not None else []  # the caller's list: added to later
        self._deliveries = Deliveries({})
        self._listeners: set[asyncio.Queue[StateChange]] = set()
        self._subscriptions: dict[str, Subscription] = {}
        self._tasks: list[asyncio.Task[None]] = []  # the hooks' delivery
        self._watching: dict[str, asyncio.Task[None]] = {}  # host -> its subscription's
        self._news: asyncio.Queue[tuple[Key, bool]] = asyncio.Queue()
        self._lock = asyncio.Lock()  # one change at a time: the rows are written in order
        self.periodic = Periodic(self.check, interval, "liveness-check")

    def unreachable_hosts(self) -> set[str]:
        """The hosts whose agent does not answer, as known now (the hooks hear of it later,
        one change at a time in order, behind changes a slow hook is still acting on)."""
        return {
            name
            for (kind, name), status in self.states.items()
            if kind == "host" and status.state == "unreachable"
        }

    # -- life --------------------------------------------------------------------------------
    async def start(self) -> None:
        self.states = await self.db.read(read_states)
        self._deliveries = Deliveries({k: v.state for k, v in self.states.items()})
        for host in self.hosts:
            self._start_watching(host)
        self._tasks.append(asyncio.create_task(self._deliver(), name="state-hooks"))
        self.periodic.start()

    def watch(self, host: str) -> None:
        """Watch `host` too from now on (its agent was given, or it is back in service);
        one watched already: nothing changes."""
        if host in self.hosts or host not in self.southbound.hosts:
            return
        self.hosts.append(host)
        if self._tasks:  # started: else start() watches it with the others
            self._start_watching(host)

    async def unwatch(self, host: str) -> None:
        """Stop watching `host` (removed from service): its subscription ends; its state
        stays as it was last seen."""
        if host in self.hosts:
            self.hosts.remove(host)
        task = self._watching.pop(host, None)
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    def _start_watching(self, host: str) -> None:
        self._watching[host] = asyncio.create_task(self._watch(host), name=f"watch-{host}")

    async def follow(self, links: Mapping[str, tuple[str, str]]) -> None:
        """The links are these from now on; the states of new ones follow from what their
        ends' agents said (a removed link keeps its last state: nothing reads it)."""
        new = {name: ends for name, ends in links.items() if name not in self.links}
        self.links = dict(links)
        for host in sorted({h for ends in new.values() for h in ends}):
            await self._links_of(host)

    async def stop(self) -> None:
        await self.periodic.stop()
        every = [*self._tasks, *self._watching.values()]
        for task in every:
            task.cancel()
        await asyncio.gather(*every, return_exceptions=True)
        self._tasks.clear()
        self._watching.clear()
        for subscription in list(self._subscriptions.values()):
            with contextlib.suppress(Exception):
                await subscription.close()
        self._subscriptions.clear()

    @contextlib.contextmanager
    def changes(self) -> Iterator[asyncio.Queue[StateChange]]:
        """Every state change from now on, while the block runs."""
        queue: asyncio.Queue[StateChange] = asyncio.Queue()
        self._listeners.add(queue)
        try:
            yield queue
        finally:
            self._listeners.discard(queue)

    # -- one agent's subscription ------------------------------------------------------------
    async def _watch(self, host: str) -> None:
        while True:
            subscription = await self._resubscribe(host)
            try:
                while True:
                    notice = await subscription.next()
                    self.interfaces.setdefault(host, {})[notice.interface] = notice.up
                    await self._links_of(host)
            except ConnectError as err:
                log.info("the notification session to %s's agent ended: %s", host, err)
            finally:
                self._subscriptions.pop(host, None)
                with contextlib.suppress(Exception):
                    await subscription.close()
            self.interfaces.pop(host, None)  # not heard: unknown until subscribed again
            await self._links_of(host)

    async def _resubscribe(self, host: str) -> Subscription:
        """A new subscription: at once; if that fails, the host is unreachable and it is
        tried again with the backoff until it succeeds."""
        try:
            return await self._subscribe(host)
        except ConnectError as err:
            await self._unreachable(host, f"no answer: {err}")
        except Exception as err:  # it answered, but not as it should: tried again all the same
            log.warning("cannot subscribe to %s's agent: %s", host, err)
        return await retry_until(
            lambda: self._subscribe(host), math.inf, _any, FIRST_RETRY, self.most
        )

    async def _subscribe(self, host: str) -> Subscription:
        subscription = await self.southbound.subscribe(host)
        try:
            interfaces = await subscription.underlay()
        except BaseException:
            await subscription.close()
            raise
        self._subscriptions[host] = subscription
        self.interfaces[host] = interfaces
        await self._set(("host", host), OperState.UP, "its agent answers", CONTROLLER)
        await self._links_of(host)
        return subscription

    async def _unreachable(self, host: str, reason: str) -> None:
        await self._set(("host", host), OperState.UNREACHABLE, reason, CONTROLLER)

    # -- liveness ----------------------------------------------------------------------------
    async def check(self) -> None:
        """Probe every subscription; one not answered in time makes its host unreachable."""
        held = list(self._subscriptions.items())
        answers = await asyncio.gather(
            *(asyncio.wait_for(s.probe(self.timeout), 2 * self.timeout) for _, s in held),
            return_exceptions=True,
        )
        for (host, subscription), answer in zip(held, answers, strict=True):
            if isinstance(answer, BaseException):
                reason = str(answer) or type(answer).__name__
                await self._unreachable(
                    host, f"no answer to a probe in {self.timeout:g} s: {reason}"
                )
                with contextlib.suppress(Exception):
                    await subscription.close()  # its watcher subscribes again

    # -- states ------------------------------------------------------------------------------
    async def _links_of(self, host: str) -> None:
        for name, ends in self.links.items():
            if host in ends:
                state, reason, by = link_status(ends, self.interfaces)
                await self._set(("link", name), state, reason, by)

    async def _set(self, key: Key, state: OperState, reason: str, by: str) -> None:
        async with self._lock:
            before = self.states.get(key, ElementStatus()).state
            if before == state.value:
                return
            now = status(state, reason, by)
            try:
                await self.db.write(lambda s: write_state(s, key, now))
            except Exception:  # the database cannot be written now: the watching goes on
                log.exception("%s %s is %s, but that could not be recorded", *key, state.value)
                return
            self.states[key] = now
            log.info("%s %s is %s: %s", key[0], key[1], state.value, reason)
            change = StateChange(kind=key[0], name=key[1], before=before, status=now)
            for queue in self._listeners:
                queue.put_nowait(change)
            news = self._deliveries.news(key, state)
            if news is not None:
                self._news.put_nowait((key, news))

    async def _deliver(self) -> None:
        while True:
            (kind, name), up = await self._news.get()
            for hook in list(self.hooks):
                try:
                    if kind == "link":
                        await hook.on_link_state(name, up)
                    else:
                        await hook.on_host_state(name, up)
                except Exception:
                    log.exception("a state hook failed on %s %s (%s)", kind, name, up)
