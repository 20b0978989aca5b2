"""The southbound seam in memory: every host an agent's datastore in this process.

For the service's logic tests (no root, no lab) and for sizes one machine cannot emulate
(`vnet bench controller` against many simulated hosts). Each host holds its HostConfig as an
agent does (datastore.py: lock, candidate, confirmed commits under persist tokens, the
model's checks), and can be told to fail at any step:

- refuse: the agent answers the step with an rpc-error (operation-failed); nothing changes;
- hang:   the agent stops answering (a stopped process): this call and every later one time
          out until `resume` (each after `rpc_timeout` seconds, as a client gives up; the
          calls that did are counted in `timed_out`); the sessions it had end on the
          controller's side;
- die:    the agent's process is gone: calls are refused a connection until `restart`,
          which rolls back a confirmed commit left pending (as an agent does at its start).

`done=True` makes a hang or a death happen after the step took effect (its answer was lost
on the way). `kill` and `hang` stop an agent at once, between steps; `set_underlay` changes
an underlay interface's operational state, which every subscription to the host hears (as
an agent's `underlay-event`). A fault hits `times` calls of its step, then the step works
again. Several southbounds may share hosts (`sharing`), like controllers sharing agents:
each has its own sessions, and the candidate locks order them.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TypeVar

from vnet.client import ConnectError, Refused, TimedOut
from vnet.controller.southbound import Counters, Edit, Lease, Notices, UnderlayNotice
from vnet.controller.southbound.datastore import HostDatastore, refused
from vnet.model.controller_config import AgentEndpoint
from vnet.model.host import HostConfig, host_configs
from vnet.model.host_guarantees import ConnectionPieces
from vnet.model.topology import Topology, VirtualRouter

T = TypeVar("T")


class Step(StrEnum):
    LOCK = "lock"
    EDIT = "edit"
    VALIDATE = "validate"
    COMMIT = "commit"
    CONFIRM = "confirm"
    CANCEL = "cancel"
    DISCARD = "discard"
    UNLOCK = "unlock"
    READ = "read"
    SUBSCRIBE = "subscribe"


class Failure(StrEnum):
    REFUSE = "refuse"
    HANG = "hang"
    DIE = "die"


@dataclass
class Fault:
    step: Step
    failure: Failure
    times: int = 1  # calls of the step it hits
    done: bool = False  # hang or die after the step took effect


@dataclass
class MemoryHost:
    """One host: its agent's datastore, whether the agent runs and answers, its counters."""

    name: str
    store: HostDatastore
    alive: bool = True
    answering: bool = True
    sessions: set[Lease] = field(default_factory=set)  # open sessions, every controller's
    faults: list[Fault] = field(default_factory=list)
    sent: dict[tuple[str, str], int] = field(default_factory=dict)  # class bytes
    shapers: dict[tuple[str, str], Counters] = field(default_factory=dict)  # (conn, VR)
    underlay: dict[str, bool] = field(default_factory=dict)  # interface -> up
    subscriptions: list[MemorySubscription] = field(default_factory=list)

    def end_sessions(self) -> None:
        for lease in self.sessions:
            self.store.session_ended(lease)
        self.sessions.clear()
        for subscription in list(self.subscriptions):
            subscription.end(f"the notification session to {self.name}'s agent ended")


class MemorySubscription:
    """A subscription to one memory host's notifications (southbound.Subscription)."""

    def __init__(self, host: MemoryHost):
        self.host = host
        self.notices = Notices()
        host.subscriptions.append(self)

    def end(self, why: str) -> None:
        if self in self.host.subscriptions:
            self.host.subscriptions.remove(self)
            self.notices.end(why)

    async def next(self) -> UnderlayNotice:
        return await self.notices.next()

    async def underlay(self) -> dict[str, bool]:
        await self.probe(0)
        return dict(self.host.underlay)

    async def probe(self, timeout: float) -> None:
        await asyncio.sleep(0)
        if self not in self.host.subscriptions:
            raise ConnectError(f"the notification session to {self.host.name}'s agent ended")
        if not (self.host.alive and self.host.answering):
            raise TimedOut(f"the agent of {self.host.name} did not answer in time")

    async def close(self) -> None:
        self.end(f"the subscription to {self.host.name}'s agent closed")


_leases = itertools.count(1)


