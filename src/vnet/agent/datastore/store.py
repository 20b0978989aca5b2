"""The datastore: running and candidate trees, one writer at a time, the commit path."""

from __future__ import annotations

import asyncio
import copy
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from vnet.agent.config import AgentConfig
from vnet.agent.datastore import state, validation
from vnet.agent.datastore.events import Event, EventBus, diff_events
from vnet.agent.datastore.locks import CANDIDATE, RUNNING, Locks
from vnet.agent.datastore.persist import RunningFile
from vnet.agent.nacm import Nacm
from vnet.model.host import HostConfig
from vnet.model.yang import host as codec
from vnet.model.yang.errors import ErrorTag, ErrorType, RpcError
from vnet.substrate import ApplyError, Kernel, KernelState, Placement, converge, realize_host

T = TypeVar("T")


class Datastore:
    def __init__(self, config: AgentConfig, apply_to_kernel: bool = True):
        self.config = config
        self.apply_to_kernel = apply_to_kernel
        self.running: dict[str, Any] = {}
        self.candidate: dict[str, Any] = {}
        self.candidate_dirty = False
        self.locks = Locks()
        self.events = EventBus()
        self.nacm = Nacm(config)  # who may read, change and run what (RFC 8341)
        self.file = RunningFile(config.state_dir)
        self.write_lock = asyncio.Lock()
        self.started_at: dict[str, float] = {}  # VR name -> when it last came up
        self._actual = KernelState()  # what the kernel holds of ours, after each commit
        self._kx = ThreadPoolExecutor(max_workers=1, thread_name_prefix="vnet-kernel")
        self._kernel: Kernel | None = None
        self.placement = Placement(
            scope=config.scope,
            prefix=config.namespace_prefix,
            own_host=config.host,
            networks=config.provision_networks,
            endhosts=False,
        )

    # -- lifecycle -----------------------------------------------------------
    def has_stored(self) -> bool:
        """A configuration is persisted (by a commit or an earlier start)."""
        return self.file.exists()

    async def start(self, initial: dict[str, Any] | None = None) -> None:
        """Load the persisted configuration, or persist `initial` in its place, and bring
        the kernel in line with it. `initial` must be a tree `prepare` returned (the
        agent's startup configuration, validated as an edit is)."""
        self.config.state_dir.mkdir(parents=True, exist_ok=True)
        if initial is not None:
            self.file.save(initial)
            self.running = copy.deepcopy(initial)  # ours alone, as after a commit
        elif self.file.exists():
            self.running = self.file.load()
        self.candidate = copy.deepcopy(self.running)
        desired = realize_host(self._host_config(self.running), self.placement)
        if self.apply_to_kernel:
            await self._in_kernel_thread(self._converge, desired, None)
        now = time.time()
        for r in codec.routers_of(self.running):
            self.started_at[r["name"]] = now

    def _converge(self, desired: KernelState, before: KernelState | None) -> None:
        """Observe (before None: on start) or trust what the last commit left, plan, apply."""
        converge(self._kernel_handle(), desired, self.placement, own_namespace=True, before=before)
        self._actual = desired

    async def close(self) -> None:
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

        A commit puts a new tree in its place, so a snapshot stays as it was."""
        return self.running

    def tree(self, source: str) -> dict[str, Any]:
        """A copy of a datastore's tree, for a caller that edits it."""
        if source == CANDIDATE:
            return copy.deepcopy(self.candidate)
        if source == RUNNING:
            return copy.deepcopy(self.running)
        raise RpcError(
            ErrorTag.INVALID_VALUE,
            f"no datastore {source!r}; use running or candidate",
            ErrorType.PROTOCOL,
        )

    def next_index(self) -> int:
        return state.next_index(self.running)

    async def state_tree(self, detailed: set[str] | None = None) -> dict[str, Any]:
        """Running configuration plus state read from the kernel (for <get>, RESTCONF).

        `detailed`: the VRs a request can select (None: all). Only those appear,
        so a question about one VR costs the same with 1 or 1000 VRs configured.
        A VR interface's counters are its host port's, mirrored; the route count
        needs the VR's own namespace.
        """
        running = self.running
        routers = state.selected_routers(running, detailed)
        tree = state.with_routers(running, routers, detailed is None)
        kernel_view = await self._in_kernel_thread(self._read_state, routers, detailed is None)
        state.add_router_state(routers, kernel_view, self.started_at)
        key, value = state.hypervisor_state(self.config, self.placement, running)
        tree[key] = value
        return tree

    def _read_state(
        self, routers: list[dict[str, Any]], all_routers: bool
    ) -> dict[str, dict[str, Any]]:
        return state.read_state(self._kernel_handle(), self.placement, routers, all_routers)

    # -- validation ----------------------------------------------------------
    def prepare(self, tree: dict[str, Any]) -> dict[str, Any]:
        """Assign missing VR indexes, then validate; return the tree or raise RpcError."""
        return validation.prepare(self.config, tree, self.running)[0]

    def check(self, tree: dict[str, Any]) -> None:
        validation.validated(self.config, tree)

    def _host_config(self, tree: dict[str, Any]) -> HostConfig:
        return validation.host_config(self.config, tree)

    # -- writing -------------------------------------------------------------
    def check_lock(self, target: str, session: str) -> None:
        self.locks.check(target, session)

    async def commit_tree(self, new_tree: dict[str, Any], session: str = "") -> None:
        """Make `new_tree` the running configuration, in the kernel and on disk."""
        async with self.write_lock:
            await self._commit_locked(new_tree, session)

    async def update(
        self,
        target: str,
        compute: Callable[[dict[str, Any]], tuple[dict[str, Any], T]],
        session: str = "",
        test_only: bool = False,
        user: str | None = None,
    ) -> T:
        """Read-modify-write without lost updates: `compute(current tree)` returns the
        new tree (and a result for the caller) while no other writer can commit.
        `user`: whose change it is, authorised node by node (None: the agent's own)."""
        async with self.write_lock:
            self.check_lock(target, session)
            new_tree, result = compute(self.tree(target))
            before = self.candidate if target == CANDIDATE else self.running
            new_tree = self.nacm.authorise_write(user, before, new_tree, self.running)
            if test_only:
                self.prepare(new_tree)
            elif target == RUNNING:
                await self._commit_locked(new_tree, session)
            elif target == CANDIDATE:
                self.candidate = new_tree
                self.candidate_dirty = True
            else:
                raise RpcError(
                    ErrorTag.INVALID_VALUE, f"cannot edit datastore {target!r}", ErrorType.PROTOCOL
                )
            return result

    async def _commit_locked(self, new_tree: dict[str, Any], session: str) -> None:
        self.check_lock(RUNNING, session)
        tree, hc = validation.prepare(self.config, new_tree, self.running)
        events = diff_events(self.running, tree)
        if self.apply_to_kernel:
            await self._apply(hc, events)
        self.running = tree
        if not self.candidate_dirty:
            self.candidate = copy.deepcopy(tree)
        self.file.save(tree)
        self._note_uptimes(events)
        self.events.publish(events)

    async def _apply(self, hc: HostConfig, events: list[Event]) -> None:
        """Converge the kernel to `hc`; on refusal, the kernel is rolled back and the
        events say so."""
        desired = realize_host(hc, self.placement)
        try:
            await self._in_kernel_thread(self._converge, desired, self._actual)
        except ApplyError as err:
            for e in events:
                e.result, e.message = "failure", str(err.cause)
            self.events.publish(events)
            raise RpcError(
                ErrorTag.OPERATION_FAILED,
                f"the kernel refused the change and it was rolled back: {err.cause} "
                f"(at: {err.op.describe()})",
            ) from None

    def _note_uptimes(self, events: list[Event]) -> None:
        now = time.time()
        for e in events:
            if e.operation == "delete":
                self.started_at.pop(e.router, None)
            elif e.operation == "create" or e.router not in self.started_at:
                self.started_at[e.router] = now

    async def commit(self, session: str = "") -> None:
        self.check_lock(CANDIDATE, session)
        await self.commit_tree(self.candidate, session)
        self.candidate = copy.deepcopy(self.running)
        self.candidate_dirty = False

    def discard_changes(self, session: str = "") -> None:
        self.check_lock(CANDIDATE, session)
        self.candidate = copy.deepcopy(self.running)
        self.candidate_dirty = False

    def lock(self, target: str, session: str) -> None:
        self.locks.lock(target, session, self.candidate_dirty)

    def unlock(self, target: str, session: str) -> None:
        self.locks.unlock(target, session)

    def release(self, session: str) -> None:
        """A session ended: drop its locks; a held candidate lock discards its changes."""
        if CANDIDATE in self.locks.release(session):
            self.candidate = copy.deepcopy(self.running)
            self.candidate_dirty = False

    # -- notifications -------------------------------------------------------
    def subscribe(self) -> asyncio.Queue[Event]:
        return self.events.subscribe()

    def unsubscribe(self, queue: asyncio.Queue[Event]) -> None:
        self.events.unsubscribe(queue)
