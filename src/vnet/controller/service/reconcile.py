"""Reconciliation: what the database says is the truth; each agent is made to hold exactly it.

Per host, the connection pieces the agent holds whose names mark them as the controller's
("vc<connection id>") are compared with what the database's established connections put on
that host (derived again by the planner from their stored path and number): pieces nobody
should have are removed, missing or different ones are put back, in one agent transaction
per host. Each difference is drift: logged and written to the connection's history as
"repaired". Connections in the middle of a request (requested, modifying) are left alone;
their request settles them. Pieces with other names are not the controller's: never touched.

Runs after recovery at start, and whenever an agent becomes reachable again (`Watcher`: at
once when failure detection hears it again, and by asking every agent every
`reconcile_interval` seconds).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from sqlalchemy.orm import Session

from vnet.controller.admission.admit import Policy
from vnet.controller.agents.realise import AgentError, Agents, HostChange
from vnet.controller.db.models import Connection, ConnectionState
from vnet.controller.inventory import Inventory
from vnet.controller.planner import PIECE_PREFIX, piece_name
from vnet.controller.service import planning, store
from vnet.controller.service.database import Database
from vnet.model.host_guarantees import ConnectionPieces, Locator
from vnet.tools.periodic import Periodic

log = logging.getLogger(__name__)


@dataclass
class Expected:
    """What the database says one host holds of the controller's connections."""

    pieces: dict[str, ConnectionPieces] = field(default_factory=dict)
    locators: list[Locator] = field(default_factory=list)
    busy: set[str] = field(default_factory=set)  # names of connections in flight: hands off
    ids: dict[str, int] = field(default_factory=dict)  # name -> connection id


@dataclass(frozen=True)
class Drift:
    host: str
    connection: str
    what: str  # "extra", "missing", "different"


def controllers(name: str) -> bool:
    return name.startswith(PIECE_PREFIX) and name[len(PIECE_PREFIX) :].isdigit()


def expected_on(session: Session, inv: Inventory, host: str, policy: Policy) -> Expected:
    out = Expected()
    for conn, tenant in store.live_connections(session):
        name = piece_name(conn.id)
        out.ids[name] = conn.id
        if conn.state != ConnectionState.ESTABLISHED:
            out.busy.add(name)
            continue
        hosts = {h["host"] for h in conn.hops}
        if host not in hosts:
            continue
        share = planning.current_pieces(inv, tenant, conn, policy)
        if host in share.pieces:
            out.pieces[share.pieces[host].name] = share.pieces[host]
            out.locators.extend(x for x in share.locators.get(host, ()) if x not in out.locators)
    return out


def differences(
    host: str, held: list[ConnectionPieces], expected: Expected
) -> tuple[HostChange | None, list[Drift]]:
    """The one change that makes `held` what is `expected`, and the drift it repairs."""
    mine = {p.name: p for p in held if controllers(p.name) and p.name not in expected.busy}
    drift, put, delete = [], [], []
    for name in sorted(set(mine) - set(expected.pieces)):
        drift.append(Drift(host, name, "extra"))
        delete.append(name)
    for name, pieces in sorted(expected.pieces.items()):
        if name not in mine:
            drift.append(Drift(host, name, "missing"))
            put.append(pieces)
        elif mine[name] != pieces:
            drift.append(Drift(host, name, "different"))
            put.append(pieces)
    if not drift:
        return None, []
    change = HostChange(
        host=host, put=tuple(put), delete=tuple(delete), locators=tuple(expected.locators)
    )
    return change, drift


