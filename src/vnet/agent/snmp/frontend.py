"""Registers SNMP with the agent (see vnet.agent.frontends): VNET-ROUTER-MIB on the datastore.

The front-end reads the datastore only through its public interface:
`running_snapshot()` for the configuration, `state_tree()` for kernel state,
`update()` to commit a SET and `subscribe()` (in `notify`) for events; and
`journal.router_change` for what changed between two configurations, as the
datastore's commit finds it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Collection
from typing import Any

from vnet import __version__
from vnet.agent.config import AgentConfig
from vnet.agent.datastore import RUNNING, Datastore
from vnet.agent.datastore.journal import router_change
from vnet.agent.snmp import columns, smi
from vnet.agent.snmp.engine import build_engine
from vnet.agent.snmp.errors import SnmpError
from vnet.agent.snmp.notify import Notifier
from vnet.agent.snmp.responder import Responder
from vnet.agent.snmp.rows import Key, Pending, routers_by_index, working_rows
from vnet.agent.snmp.setplan import SetPlan, blame_for, plan_set
from vnet.agent.snmp.tables import ConfigTables, StateTables
from vnet.agent.snmp.view import Column, Freshness, NeedsState, Reading, View
from vnet.model.yang.errors import ErrorTag, RpcError
from vnet.model.yang.host import routers_of
from vnet.model.yang.module import NETWORKS, ROUTERS

log = logging.getLogger("vnet.agent.snmp")

STATE_TTL = 1.0  # seconds: kernel state (oper state, counters) is read at most this often
# the top-level members whose state the MIB's state columns are made of (not the hypervisor
# container, whose active count looks at every VR, nor the guarantees' class counters)
STATE_TOPS = {"routers"}
SESSION = "snmp"
MAX_MESSAGE = 65507  # snmpEngineMaxMessageSize: the largest UDP payload

# datastore error-tag -> SNMP error-status of the SET
COMMIT_ERRORS = {
    ErrorTag.OPERATION_FAILED: "commitFailed",  # the kernel refused; the datastore rolled back
    ErrorTag.IN_USE: "resourceUnavailable",  # a NETCONF session holds the running lock
    ErrorTag.LOCK_DENIED: "resourceUnavailable",
    ErrorTag.ACCESS_DENIED: "noAccess",  # NACM
}

Tree = dict[str, Any]


class _ConfigColumns:
    """The columns made from the running configuration and the pending rows: the per-VR
    tables changed for the VRs that changed, the networks' remade when they changed."""

    def __init__(self) -> None:
        self.tables = ConfigTables()
        self.networks: Tree | None = None  # the networks container the columns were made of
        self.net_columns: list[Column] = columns.network_columns({})

    def refresh(self, running: Tree, pending: Pending) -> None:
        self.tables.refresh(running, pending)
        networks = running.get(NETWORKS)
        if networks is not self.networks and networks != self.networks:
            self.net_columns = columns.network_columns(running)
        self.networks = networks


