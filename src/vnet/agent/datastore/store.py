"""The datastore: running and candidate trees, one writer at a time, the commit path.

The NETCONF operations on the candidate and the confirmed commit are candidate.py's."""

from __future__ import annotations

import asyncio
import copy
import logging
import time
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from vnet.agent.config import AgentConfig
from vnet.agent.datastore import guarantee_state, state, validation
from vnet.agent.datastore.candidate import CandidateOperations
from vnet.agent.datastore.confirm import ConfirmedCommits
from vnet.agent.datastore.durability import Written
from vnet.agent.datastore.events import Event, EventBus, Notice, diff_events
from vnet.agent.datastore.locks import CANDIDATE, RUNNING, Locks
from vnet.agent.datastore.persist import GroupSync, RunningFile, disk_error
from vnet.agent.nacm import Nacm
from vnet.agent.routing.service import RoutingService
from vnet.agent.telemetry import commit_timer
from vnet.model.host import HostConfig
from vnet.model.yang import host as codec
from vnet.model.yang.errors import ErrorTag, ErrorType, RpcError
from vnet.model.yang.guarantees import underlay_of
from vnet.substrate import ApplyError, Kernel, KernelState, Placement, converge, realize_host

T = TypeVar("T")
log = logging.getLogger("vnet.agent.datastore")