class Reconciler:
    """Makes hosts hold what the database says (`inventory`: the current inventory)."""

    def __init__(
        self,
        db: Database,
        agents: Agents,
        inventory: Callable[[], Awaitable[Inventory]],
        policy: Policy,
    ):
        self.db = db
        self.agents = agents
        self.inventory = inventory
        self.policy = policy
        self.unmanaged: dict[str, set[str]] = {}  # host -> VRs its agent holds, not ours
        self._rounds: dict[str, asyncio.Lock] = {}  # a host's rounds, one after the other
        self._next: dict[str, asyncio.Task[list[Drift]]] = {}  # a host's round not begun

    async def host(self, host: str) -> list[Drift]:
        """Reconcile one host; the drift repaired (AgentError if the agent fails). VRs the
        agent holds that the inventory lacks are reported (logged when first seen; the
        host's view lists them), never touched: adopting one is a request.

        Callers share rounds: one that asks while a round of the host has not begun yet
        waits for that round (it reads the database after the caller wrote), else for a new
        one after the running round. A hundred failed moves that each put back the same
        hosts reconcile each host twice, not a hundred times."""
        round_ = self._next.get(host)
        if round_ is None:
            round_ = asyncio.create_task(self._round(host), name=f"reconcile-{host}")
            self._next[host] = round_
        return await asyncio.shield(round_)  # a caller that goes away leaves it to the rest

    async def _round(self, host: str) -> list[Drift]:
        try:
            async with self._rounds.setdefault(host, asyncio.Lock()):
                self._begun(host)  # later callers need a round that reads after them
                return await self._reconcile(host)
        finally:
            self._begun(host)  # (cancelled before it began: not to be joined either)

    def _begun(self, host: str) -> None:
        if self._next.get(host) is asyncio.current_task():
            del self._next[host]

    async def _reconcile(self, host: str) -> list[Drift]:
        inv = await self.inventory()
        self._report_unmanaged(host, inv, await self.agents.routers(host))
        held = await self.agents.connections(host)
        expected = await self.db.read(lambda s: expected_on(s, inv, host, self.policy))
        change, drift = differences(host, held, expected)
        if change is None:
            return []
        await self.agents.transaction(f"reconcile-{uuid.uuid4().hex[:16]}", [change])
        await self.db.write(lambda s: record(s, drift, expected.ids))
        for d in drift:
            log.warning(
                "drift on host %s: connection %s was %s; repaired", d.host, d.connection, d.what
            )
        return drift

    def _report_unmanaged(self, host: str, inv: Inventory, names: list[str]) -> None:
        ours = {vr.name for vr in inv.topology.routers}
        found = {n for n in names if n not in ours}
        for name in sorted(found - self.unmanaged.get(host, set())):
            log.warning("host %s holds VR %s, which the controller does not manage", host, name)
        self.unmanaged[host] = found

    async def all_hosts(self, hosts: list[str]) -> dict[str, list[Drift] | Exception]:
        answers = await asyncio.gather(*(self.host(h) for h in hosts), return_exceptions=True)
        out: dict[str, list[Drift] | Exception] = {}
        for host, answer in zip(hosts, answers, strict=True):
            if isinstance(answer, BaseException) and not isinstance(answer, Exception):
                raise answer
            out[host] = answer
            if isinstance(answer, Exception):
                log.warning("reconcile host %s: %s", host, answer)
        return out


def record(session: Session, drift: list[Drift], ids: dict[str, int]) -> None:
    for d in drift:
        conn_id = ids.get(d.connection)
        conn = session.get(Connection, conn_id) if conn_id is not None else None
        if conn is not None:
            store.add_event(session, conn, "repaired", f"host {d.host}: pieces were {d.what}")


class Watcher:
    """Reconciles each agent that answers again after it did not (or for the first time):
    as soon as failure detection hears it again (`on_host_state`, a state hook), and, for
    what detection cannot say (a controller without it, an answer lost in between), every
    `interval` seconds by asking each agent. `reachable` is what was seen last, from either.
    """

    def __init__(self, reconciler: Reconciler, hosts: list[str], interval: float):
        self.reconciler = reconciler
        self.hosts = hosts
        self.reachable: dict[str, bool] = {}
        self.periodic = Periodic(self.check, interval, "reconcile-watcher")
        self._soon: set[asyncio.Task[None]] = set()
        self._stopped = False

    def start(self) -> None:
        self.periodic.start()

    async def stop(self) -> None:
        self._stopped = True
        await self.periodic.stop()
        for task in list(self._soon):
            task.cancel()
        await asyncio.gather(*self._soon, return_exceptions=True)

    async def check(self) -> None:
        answers = await asyncio.gather(
            *(self.reconciler.agents.reachable(h) for h in self.hosts), return_exceptions=True
        )
        back = []
        for host, answer in zip(self.hosts, answers, strict=True):
            now = answer is True
            if now and self.reachable.get(host) is not True:
                back.append(host)
            self.reachable[host] = now
        if back:
            await self._reconcile(back)

    async def _reconcile(self, hosts: list[str]) -> None:
        result = await self.reconciler.all_hosts(hosts)
        for host, outcome in result.items():
            if isinstance(outcome, (AgentError, Exception)):
                self.reachable[host] = False  # try again at the next check

    # -- failure detection's word (opstate.StateHook) -------------------------------------
    async def on_link_state(self, link: str, up: bool) -> None:
        """Links are failover's."""

    async def on_host_state(self, host: str, up: bool) -> None:
        """A host detection hears again is reconciled now, in a task of its own (the hooks
        after this one are not held up), not up to `interval` seconds later."""
        if self._stopped or host not in self.hosts:
            return
        was = self.reachable.get(host)
        self.reachable[host] = up
        if up and was is not True:
            task = asyncio.create_task(self._reconcile([host]), name=f"reconcile-{host}")
            self._soon.add(task)
            task.add_done_callback(self._soon.discard)