class StateColumns:
    """Kernel state (oper state, counters) per VR, each VR's read again when a request
    reaches it more than STATE_TTL seconds after it was read (a request that reaches most
    VRs, a walk, reads every one in one go)."""

    def __init__(self) -> None:
        self.tree: Tree | None = None
        self.read_at: dict[int, float] = {}  # VR index -> when its state was read
        self.running: Tree | None = None  # the configuration the state was read for
        self.tables = StateTables()
        self.lock = asyncio.Lock()

    def usable(self, running: Tree) -> bool:
        """Whether the state was read for this configuration (each VR's age is checked as
        a request reaches it, `fresh`)."""
        return self.tree is not None and (self.running is running or self.running == running)

    def served(self, running: Tree, reading: Reading) -> tuple[Tree | None, Checks]:
        """The state a pass over a request serves (None: none, read for this configuration),
        and the checks of its instances of one VR and of those made of every VR's (None:
        served as they are)."""
        if self.tree is None or reading.last:
            return self.tree, (None, None)
        if not self.usable(running):  # lazy: a request that reaches state reads what changed
            return None, (_config_changed, _config_changed)
        return self.tree, (self.fresh(reading.since), self.fresh(reading.since, every=True))

    def fresh(self, since: float, every: bool = False) -> Freshness:
        """The check of a request that began at `since` (time.monotonic): a VR's state read
        STATE_TTL before it, or later, is served; an older one is read again first (`every`:
        an instance made of every VR's state, such as the count of those running)."""

        def one(key: Key) -> NeedsState | None:
            if self.read_at.get(key[0], -STATE_TTL) < since - STATE_TTL:
                return NeedsState(key[0])
            return None

        def each(_key: Key) -> NeedsState | None:
            oldest = min(self.read_at.values(), default=since)
            return NeedsState() if oldest < since - STATE_TTL else None

        return each if every else one

    async def refresh(
        self, running_now: Callable[[], Tree], ds: Datastore, wanted: Collection[int] | None = None
    ) -> None:
        """Read the state of the VRs the configuration changed, and of those `wanted`
        (indexes; None: every VR) whose state is older than STATE_TTL."""
        async with self.lock:
            running = running_now()
            now = time.monotonic()
            old = self._stale(now, wanted)
            change = self._change(running)
            if self.tree is None or old is None or change is None:
                state = await ds.state_tree(None, STATE_TOPS)
                self.read_at = {int(r["index"]): now for r in routers_of(state)}
                self.tables.remake(state)
            else:
                changed, gone = change
                if not (changed or gone or old):
                    self.running = running
                    return
                by_index = routers_by_index(running)
                names = {by_index[i]["name"] for i in old if i in by_index}
                fresh = await ds.state_tree(changed | names, STATE_TOPS)
                state = merged_state(self.tree, fresh, running)
                self.read_at.update((int(r["index"]), now) for r in routers_of(fresh))
                self.tables.change(gone, routers_of(fresh))
            self.tree, self.running = state, running

    def _change(self, running: Tree) -> tuple[set[str], set[int]] | None:
        """The VRs configured otherwise since the state was read (names, whose state to
        read) and the indexes they had (whose instances go); None: not known, read all."""
        if self.running is None:
            return None
        if self.running is running:
            return set(), set()
        listed = router_change(self.running, running)
        if listed is None:
            return None
        return {r["name"] for r in listed.put}, {int(r["index"]) for r in listed.superseded()}

    def _stale(self, now: float, wanted: Collection[int] | None) -> set[int] | None:
        """The VRs of `wanted` whose state is older than STATE_TTL; None: read every VR
        (none wanted but most old, or none read yet)."""
        ages = self.read_at
        if wanted is None:
            old = {i for i, at in ages.items() if now - at >= STATE_TTL}
            return None if not ages or 2 * len(old) >= len(ages) else old
        return {i for i in wanted if now - ages.get(i, -STATE_TTL) >= STATE_TTL}


def merged_state(old: Tree, fresh: Tree, running: Tree) -> Tree:
    """`fresh` (the state of the changed VRs, with everything but VRs) with each other VR
    of `running` as `old` (read at most STATE_TTL ago for the same configuration) had it."""
    read = {r["name"]: r for r in routers_of(fresh)}
    kept = {r["name"]: r for r in routers_of(old)}
    routers = [read.get(r["name"]) or kept[r["name"]] for r in routers_of(running)]
    out = dict(fresh)
    if routers:
        out[ROUTERS] = {**running.get(ROUTERS, {}), "router": routers}
    return out


Checks = tuple[Freshness | None, Freshness | None]  # of one VR's instances, of every VR's


def _config_changed(_key: Key) -> NeedsState:
    return NeedsState(config=True)


def _checked(made: list[Column], fresh: Freshness | None, state: Tree | None) -> list[Column]:
    """The state columns of a view (lazy when `state` is None), asking `fresh` (if any)
    before they serve an instance or, lazy, what to read."""
    if state is None:
        made = columns.state_columns(None)
    return made if fresh is None else [c.checked(fresh) for c in made]