class Datastore(CandidateOperations):
    def __init__(self, config: AgentConfig, apply_to_kernel: bool = True):
        self.config = config
        self.apply_to_kernel = apply_to_kernel
        # the configuration of the last commit (kernel and journal hold it; a writer's base)
        self.running: dict[str, Any] = {}
        # the last one on disk: what readers see (`running_snapshot`)
        self.durable: dict[str, Any] = {}
        self.candidate: dict[str, Any] = {}
        self.candidate_dirty = False
        self.candidate_base: dict[str, Any] = {}  # the tree the staged changes were made on
        self.locks = Locks()
        self.events = EventBus()
        self.nacm = Nacm(config)  # who may read, change and run what (RFC 8341)
        self.file = RunningFile(config.state_dir)
        self._group = GroupSync(self.file)  # concurrent commits share one fsync
        self._written: dict[asyncio.Task[Any], list[Written]] = {}  # by the writing task
        self._epoch = 0  # raised when an fsync failed and the unsynced commits were undone
        self._durable_position = 0
        self.write_lock = asyncio.Lock()
        self.started_at: dict[str, float] = {}  # VR name -> when it last came up
        # what the kernel holds of ours after each commit (None: unknown, observe it)
        self._actual: KernelState | None = KernelState()
        self._abandoned: set[asyncio.Future[Any]] = set()  # writes whose caller was cancelled
        self.confirms = ConfirmedCommits(self._rollback_due)
        self._kx = ThreadPoolExecutor(max_workers=1, thread_name_prefix="vnet-kernel")
        self._kernel: Kernel | None = None
        self.placement = Placement(
            scope=config.scope,
            prefix=config.namespace_prefix,
            own_host=config.host,
            networks=config.provision_networks,
            endhosts=False,
        )
        self.validator = validation.Validator(config, self.placement)  # what a commit changes
        # the VRs' routing daemons (FRR), kept as the running configuration says
        self.routing = RoutingService(
            config.scope, self.placement.node_ns, self._in_kernel_thread, self.events
        )

    # -- lifecycle -----------------------------------------------------------
    def has_stored(self) -> bool:
        """A configuration is persisted (by a commit or an earlier start)."""
        return self.file.exists()

    async def start(self, initial: dict[str, Any] | None = None) -> None:
        """Load the persisted configuration, or persist `initial` in its place, and bring
        the kernel in line with it. `initial` must be a tree `prepare` returned (the
        agent's startup configuration, validated as an edit is).

        Recovery: a commit interrupted before its commit point is undone (its staged
        file dropped, the kernel converged back); a confirmed commit still pending when
        the agent stopped goes back to its rollback point."""
        self.config.state_dir.mkdir(parents=True, exist_ok=True)
        if self.file.recover():
            log.warning("an interrupted commit was found and undone")
        rollback = self.file.load_rollback()
        if initial is not None:
            self.file.save(initial)
            self.running = copy.deepcopy(initial)  # ours alone, as after a commit
        elif rollback is not None:
            log.warning("a confirmed commit was pending: back to its rollback point")
            self.file.save(rollback)
            self.running = rollback
        elif self.file.exists():
            self.running = self.file.load()
        self.durable = self.running
        self.candidate = self.running  # trees are never changed in place
        if self.apply_to_kernel:
            await self._in_kernel_thread(self._converge, self._desired(self.running), None)
            await self.routing.start(self._host_config(self.running).routers)
        now = time.time()
        for r in codec.routers_of(self.running):
            self.started_at[r["name"]] = now

    def _desired(self, tree: dict[str, Any]) -> KernelState:
        return realize_host(self._host_config(tree), self.placement)

    def _converge(
        self, desired: KernelState, before: KernelState | None, touched: KernelState | None = None
    ) -> None:
        """Observe (before None: on start) or trust what the last commit left, plan, apply
        (`touched`: the objects that may differ, see Validator.plan_scope)."""
        kernel, where = self._kernel_handle(), self.placement
        converge(kernel, desired, where, own_namespace=True, before=before, touched=touched)
        self._actual = desired

    async def close(self) -> None:
        self.confirms.close()  # a pending confirmed commit's rollback point stays on disk
        if self.apply_to_kernel:
            await self.routing.close()

        def _close() -> None:
            if self._kernel is not None:
                self._kernel.close()

        await self._in_kernel_thread(_close)
        self._kx.shutdown(wait=True)

    def _kernel_handle(self) -> Kernel:
        if self._kernel is None:
            self._kernel = Kernel()
        return self._kernel

    async def _in_kernel_thread(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Kernel work runs on one dedicated thread: namespace switching is per thread,
        and netlink calls block."""
        return await asyncio.get_running_loop().run_in_executor(self._kx, fn, *args)

    # -- reading -------------------------------------------------------------
    def running_snapshot(self) -> dict[str, Any]:
        """The committed running tree itself, not a copy: read it, never change it.

        A commit puts a new tree in its place, so a snapshot stays as it was. Committed
        means on disk: a commit waiting for its fsync is not seen yet."""
        return self.durable

    def tree(self, source: str) -> dict[str, Any]:
        """A copy of a datastore's tree, for a caller that edits it."""
        return copy.deepcopy(self._tree_of(source))

    def _tree_of(self, source: str) -> dict[str, Any]:
        """A datastore's tree itself (never changed in place)."""
        if source == CANDIDATE:
            return self.candidate
        if source == RUNNING:
            return self.running
        raise RpcError(
            ErrorTag.INVALID_VALUE,
            f"no datastore {source!r}; use running or candidate",
            ErrorType.PROTOCOL,
        )

    def next_index(self) -> int:
        return state.next_index(self.running)

    async def state_tree(
        self, detailed: set[str] | None = None, tops: set[str] | None = None
    ) -> dict[str, Any]:
        """Running configuration plus state read from the kernel (for <get>, RESTCONF).

        `detailed`: the VRs a request can select (None: all). Only those appear,
        so a question about one VR costs the same with 1 or 1000 VRs configured.
        `tops`: the top-level members it can select (local names; None: all): the
        guarantees' counters of the others are not read from the kernel.
        A VR interface's counters are its host port's, mirrored; the route count
        needs the VR's own namespace.
        """
        running = self.durable  # a reader: what is on disk
        routers = state.selected_routers(running, detailed)
        tree = state.with_routers(running, routers, detailed is None)
        kernel_view = await self._in_kernel_thread(self._read_state, routers, detailed is None)
        state.add_router_state(routers, kernel_view, self.started_at)
        await self.routing.add_state(routers)
        if tops is None or "hypervisor" in tops:  # its active count looks at every VR
            key, value = state.hypervisor_state(self.config, self.placement, running)
            tree[key] = value
        counters = await self._in_kernel_thread(
            guarantee_state.read_counters,
            self._kernel_handle(),
            self.placement,
            self.config.host,
            running,
            tops,
        )
        guarantee_state.with_counters(
            tree, running, counters, self.placement, self.config.host, tops
        )
        return tree

    def _read_state(
        self, routers: list[dict[str, Any]], all_routers: bool
    ) -> dict[str, dict[str, Any]]:
        return state.read_state(self._kernel_handle(), self.placement, routers, all_routers)

    # -- validation ----------------------------------------------------------
    def prepare(self, tree: dict[str, Any]) -> dict[str, Any]:
        """Assign missing VR indexes, then validate; return the tree or raise RpcError."""
        prepared, hc, _ = self.validator.prepare(tree, self.running)
        self._require_interfaces(hc)
        return prepared

    def validate(self, source: str) -> None:
        """<validate> of a datastore: its tree itself is prepared (preparing changes no
        tree), so a <commit> of the same candidate next takes the answer as it is."""
        self.prepare(self._tree_of(source))

    def _require_interfaces(self, hc: HostConfig) -> None:
        if self.apply_to_kernel:
            running = (i["name"] for i in underlay_of(self.running))
            validation.require_underlay_interfaces(hc, running)

    def _host_config(self, tree: dict[str, Any]) -> HostConfig:
        return validation.host_config(self.config, tree)

    # -- writing -------------------------------------------------------------
    def check_lock(self, target: str, session: str) -> None:
        self.locks.check(target, session)

    async def update(
        self,
        target: str,
        compute: Callable[[dict[str, Any]], tuple[dict[str, Any], T]],
        session: str = "",
        test_only: bool = False,
        user: str | None = None,
        in_place: bool = True,
    ) -> T:
        """Read-modify-write without lost updates: `compute(current tree)` returns the
        new tree (and a result for the caller) while no other writer can commit. It gets
        a copy it may change; `in_place=False`: the tree itself, which it never changes
        (it builds a new one), and no copy is made (one of 1000 VRs costs ~11 ms).
        `user`: whose change it is, authorised node by node (None: the agent's own)."""
        work = self._update(target, compute, session, test_only, user, in_place)
        result: T = await self._to_the_end(work)
        return result

    async def _update(
        self,
        target: str,
        compute: Callable[[dict[str, Any]], tuple[dict[str, Any], T]],
        session: str,
        test_only: bool,
        user: str | None,
        in_place: bool,
    ) -> T:
        async with self.write_lock:
            self.check_lock(target, session)
            before = self._tree_of(target)
            new_tree, result = compute(self.tree(target) if in_place else before)
            new_tree = self.nacm.authorise_write(user, before, new_tree, self.running)
            if test_only:
                self.prepare(new_tree)
            elif target == RUNNING:
                await self._commit_locked(new_tree, session, self._pending_rollback())
            elif target == CANDIDATE:
                if not self.candidate_dirty:
                    self.candidate_base = before
                self.candidate = new_tree
                self.candidate_dirty = True
            else:
                raise RpcError(
                    ErrorTag.INVALID_VALUE, f"cannot edit datastore {target!r}", ErrorType.PROTOCOL
                )
            return result

    async def _to_the_end(self, work: Coroutine[Any, Any, T]) -> T:
        """Run a write to its end even if its caller is cancelled (a client gone, the agent
        stopping): a commit is never cut between kernel, memory and disk. A cancelled
        caller's commit that has not passed its commit point is undone (`_abandoned`)."""
        task = asyncio.ensure_future(self._acknowledged(work))
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            self._abandoned.add(task)
            await asyncio.wait({task})
            raise
        finally:
            self._abandoned.discard(task)

    async def _acknowledged(self, work: Coroutine[Any, Any, T]) -> T:
        """Run a write, then (the write lock released, so the next writer can go on)
        wait until each commit it made is durable: acknowledged means on disk."""
        try:
            result = await work
        finally:
            written = self._written.pop(asyncio.current_task(), [])  # type: ignore[arg-type]
        for commit in written:
            await self._made_durable(commit)
        return result

    async def _made_durable(self, commit: Written) -> None:
        """Wait for `commit`'s fsync (shared with the commits written meanwhile), then make it
        what readers see and tell its events; RpcError if it was undone instead."""
        try:
            await self._group.wait(commit.position)
        except OSError as err:
            await self._durability_lost(commit)
            raise disk_error("saving the configuration", err, "the change was undone") from None
        if commit.epoch != self._epoch:  # another commit's fsync failed: this one was undone
            raise RpcError(
                ErrorTag.OPERATION_FAILED,
                "saving the configuration failed; the change was undone",
            )
        if commit.position >= self._durable_position:
            self.durable, self._durable_position = commit.tree, commit.position
        self._note_uptimes(commit.events)
        self.events.publish(commit.events)

    async def _durability_lost(self, commit: Written) -> None:
        """An fsync failed: what the journal holds is unknown. Every commit not yet durable
        is undone (kernel and memory back to the last durable configuration), and that
        configuration is written anew as a snapshot."""
        async with self.write_lock:
            if commit.epoch != self._epoch:
                return  # another waiter of the same fsync did it
            self._epoch += 1
            self._publish_failure(commit.events, "saving the configuration failed")
            self.running = self.durable
            self.validator.forget()
            if not self.candidate_dirty:
                self.candidate = self.running
            try:
                self.file.save(self.running, self._pending_rollback())
            except OSError:
                log.exception("writing the configuration after a failed fsync")
            if not self.apply_to_kernel:
                return
            try:  # observe what the kernel holds: the undone commits are in it
                await self._in_kernel_thread(self._converge, self._desired(self.running), None)
            except Exception:
                log.exception("undoing the commits whose fsync failed")
                self._actual = None

    def _check_abandoned(self) -> None:
        if asyncio.current_task() in self._abandoned:
            raise asyncio.CancelledError

    async def _commit_locked(
        self, new_tree: dict[str, Any], session: str, rollback: dict[str, Any] | None
    ) -> None:
        with commit_timer(session):  # the one metrics hook of the commit path
            self.check_lock(RUNNING, session)
            tree, hc, change = self.validator.prepare(new_tree, self.running)
            self._require_interfaces(hc)
            await self._transact(tree, hc, change, rollback)

    def _wrote(self, commit: Written) -> None:
        """`commit` is in the journal: the caller's answer waits for its fsync."""
        self._written.setdefault(asyncio.current_task(), []).append(commit)  # type: ignore[arg-type]

    async def _transact(
        self,
        tree: dict[str, Any],
        hc: HostConfig,
        change: validation.Change,
        rollback: dict[str, Any] | None,
    ) -> None:
        """Kernel, memory and disk all take `tree` (disk: with `rollback`, the rollback
        point of a pending confirmed commit), or none does (persist.py says how).

        1. converge the kernel (it rolls itself back if it refuses a step);
        2. append the change to the journal (the commit point; a full or read-only disk
           fails here, and the kernel change is undone);
        3. update memory; the caller's answer and the events wait for the journal's
           fsync, which concurrent commits share (`_acknowledged`).
        A failure or cancellation before 2 undoes 1."""
        self._check_abandoned()
        events = diff_events(self.running, tree)
        before, desired = self._actual, None
        try:
            if self.apply_to_kernel:
                desired = await self._apply(self.validator.realized(hc, change), events)
            self._check_abandoned()
            position = self.file.append(tree, rollback)
        except BaseException as err:
            if desired is not None:
                await self._undo_kernel(before, desired)
            if isinstance(err, OSError):
                self._publish_failure(events, str(err))
                raise disk_error("saving the configuration", err, "nothing was changed") from None
            raise
        self.running = tree
        self.validator.committed(tree, hc, change, desired)
        if not self.candidate_dirty:
            self.candidate = tree  # shared: trees are never changed in place
        self._wrote(Written(position, self._epoch, tree, events))
        if self.apply_to_kernel:  # after the commit point: a daemon's failure is the VR's state
            await self.routing.sync(*change.for_routing(hc))

    async def _apply(self, desired: KernelState, events: list[Event]) -> KernelState:
        """Converge the kernel to `desired` and return it; on refusal, the kernel is rolled
        back and the events say so."""
        try:
            touched = self.validator.plan_scope(desired, self._actual)
            await self._in_kernel_thread(self._converge, desired, self._actual, touched)
        except ApplyError as err:
            self._publish_failure(events, str(err.cause))
            raise RpcError(
                ErrorTag.OPERATION_FAILED,
                f"the kernel refused the change and it was rolled back: {err.cause} "
                f"(at: {err.op.describe()})",
            ) from None
        return desired

    async def _undo_kernel(self, before: KernelState | None, applied: KernelState) -> None:
        """Put the kernel back as it was before a commit that did not reach its commit point."""
        target = before if before is not None else self._desired(self.running)
        try:
            await self._in_kernel_thread(self._converge, target, applied)
        except Exception:
            # the kernel keeps part of the change: observe it afresh at the next commit
            log.exception("undoing an uncommitted kernel change failed")
            self._actual = None

    def _publish_failure(self, events: list[Event], message: str) -> None:
        for e in events:
            e.result, e.message = "failure", message
        self.events.publish(events)

    def _note_uptimes(self, events: list[Event]) -> None:
        now = time.time()
        for e in events:
            if e.operation == "delete":
                self.started_at.pop(e.router, None)
            elif e.operation == "create" or e.router not in self.started_at:
                self.started_at[e.router] = now

    # -- notifications -------------------------------------------------------
    def subscribe(self) -> asyncio.Queue[Notice]:
        return self.events.subscribe()

    def unsubscribe(self, queue: asyncio.Queue[Notice]) -> None:
        self.events.unsubscribe(queue)
