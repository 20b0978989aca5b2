"""Registers SNMP with the agent (see vnet.agent.frontends): VNET-ROUTER-MIB on the datastore."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from vnet import __version__
from vnet.agent.config import AgentConfig
from vnet.agent.datastore import RUNNING, Datastore
from vnet.agent.errors import RpcError
from vnet.agent.snmp import mib
from vnet.agent.snmp.engine import Responder, build_engine
from vnet.agent.snmp.notify import Notifier
from vnet.agent.snmp.oids import OID

log = logging.getLogger("vnet.agent.snmp")

STATE_TTL = 1.0  # seconds: kernel state (oper state, counters) is read at most this often
SESSION = "snmp"

# datastore error-tag -> SNMP error-status of the SET
COMMIT_ERRORS = {
    "operation-failed": "commitFailed",  # the kernel refused; the datastore rolled back
    "in-use": "resourceUnavailable",  # a NETCONF session holds the running lock
    "lock-denied": "resourceUnavailable",
}


class SnmpFrontend:
    def __init__(self, ds: Datastore, config: AgentConfig):
        self.ds = ds
        self.config = config
        self.pending = mib.Pending()
        self.started = time.monotonic()
        self.write_lock = asyncio.Lock()
        self.descr = f"vnet {__version__} agent on {config.host} (VNET-ROUTER-MIB)"
        self._state: dict[str, Any] | None = None
        self._state_at = 0.0
        self._state_for: Any = None  # the running tree the state was read for
        self._state_columns: list[mib.Column] = mib.state_columns(None)
        self._state_lock = asyncio.Lock()
        self._config_key: tuple[Any, int] | None = None
        self._config_columns: list[mib.Column] = []
        self._rows: mib.Rows = mib.empty_rows()
        self._net_key: Any = None
        self._net_columns: list[mib.Column] = []
        self.responder: Responder | None = None
        self.notifier: Notifier | None = None
        self.engine: Any = None
        self.engine_id = b""
        self.boots = 0

    def uptime(self) -> int:
        """sysUpTime: hundredths of a second since the front-end started."""
        return int((time.monotonic() - self.started) * 100)

    # -- reading ---------------------------------------------------------------
    def _state_fresh(self) -> bool:
        return (
            self._state is not None
            and self._state_for is self.ds.running
            and time.monotonic() - self._state_at < STATE_TTL
        )

    async def _refresh_state(self) -> None:
        async with self._state_lock:
            if self._state_fresh():
                return
            running = self.ds.running
            state = await self.ds.state_tree()
            self._state, self._state_for = state, running
            self._state_at = time.monotonic()
            self._state_columns = mib.state_columns(state)

    def current_view(self, with_state: bool = False) -> mib.View:
        """Everything served, from the running configuration, pending rows and kernel state.

        Kernel state is used when it is fresh, or when `with_state` (just read);
        otherwise its columns are lazy and a request that reaches them raises
        mib.NeedsState."""
        running = self.ds.running
        self.pending.expire(time.time())
        if (
            self._config_key is None
            or running is not self._config_key[0]
            or self.pending.version != self._config_key[1]
        ):
            self._rows = mib.working_rows(running, self.pending)
            self._config_columns = mib.config_columns(self._rows)
            self._config_key = (running, self.pending.version)
        if self._net_key is not running:
            self._net_columns = mib.network_columns(running)
            self._net_key = running
        use_state = self._state is not None and (with_state or self._state_fresh())
        return mib.View(
            [
                *mib.system_columns(self.descr, self.config.host, self.uptime()),
                *mib.hypervisor_columns(
                    self.config.host, self._rows, self._state if use_state else None
                ),
                *self._config_columns,
                *(self._state_columns if use_state else mib.state_columns(None)),
                *self._net_columns,
                *mib.engine_columns(
                    self.engine_id, self.boots, int(time.monotonic() - self.started), 65507
                ),
            ]
        )

    async def view(self, with_state: bool) -> mib.View:
        """The current view; `with_state`: read kernel state first unless it is fresh."""
        if with_state:
            await self._refresh_state()
        return self.current_view(with_state)

    # -- writing ---------------------------------------------------------------
    async def write(self, varbinds: list[tuple[OID, mib.Value]]) -> None:
        """Plan a SET on the rows and commit it; raise mib.SnmpError if it fails.

        A SET that changes only rows held here (createAndWait, columns of a
        notInService row) does not touch the datastore. One that changes the
        configuration is planned again inside `Datastore.update`, on the tree
        it replaces, so no NETCONF or RESTCONF change made meanwhile is lost."""
        async with self.write_lock:
            self.pending.expire(time.time())
            plan = mib.plan_set(varbinds, self.ds.running, self.pending)
            if plan.tree is not None:
                t = time.perf_counter()

                def compute(tree: dict[str, Any]) -> tuple[dict[str, Any], mib.SetPlan]:
                    fresh = mib.plan_set(varbinds, tree, self.pending)
                    return (fresh.tree if fresh.tree is not None else tree), fresh

                try:
                    plan = await self.ds.update(RUNNING, compute, SESSION)
                except RpcError as err:
                    status = COMMIT_ERRORS.get(err.tag, "inconsistentValue")
                    log.info("SNMP SET refused (%s): %s", status, err)
                    raise mib.SnmpError(status, mib.blame_for(plan, err.path), str(err)) from None
                log.debug("SNMP SET committed in %.1f ms", (time.perf_counter() - t) * 1000)
            self.pending.replace(plan.pending)

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
    fe.notifier = Notifier(engine, ds, s.targets, fe.uptime, sock.family)
    fe.notifier.start()
    log.info(
        "SNMP engine %s, boots %d, on %s:%d",
        engine.snmpEngineID.prettyPrint(),
        boots,
        config.address,
        config.ports.snmp,
    )
    return fe
