"""The controller's service: what the API calls (the `ControllerService` protocol).

Each method checks the principal's right first, then hands the request to its resource
family: connections (flows.py: create, release; moves.py: modify, rearrangement), inventory
(inventory.py), each working in short SQL transactions run in threads (`Database`) around at
most one agent transaction at a time per request step; a failed one puts back what it left
changed (putback.py). `start()` recovers the requests a previous run left in flight
(recovery.py), reconciles every agent with the database (reconcile.py) and starts the
background work (utilisation.py, the reconcile watcher); `stop()` ends it. The agents are
reached through the southbound seam given (vnet.controller.southbound).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
from collections.abc import Coroutine, Iterator
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from vnet.controller.admission.admit import Policy
from vnet.controller.agents.realise import AgentError, Agents
from vnet.controller.db import ledger
from vnet.controller.db.models import Tenant
from vnet.controller.errors import AgentRefused, BadRequest, Conflict
from vnet.controller.inventory import Inventory
from vnet.controller.planner import piece_name
from vnet.controller.principal import Principal
from vnet.controller.service import agent_access, opstate, store, views
from vnet.controller.service.adoption import Adoption
from vnet.controller.service.agent_access import AgentAccesses
from vnet.controller.service.database import Database, Timings
from vnet.controller.service.failover import Failover
from vnet.controller.service.flows import Ask, Flows, Replay, TryMoves
from vnet.controller.service.health import Health
from vnet.controller.service.inventory import InventoryCache, InventoryChanges
from vnet.controller.service.lifecycle import Deletions
from vnet.controller.service.moves import Moves
from vnet.controller.service.opstate import StateHook
from vnet.controller.service.putback import PutBack
from vnet.controller.service.reconcile import Reconciler, Watcher
from vnet.controller.service.recovery import Recovery, Settled
from vnet.controller.service.reroute import Reroute
from vnet.controller.service.underlay import UnderlayChanges
from vnet.controller.service.utilisation import UtilisationPoller
from vnet.controller.southbound import Southbound
from vnet.model import controller_api as api
from vnet.model.controller_config import AgentEndpoint, ControllerConfig

log = logging.getLogger(__name__)
KEY_MAX = 128  # the connection table's idempotency_key column


class Service:
    """The service over a database and the agents of a southbound (`group`, `lock_wait`:
    how its transactions across agents run, controller.agents.realise.Agents; `lock_wait`
    None: the configuration's)."""

    def __init__(
        self,
        config: ControllerConfig,
        engine: Engine,
        southbound: Southbound,
        *,
        group: bool = True,
        lock_wait: float | None = None,
    ):
        self.config = config
        self.db = Database(engine)
        wait = config.lock_wait if lock_wait is None else lock_wait
        agents = Agents(southbound, config.confirm_timeout, group=group, lock_wait=wait)
        self.agents = agents
        self.policy = Policy(margin=config.margin)
        self.cache = InventoryCache(self.db)
        self.flows = Flows(self.db, agents, self.policy)
        self.moves = Moves(self.flows)
        self.accesses = AgentAccesses(config)
        self.inventory_changes = InventoryChanges(self.db, self.cache, agents, self.accesses)
        self.deletions = Deletions(self.db, self.cache, agents, self.accesses)
        self.reconciler = Reconciler(self.db, agents, self.cache.get, self.policy)
        self.adoption = Adoption(self.db, self.cache, self.inventory_changes, self._adopted)
        self.recovery = Recovery(self.db, agents, self.flows.liveness)
        self.putback = PutBack(self.reconciler, self.repair)
        self.reroute = Reroute(self.flows, self.moves, self.putback)
        self.underlay = UnderlayChanges(self.db, self.cache, self.reroute, self.accesses, self)
        self.failover = Failover(self.db, self.reroute, self.inventory, self.reconciler.all_hosts)
        self.watcher: Watcher | None = None
        self.poller: UtilisationPoller | None = None
        self.health: Health | None = None  # failure detection (health.py), from start()
        # told of each real change (add_state_hook); failover first: it moves connections
        self.state_hooks: list[StateHook] = [self.failover]
        self.recovered: list[Settled] = []
        self.restored: dict[str, list[str]] = {}  # host -> VRs put back at start
        self._repairs: set[asyncio.Task[object]] = set()

    # -- life ------------------------------------------------------------------------------
    async def start(self, background: bool = True) -> None:
        """Recovery, then reconciliation of every agent, then the background work."""
        inv = await self.inventory()
        hosts = [h.name for h in inv.topology.hosts if h.name not in inv.removed_hosts]
        await self._reach_stored_agents()
        await asyncio.to_thread(self.flows.liveness.hold)
        self.recovered = await self.recovery.run()
        # the VRs first: connection pieces put back by reconciliation may need them
        self.restored = await self.inventory_changes.restore_routers()
        outcome = await self.reconciler.all_hosts(hosts)
        self.watcher = Watcher(self.reconciler, hosts, self.config.reconcile_interval)
        self.watcher.reachable = {h: not isinstance(r, Exception) for h, r in outcome.items()}
        self.add_state_hook(self.watcher)  # a host heard again is reconciled at once
        links = {name: (info.a, info.b) for name, info in inv.links.items()}
        self.poller = UtilisationPoller(self.agents, links, self.config.utilisation_interval)
        cfg = self.config
        self.health = Health(
            self.db,
            self.agents.southbound,
            hosts,
            links,
            cfg.liveness_interval,
            cfg.liveness_timeout,
            cfg.liveness_backoff,
            self.state_hooks,
        )
        self.failover.seed(await self.db.read(opstate.read_states))
        self.failover.unreachable_now = self.health.unreachable_hosts
        if background:
            self.watcher.start()
            self.poller.start()
            await self.health.start()

    async def stop(self) -> None:
        for worker in (self.watcher, self.poller, self.health):
            if worker is not None:
                await worker.stop()
        for task in list(self._repairs):
            task.cancel()
        await asyncio.gather(*self._repairs, return_exceptions=True)
        await self.agents.finish()  # the southbound is its owner's to close
        await asyncio.to_thread(self.flows.liveness.release)

    async def _reach_stored_agents(self) -> None:
        """The agents given through the API before (the configuration's win): one that
        cannot be used now (its secret file gone) is logged, and its host left without."""
        for host, agent in (await self.db.read(agent_access.stored)).items():
            if host in self.accesses.configured:
                continue
            self.accesses.added[host] = agent
            try:
                self.agents.southbound.add_agent(host, agent)
            except ValueError as err:
                log.error("host %s's agent cannot be reached as it was given: %s", host, err)

    # -- hosts and links added while it runs (AgentWiring) ----------------------------------
    async def join(self, host: str, agent: AgentEndpoint | None) -> bool:
        if agent is not None:
            self.agents.southbound.add_agent(host, agent)
        outcome = await self.reconciler.all_hosts([host])
        answered = not isinstance(outcome.get(host), Exception)
        if self.watcher is not None:
            if host not in self.watcher.hosts:
                self.watcher.hosts.append(host)
            self.watcher.reachable[host] = answered
        if self.health is not None:
            self.health.watch(host)
        return answered

    async def left(self, host: str) -> None:
        if self.watcher is not None and host in self.watcher.hosts:
            self.watcher.hosts.remove(host)
        if self.health is not None:
            await self.health.unwatch(host)

    async def changed(self) -> None:
        inv = await self.inventory()
        links = {name: (info.a, info.b) for name, info in inv.links.items()}
        if self.poller is not None:
            self.poller.follow(links)
        if self.health is not None:
            await self.health.follow(links)

    def add_state_hook(self, hook: StateHook) -> None:
        """`hook` is told of each real change of a host's or link's state (opstate.py),
        from start() on; before or after start alike."""
        self.state_hooks.append(hook)

    def repair(self, hosts: list[str]) -> None:
        """Reconcile `hosts`, which a failed request may have left changed and which did not
        answer: when each answers again (the watcher's next check after that), and once
        more, in the background, after the confirm timeout that rolls a pending change
        back."""
        if self.watcher is not None:
            for host in hosts:
                self.watcher.reachable[host] = False  # reconciled when it answers again

        async def later() -> None:
            await asyncio.sleep(self.config.confirm_timeout + 1)
            await self.reconciler.all_hosts(hosts)

        self._background(later(), f"repair-{'-'.join(hosts)}")

    def _background(self, work: Coroutine[Any, Any, object], name: str) -> None:
        """`work` as a task the service ends at `stop`, in a context of its own: not that of
        the request that started it, which asks a host that did not answer in time nothing
        more (agents/unanswered.py)."""
        task = asyncio.create_task(work, name=name, context=contextvars.Context())
        self._repairs.add(task)
        task.add_done_callback(self._repairs.discard)

    async def inventory(self) -> Inventory:
        return await self.cache.get()

    # -- connections -----------------------------------------------------------------------
    async def create_connection(
        self,
        who: Principal,
        tenant: str,
        request: api.ConnectionRequest,
        idempotency_key: str | None = None,
        timings: Timings | None = None,
    ) -> api.ConnectionAnswer:
        who.require_tenant(tenant)
        if idempotency_key is not None and not 0 < len(idempotency_key) <= KEY_MAX:
            raise BadRequest(
                f"an idempotency key has 1 to {KEY_MAX} characters, not {len(idempotency_key)}",
                field=api.IDEMPOTENCY_HEADER,
            )
        async with self.putback.answering():
            return await self._create(who, tenant, request, idempotency_key, timings)

    async def _create(
        self,
        who: Principal,
        tenant: str,
        request: api.ConnectionRequest,
        idempotency_key: str | None,
        timings: Timings | None,
    ) -> api.ConnectionAnswer:
        ask = Ask(await self.failover.planning(), tenant, request, idempotency_key)
        moved: list[api.Move] = []
        try:
            admitted = await self.flows.admit_now(ask, timings)
        except TryMoves:
            moved, admitted = await self.moves.admit_moving(ask, timings)
        if isinstance(admitted, Replay):
            return admitted.answer
        view = await self.flows.realise_new(admitted, tenant, timings)
        await self._landed(view)
        # another tenant's connection may have moved: its name is not this caller's to see
        shown = [m for m in moved if who.may_see(m.tenant)]
        return api.ConnectionAnswer(connection=view, moved=shown)

    async def modify_connection(
        self,
        who: Principal,
        tenant: str,
        name: str,
        request: api.ModifyRequest,
        timings: Timings | None = None,
    ) -> api.ConnectionAnswer:
        who.require_tenant(tenant)
        inv = await self.inventory()
        moving = await self.db.write(
            lambda s: self.moves.start(s, inv, tenant, name, request), timings
        )
        async with self.putback.answering():
            view = await self.moves.realise(moving, tenant, timings)
        await self._landed(view)
        return api.ConnectionAnswer(connection=view)

    async def _landed(self, view: api.ConnectionView) -> None:
        """A request planned before a failure lands on the failed element when the
        failover acted meanwhile (its moves see only connections no request is changing):
        it is moved off (or degraded) now, as the failure's own were."""
        down = self.failover.down
        if (down.links or down.hosts) and down.on_path(await self.inventory(), view.path):
            self._background(self.failover.retry(), "failover-retry")

    async def release_connection(
        self, who: Principal, tenant: str, name: str, timings: Timings | None = None
    ) -> api.ConnectionView:
        who.require_tenant(tenant)
        inv = await self.inventory()
        started = await self.db.write(
            lambda s: self.flows.start_release(s, inv, tenant, name), timings
        )
        async with self.putback.answering():
            released = await self.flows.realise_release(started, tenant, timings)
        if self.failover.links or self.failover.hosts:  # degraded ones may fit now
            self._background(self.failover.retry(), "failover-retry")
        return released

    async def connection(self, who: Principal, tenant: str, name: str) -> api.ConnectionView:
        who.require_tenant(tenant)
        return await self.db.read(
            lambda s: store.view(store.latest_connection(s, tenant, name), tenant)
        )

    async def connections(
        self, who: Principal, tenant: str | None = None, include_released: bool = False
    ) -> list[api.ConnectionView]:
        shown = await self._shown(who, tenant)
        return await self.db.read(lambda s: store.connection_views(s, shown, include_released))

    async def counters(self, who: Principal, tenant: str, name: str) -> api.ConnectionCounters:
        """The connection's shapers as the agents of its ingress hosts count them now."""
        who.require_tenant(tenant)
        conn = await self.db.read(lambda s: store.latest_connection(s, tenant, name))
        out = api.ConnectionCounters(tenant=tenant, name=name)
        if conn.state in store.GONE or not conn.hops:
            return out  # nothing on any agent
        ends = [(conn.a, conn.b, conn.hops[0]["host"])]
        if conn.bidirectional:
            ends.append((conn.b, conn.a, conn.hops[-1]["host"]))
        for src, dst, host in ends:
            try:
                shapers = await self.agents.shaper_counters(host, piece_name(conn.id))
            except AgentError as err:
                raise AgentRefused(err.host, err.reason, err.tag) from None
            for router, counted in shapers.items():
                shaper = api.ShaperCounters(
                    direction=f"{src} -> {dst}", host=host, router=router, **counted
                )
                out.shapers.append(shaper)
        return out

    async def connection_changes(
        self, who: Principal, after: int | None
    ) -> tuple[int, list[api.ConnectionChange]]:
        """History lines since event id `after` of the connections `who` may see."""
        shown = None if who.is_provider else who.tenant
        return await self.db.read(lambda s: store.changes_after(s, after, shown))

    async def history(self, who: Principal, tenant: str, name: str) -> list[api.ConnectionEvent]:
        who.require_tenant(tenant)
        return await self.db.read(
            lambda s: store.events(s, store.latest_connection(s, tenant, name))
        )

    # -- inventory -------------------------------------------------------------------------
    async def tenants(self, who: Principal) -> list[api.TenantView]:
        names = await self.db.read(store.tenant_names)
        return [api.TenantView(name=n) for n in names if who.may_see(n)]

    async def create_tenant(self, who: Principal, name: str) -> api.TenantView:
        who.require_provider()

        def add(session: Session) -> None:
            if name in store.tenant_names(session):
                raise Conflict(f"tenant {name!r} exists", field="name")
            session.add(Tenant(name=name))

        await self.db.write(add)
        await self.cache.forget()  # read again with the new tenant
        return api.TenantView(name=name)

    async def create_network(
        self, who: Principal, tenant: str, request: api.NetworkRequest
    ) -> api.NetworkView:
        return await self.inventory_changes.create_network(who, tenant, request)

    async def create_router(
        self, who: Principal, tenant: str, request: api.RouterRequest
    ) -> api.RouterView:
        return await self.inventory_changes.create_router(who, tenant, request)

    async def create_endhost(
        self, who: Principal, tenant: str, request: api.EndHostRequest
    ) -> api.EndHostView:
        return await self.inventory_changes.create_endhost(who, tenant, request)

    # -- deletes (lifecycle.py) --------------------------------------------------------------
    async def delete_tenant(self, who: Principal, name: str) -> api.TenantView:
        return await self.deletions.delete_tenant(who, name)

    async def delete_network(self, who: Principal, tenant: str, name: str) -> api.NetworkView:
        return await self.deletions.delete_network(who, tenant, name)

    async def delete_router(self, who: Principal, tenant: str, name: str) -> api.RouterView:
        return await self.deletions.delete_router(who, tenant, name)

    async def delete_endhost(self, who: Principal, tenant: str, name: str) -> api.EndHostView:
        return await self.deletions.delete_endhost(who, tenant, name)

    # -- VRs made on an agent directly (adoption.py) ------------------------------------------
    async def unmanaged_routers(self, who: Principal, host: str) -> list[api.UnmanagedRouter]:
        return await self.adoption.unmanaged(who, host)

    async def adopt_router(
        self, who: Principal, tenant: str, request: api.AdoptRequest
    ) -> api.RouterView:
        return await self.adoption.adopt(who, tenant, request)

    def _adopted(self, host: str, name: str) -> None:
        self.reconciler.unmanaged.get(host, set()).discard(name)

    async def _shown(self, who: Principal, tenant: str | None) -> str | None:
        """The tenant a list is filtered to (None: all); an unknown one is NotFound."""
        shown = views.visible_tenant(who, tenant)
        if tenant is not None:
            await self.db.read(lambda s: store.tenant_row(s, tenant))
        return shown

    async def networks(self, who: Principal, tenant: str | None = None) -> list[api.NetworkView]:
        shown = await self._shown(who, tenant)
        return views.networks((await self.inventory()).topology, shown)

    async def routers(self, who: Principal, tenant: str | None = None) -> list[api.RouterView]:
        shown = await self._shown(who, tenant)
        return views.routers((await self.inventory()).topology, shown)

    async def endhosts(self, who: Principal, tenant: str | None = None) -> list[api.EndHostView]:
        shown = await self._shown(who, tenant)
        return views.endhosts((await self.inventory()).topology, shown)

    async def hosts(self, who: Principal) -> list[api.HostView]:
        inv = await self.inventory()
        reachable = self.watcher.reachable if self.watcher else {}
        states = await self.db.read(opstate.read_states)
        shown = [h for h in inv.topology.hosts if h.name not in inv.removed_hosts]
        return views.hosts(
            shown, self.accesses.endpoints(), reachable, states, self.reconciler.unmanaged
        )

    async def add_host(self, who: Principal, request: api.HostRequest) -> tuple[api.HostView, bool]:
        return await self.underlay.add_host(who, request)

    async def add_link(self, who: Principal, request: api.LinkRequest) -> tuple[api.LinkView, bool]:
        return await self.underlay.add_link(who, request)

    async def remove_host(self, who: Principal, name: str) -> api.Removed:
        return await self.underlay.remove_host(who, name)

    async def remove_link(self, who: Principal, name: str) -> api.Removed:
        return await self.underlay.remove_link(who, name)

    async def links(self, who: Principal) -> list[api.LinkView]:
        inv = await self.inventory()
        held = await self.db.read(ledger.held_by_direction)
        rates = self.poller.rates if self.poller else {}
        states = await self.db.read(opstate.read_states)
        return views.links(inv.links, held, rates, states)

    @contextlib.contextmanager
    def state_changes(self) -> Iterator[asyncio.Queue[api.StateChange]]:
        """Every change of a host's or link's operational state while the block runs (none
        before start(background=True))."""
        if self.health is None:
            yield asyncio.Queue()
            return
        with self.health.changes() as queue:
            yield queue

    async def topology(self, who: Principal) -> api.TopologyView:
        shown = None if who.is_provider else who.tenant
        return api.TopologyView(
            hosts=await self.hosts(who),
            links=await self.links(who),
            tenants=await self.tenants(who),
            networks=await self.networks(who, shown),
            routers=await self.routers(who, shown),
            endhosts=await self.endhosts(who, shown),
            connections=await self.connections(who, shown),
        )