class MemorySouthbound:
    """Hosts in memory behind the southbound seam; see the module's words."""

    def __init__(
        self,
        configs: Mapping[str, HostConfig],
        check_yang: bool = True,
        clock: Callable[[], float] = time.monotonic,
        latency: float = 0.0,
        rpc_timeout: float = 0.0,
    ):
        """`check_yang`: check candidates against the YANG module too (as agents do; a
        benchmark may leave it out); `clock`: what the agents' confirm timers run on;
        `latency`: seconds each RPC takes to be answered (the network and the agent);
        `rpc_timeout`: seconds a call to a hung agent waits before it times out."""
        self.latency = latency
        self._check_yang, self._clock = check_yang, clock  # for the hosts added later
        self._hosts = {
            h: MemoryHost(h, HostDatastore(hc, check_yang, clock)) for h, hc in configs.items()
        }
        self._open: dict[str, Lease] = {}  # host -> this southbound's session to it
        self.rpc_timeout = rpc_timeout
        self.calls: Counter[tuple[str, Step]] = Counter()  # steps asked, per host
        self.timed_out: Counter[str] = Counter()  # calls that waited for a hung agent, per host

    @classmethod
    def of_topology(
        cls,
        topo: Topology,
        check_yang: bool = True,
        clock: Callable[[], float] = time.monotonic,
        latency: float = 0.0,
        rpc_timeout: float = 0.0,
    ) -> MemorySouthbound:
        """Every host of a topology as a lab hands its agent its share."""
        return cls(host_configs(topo), check_yang, clock, latency, rpc_timeout)

    def add_agent(self, host: str, access: AgentEndpoint) -> None:
        """A host added while the controller runs: an agent with an empty datastore (its
        access is not used: nothing is reached over a network)."""
        if host not in self._hosts:
            self._hosts[host] = MemoryHost(
                host,
                HostDatastore(
                    HostConfig.model_validate({"host": host}), self._check_yang, self._clock
                ),
            )

    def sharing(self) -> MemorySouthbound:
        """Another controller's sessions to the same hosts."""
        other = MemorySouthbound({}, latency=self.latency, rpc_timeout=self.rpc_timeout)
        other._hosts = self._hosts  # the same agents; sessions of its own
        return other

    # -- what a test does to the hosts -----------------------------------------------------
    def fail(
        self, host: str, step: Step, failure: Failure, times: int = 1, done: bool = False
    ) -> None:
        self._hosts[host].faults.append(Fault(step, failure, times, done))

    def heal(self, host: str) -> None:
        """The faults set on `host` that have not hit yet are gone."""
        self._hosts[host].faults.clear()

    def resume(self, host: str) -> None:
        """A hung agent runs on: it finds the sessions ended that the controllers gave up on
        meanwhile (their lock and candidate go), and its timers fire if they are due."""
        one = self._hosts[host]
        one.answering = True
        one.end_sessions()

    def restart(self, host: str) -> None:
        """A dead agent starts again: what was pending rolls back, no session survives."""
        one = self._hosts[host]
        one.alive = one.answering = True
        one.end_sessions()
        one.store.roll_back()

    def kill(self, host: str) -> None:
        """The agent's process dies now: its sessions and subscriptions end."""
        one = self._hosts[host]
        one.alive = one.answering = False
        one.end_sessions()

    def hang(self, host: str) -> None:
        """The agent stops answering now (its sessions stay open, unanswered)."""
        self._hosts[host].answering = False

    def set_underlay(self, host: str, interface: str, up: bool) -> None:
        """The host's underlay interface goes up or down; a running agent tells its
        subscribers (a change to the same state is none, as the agent's watcher sees it)."""
        one = self._hosts[host]
        before = one.underlay.get(interface)
        one.underlay[interface] = up
        if before is not None and before != up and one.alive and one.answering:
            for subscription in list(one.subscriptions):
                subscription.notices.hear(UnderlayNotice(host, interface, up))

    def running(self, host: str) -> HostConfig:
        store = self._hosts[host].store
        store.expire()
        return store.running

    def pending(self, host: str) -> str | None:
        """The token of the confirmed commit pending on `host`, if any."""
        store = self._hosts[host].store
        store.expire()
        return store.pending.token if store.pending else None

    def set_running(self, host: str, hc: HostConfig) -> None:
        """Change the host behind the controller's back (drift)."""
        self._hosts[host].store.running = hc

    def count(self, host: str, sent: Mapping[tuple[str, str], int]) -> None:
        """The host's classes have sent these bytes (interface, network class) so far."""
        self._hosts[host].sent = dict(sent)

    def count_shaper(self, host: str, connection: str, router: str, counters: Counters) -> None:
        self._hosts[host].shapers[(connection, router)] = dict(counters)

    # -- the seam --------------------------------------------------------------------------
    @property
    def hosts(self) -> Collection[str]:
        return self._hosts.keys()

    async def lock(self, host: str) -> Lease:
        return await self._step(host, Step.LOCK, None, self._lock)

    def _lock(self, one: MemoryHost, lease: Lease) -> Lease:
        one.store.lock(lease)
        return lease

    async def edit(self, host: str, lease: Lease, edits: Sequence[Edit]) -> None:
        def edit(one: MemoryHost, _: Lease) -> None:
            one.store.require_lock(lease)
            one.store.edit(edits)

        await self._step(host, Step.EDIT, lease, edit)

    async def validate(self, host: str, lease: Lease) -> None:
        await self._step(host, Step.VALIDATE, lease, lambda one, _: one.store.validate())

    async def commit(self, host: str, lease: Lease, token: str, timeout: int) -> None:
        def commit(one: MemoryHost, _: Lease) -> None:
            one.store.require_lock(lease)
            one.store.commit(token, timeout)

        await self._step(host, Step.COMMIT, lease, commit)

    async def confirm(self, host: str, token: str) -> None:
        await self._step(host, Step.CONFIRM, None, lambda one, _: one.store.confirm(token))

    async def cancel(self, host: str, token: str) -> None:
        await self._step(host, Step.CANCEL, None, lambda one, _: one.store.cancel(token))

    async def discard(self, host: str, lease: Lease) -> None:
        await self._step(host, Step.DISCARD, lease, lambda one, _: one.store.discard())

    async def unlock(self, host: str, lease: Lease | None) -> None:
        await self._step(host, Step.UNLOCK, lease, lambda one, held: one.store.unlock(held))

    async def connections(self, host: str) -> list[ConnectionPieces]:
        return await self._step(
            host, Step.READ, None, lambda one, _: list(one.store.running.srv6.connections)
        )

    async def routers(self, host: str) -> list[str]:
        return await self._step(
            host, Step.READ, None, lambda one, _: [vr.name for vr in one.store.running.routers]
        )

    async def router_configs(self, host: str) -> list[VirtualRouter]:
        return await self._step(
            host, Step.READ, None, lambda one, _: list(one.store.running.routers)
        )

    async def class_bytes(self, host: str) -> dict[tuple[str, str], int]:
        return await self._step(host, Step.READ, None, lambda one, _: dict(one.sent))

    async def shaper_counters(self, host: str, connection: str) -> dict[str, Counters]:
        def read(one: MemoryHost, _: Lease) -> dict[str, Counters]:
            zero = {"bytes": 0, "packets": 0, "drops": 0}
            return {
                ingress.router: one.shapers.get((connection, ingress.router), zero)
                for conn in one.store.running.srv6.connections
                if conn.name == connection
                for ingress in conn.ingress
            }

        return await self._step(host, Step.READ, None, read)

    async def reachable(self, host: str) -> bool:
        one = self._hosts[host]
        if one.alive and not one.answering:
            await asyncio.sleep(self.rpc_timeout)  # the client gives up on a hung agent
        return one.alive and one.answering

    async def subscribe(self, host: str) -> MemorySubscription:
        await asyncio.sleep(0)
        self.calls[(host, Step.SUBSCRIBE)] += 1
        one = self._hosts[host]
        await self._reach(one)
        return MemorySubscription(one)

    async def close(self) -> None:
        for host, lease in self._open.items():
            one = self._hosts[host]
            if lease in one.sessions and one.alive and one.answering:
                one.sessions.discard(lease)
                one.store.session_ended(lease)
        self._open.clear()

    # -- one step ----------------------------------------------------------------------------
    async def _step(
        self,
        host: str,
        step: Step,
        lease: Lease | None,
        work: Callable[[MemoryHost, Lease], T],
    ) -> T:
        """`work` on the host's datastore, on session `lease` (None: the open one, or a new
        one), as the agent would answer it, or the fault the test set for this step."""
        await asyncio.sleep(self.latency)  # an RPC is a pause: other requests go on meanwhile
        self.calls[(host, step)] += 1
        one = self._hosts[host]
        await self._reach(one)
        session = self._session(one, lease)
        one.store.expire()
        fault = self._fault(one, step)
        if fault is None:
            return work(one, session)
        if fault.failure == Failure.REFUSE:
            raise refused("operation-failed", f"{step}: refused (a fault the test set)")
        if fault.done:
            work(one, session)
        if fault.failure == Failure.DIE:
            one.alive = False
        one.answering = False
        self._open.pop(host, None)  # the controller drops a session that did not answer
        await self._reach(one)
        raise AssertionError("unreachable")

    async def _reach(self, one: MemoryHost) -> None:
        """ConnectError as the client raises it when the agent is gone or stopped (TimedOut
        after `rpc_timeout`)."""
        if not one.alive:
            self._open.pop(one.name, None)
            raise Refused(f"cannot reach the agent of {one.name}: connection refused")
        if not one.answering:
            self.timed_out[one.name] += 1
            await asyncio.sleep(self.rpc_timeout)
            raise TimedOut(f"the agent of {one.name} did not answer in {self.rpc_timeout:g} s")

    def _session(self, one: MemoryHost, lease: Lease | None) -> Lease:
        """The session a step runs on: `lease`, if it is still open; else the open one."""
        if lease is not None:
            if lease not in one.sessions:
                raise ConnectError(f"the NETCONF session to {one.name}'s agent ended")
            return lease
        current = self._open.get(one.name)
        if current is None or current not in one.sessions:
            current = next(_leases)
            one.sessions.add(current)
            self._open[one.name] = current
        return current

    @staticmethod
    def _fault(one: MemoryHost, step: Step) -> Fault | None:
        for fault in one.faults:
            if fault.step == step:
                fault.times -= 1
                if fault.times <= 0:
                    one.faults.remove(fault)
                return fault
        return None