class SnmpFrontend:
    def __init__(self, ds: Datastore, config: AgentConfig):
        self.ds = ds
        self.config = config
        self.pending = Pending()
        self.started = time.monotonic()
        self.write_lock = asyncio.Lock()
        self.descr = f"vnet {__version__} agent on {config.host} (VNET-ROUTER-MIB)"
        self._config = _ConfigColumns()
        self._state = StateColumns()
        self.responder: Responder | None = None
        self.notifier: Notifier | None = None
        self.engine: Any = None
        self.engine_id = b""
        self.boots = 0

    def uptime(self) -> int:
        """sysUpTime: hundredths of a second since the front-end started."""
        return int((time.monotonic() - self.started) * 100)

    # -- reading ---------------------------------------------------------------
    def running(self) -> Tree:
        """The running configuration: the one place SNMP reads it from the datastore.

        The committed tree itself, not a copy (SNMP only reads it; a commit
        replaces it): comparing it with the last one is then nearly free, and
        the columns made from it are rebuilt only when it changed."""
        return self.ds.running_snapshot()

    def current_view(self, reading: Reading) -> View:
        """Everything served, from the running configuration, pending rows and kernel state.

        Kernel state is used when it was read for this configuration, each VR's if it is
        recent enough for the request (StateColumns.fresh; the last pass of a request uses
        what it read); otherwise a request that reaches it raises view.NeedsState."""
        running = self.running()
        self.pending.expire(time.time())
        self._config.refresh(running, self.pending)
        tree, (one, every) = self._state.served(running, reading)
        return View(
            [
                *columns.system_columns(self.descr, self.config.host, self.uptime()),
                *columns.hypervisor_columns(
                    self.config.host,
                    self._config.tables.counts(),
                    None if tree is None else self._state.tables.running(),
                    every,
                ),
                *self._config.tables.columns(),
                *_checked(self._state.tables.columns() if tree is not None else [], one, tree),
                *self._config.net_columns,
                *columns.engine_columns(
                    self.engine_id, self.boots, int(time.monotonic() - self.started), MAX_MESSAGE
                ),
            ]
        )

    async def view(self, read: Reading, v3_user: str | None = None) -> View:
        """The current view for a request that began at `read.since`, after reading the
        state of the VRs `read.wanted` names (None: every VR), if any. An SNMPv3 user that
        is also a user of the agent sees what NACM lets it read."""
        if read.wanted is None or read.wanted or read.config:
            await self._state.refresh(self.running, self.ds, read.wanted)
        user = self.nacm_user(v3_user)
        if self.ds.nacm.access(user, self.running()) is not None:
            return self._restricted_view(user, read)
        return self.current_view(read)

    def nacm_user(self, v3_user: str | None) -> str | None:
        """The NACM user an SNMP principal maps onto: an SNMPv3 user named like a user of
        the agent is that user; communities and other v3 users keep their VACM view only."""
        return v3_user if v3_user is not None and self.config.user(v3_user) else None

    def _restricted_view(self, user: str | None, reading: Reading) -> View:
        """Built per request from the trees with what `user` may not read taken out."""
        running = self.running()
        mine = self.ds.nacm.readable(user, running, running)
        rows = working_rows(mine, Pending())
        state, (one, every) = self._state.served(running, reading)
        mine_state = None if state is None else self.ds.nacm.readable(user, running, state)
        made = columns.state_columns(mine_state) if mine_state is not None else []
        return View(
            [
                *columns.system_columns(self.descr, self.config.host, self.uptime()),
                *columns.hypervisor_columns(
                    self.config.host,
                    columns.row_counts(rows),
                    None if mine_state is None else columns.running_count(mine_state),
                    every,
                ),
                *columns.config_columns(rows),
                *_checked(made, one, mine_state),
                *columns.network_columns(mine),
                *columns.engine_columns(
                    self.engine_id, self.boots, int(time.monotonic() - self.started), MAX_MESSAGE
                ),
            ]
        )

    # -- writing ---------------------------------------------------------------
    async def write(self, varbinds: list[smi.Varbind], v3_user: str | None = None) -> None:
        """Plan a SET on the rows and commit it; raise SnmpError if it fails.

        A SET that changes only rows held here (createAndWait, columns of a
        notInService row) does not touch the datastore. One that changes the
        configuration is planned again inside `Datastore.update`, on the tree
        it replaces, so no NETCONF or RESTCONF change made meanwhile is lost."""
        async with self.write_lock:
            self.pending.expire(time.time())
            plan = plan_set(varbinds, self.running(), self.pending)
            if plan.tree is not None:
                plan = await self._commit(varbinds, plan, self.nacm_user(v3_user))
            self.pending.replace(plan.pending)

    async def _commit(
        self, varbinds: list[smi.Varbind], first: SetPlan, user: str | None = None
    ) -> SetPlan:
        t = time.perf_counter()

        def compute(tree: Tree) -> tuple[Tree, SetPlan]:
            fresh = plan_set(varbinds, tree, self.pending)
            return (fresh.tree if fresh.tree is not None else tree), fresh

        try:
            # plan_set builds a new tree (it plans on the running snapshot too)
            plan = await self.ds.update(RUNNING, compute, SESSION, user=user, in_place=False)
        except RpcError as err:
            status = COMMIT_ERRORS.get(err.tag, "inconsistentValue")
            log.info("SNMP SET refused (%s): %s", status, err)
            raise SnmpError(status, blame_for(first, err.path), str(err)) from None
        log.debug("SNMP SET committed in %.1f ms", (time.perf_counter() - t) * 1000)
        return plan

    async def close(self) -> None:
        if self.notifier is not None:
            await self.notifier.close()
        if self.responder is not None:
            self.responder.close()
        if self.engine is not None:
            self.engine.transport_dispatcher.close_dispatcher()


async def start(ds: Datastore, config: AgentConfig) -> SnmpFrontend:
    fe = SnmpFrontend(ds, config)
    s = config.snmp
    if not (s.ro_communities or s.rw_communities or s.users):
        log.warning("SNMP: no community and no user configured; every request is refused")
    engine, boots, sock = build_engine(config)
    fe.engine = engine
    fe.engine_id, fe.boots = bytes(engine.snmpEngineID), boots
    fe.responder = Responder(engine, fe.view, fe.write)
    fe.notifier = Notifier(engine, ds, s.targets, fe.running, fe.uptime, sock.family)
    fe.notifier.start()
    log.info(
        "SNMP engine %s, boots %d, on %s:%d",
        engine.snmpEngineID.prettyPrint(),
        boots,
        config.address,
        config.ports.snmp,
    )
    return fe
