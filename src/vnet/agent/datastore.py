"""One transactional datastore per physical host, shared by every front-end.

Every change follows one path: decode (front-end) -> the tree's HostConfig
(model/yang/host.py), validated (model invariants with exact error paths, then
YANG via libyang) -> realised (substrate.realize_host) -> substrate.converge
(plan, apply with rollback) -> persist -> notify -> reply. One writer at a time.

A commit replaces the running tree with a new object (`_prepare` deep-copies
what it is given) and never changes a committed tree in place. So a reader
that only reads (SNMP, <get-config>, RESTCONF GET) takes `running_snapshot()`,
the committed tree itself, at no cost, and keeps a consistent view while
later commits happen; whoever edits takes a copy with `tree()`.

Kernel work runs on one dedicated thread: namespace switching is per thread,
and netlink calls block.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import libyang

from vnet.agent.config import AgentConfig
from vnet.model import TopologyError
from vnet.model.check import check_host
from vnet.model.host import HostConfig
from vnet.model.resolve import next_free_index
from vnet.model.yang import host as codec
from vnet.model.yang.errors import ErrorTag, ErrorType, RpcError
from vnet.model.yang.module import ROUTERS, qualified
from vnet.model.yang.schema import validate
from vnet.substrate import ApplyError, Kernel, KernelState, Placement, converge, nsfs, realize_host
from vnet.substrate import link as links
from vnet.substrate import route as routes
from vnet.substrate.kernel import NotANamespace
from vnet.substrate.placement import vr_port_name

T = TypeVar("T")
RUNNING = "running"
CANDIDATE = "candidate"


@dataclass
class Event:
    """A VR operation's outcome, for NETCONF notifications and SNMP traps."""

    router: str
    index: int | None
    operation: str  # create, modify, delete
    result: str  # success, failure
    message: str = ""
    time: float = 0.0


class Datastore:
    def __init__(self, config: AgentConfig, apply_to_kernel: bool = True):
        self.config = config
        self.apply_to_kernel = apply_to_kernel
        self.running: dict[str, Any] = {}
        self.candidate: dict[str, Any] = {}
        self.candidate_dirty = False
        self.locks: dict[str, str | None] = {RUNNING: None, CANDIDATE: None}
        self.write_lock = asyncio.Lock()
        self.subscribers: set[asyncio.Queue[Event]] = set()
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
    @property
    def path(self) -> Path:
        return self.config.state_dir / "running.json"

    def has_stored(self) -> bool:
        """A configuration is persisted (by a commit or an earlier start)."""
        return self.path.exists()

    async def start(self, initial: dict[str, Any] | None = None) -> None:
        """Load the persisted configuration, or persist `initial` in its place, and bring
        the kernel in line with it. `initial` must be a tree `prepare` returned (the
        agent's startup configuration, validated as an edit is)."""
        self.config.state_dir.mkdir(parents=True, exist_ok=True)
        if initial is not None:
            self._persist(initial)
            self.running = copy.deepcopy(initial)  # ours alone, as after a commit
        elif self.path.exists():
            self.running = json.loads(self.path.read_text())
        self.candidate = copy.deepcopy(self.running)
        desired = realize_host(self._host_config(self.running), self.placement)
        if self.apply_to_kernel:
            await self._in_kernel_thread(self._converge, desired, None)
        now = time.time()
        for r in codec.routers_of(self.running):
            self.started_at[r["name"]] = now

    def _converge(self, desired: KernelState, before: KernelState | None) -> None:
        """Observe (before None: on start) or trust what the last commit left, plan, apply."""
        kernel = self._kernel_handle()
        converge(kernel, desired, self.placement, own_namespace=True, before=before)
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

    # -- validation ----------------------------------------------------------
    def prepare(self, tree: dict[str, Any]) -> dict[str, Any]:
        """Assign missing VR indexes, then validate; return the tree or raise RpcError."""
        return self._prepare(tree)[0]

    def _prepare(self, tree: dict[str, Any]) -> tuple[dict[str, Any], HostConfig]:
        tree = copy.deepcopy(tree)
        if not self.config.provision_networks and codec.networks_of(tree) != codec.networks_of(
            self.running
        ):
            raise RpcError(
                ErrorTag.ACCESS_DENIED,
                "this host's virtual networks are provisioned by its lab; "
                "change them in the lab's topology file",
                ErrorType.APPLICATION,
                "/vr:virtual-networks",
            )
        routers = codec.routers_of(tree)
        used = {int(r["index"]) for r in routers if "index" in r}
        for r in routers:
            if "index" not in r:
                r["index"] = next_free_index(used)
                used.add(r["index"])
        return tree, self._validated(tree)

    def check(self, tree: dict[str, Any]) -> None:
        self._validated(tree)

    def _validated(self, tree: dict[str, Any]) -> HostConfig:
        """The tree's HostConfig, if it satisfies the model's invariants and then YANG."""
        hc = self._host_config(tree)
        try:
            dnode = validate(tree)
        except libyang.LibyangError as err:
            raise RpcError(
                ErrorTag.INVALID_VALUE, _libyang_message(err), ErrorType.APPLICATION
            ) from None
        if dnode is not None:
            dnode.free()
        return hc

    def _host_config(self, tree: dict[str, Any]) -> HostConfig:
        try:
            hc = codec.host_config(tree, self.config.host, self.config.vtep)
            problems = check_host(hc)
            if problems:
                raise TopologyError(problems, "configuration")
        except TopologyError as err:
            first = err.problems[0]
            more = f" (and {len(err.problems) - 1} more)" if len(err.problems) > 1 else ""
            raise RpcError(
                ErrorTag.INVALID_VALUE,
                codec.problem_message(first) + more,
                ErrorType.APPLICATION,
                codec.error_path(first.loc, tree),
            ) from None
        return hc

    # -- writing -------------------------------------------------------------
    def check_lock(self, target: str, session: str) -> None:
        owner = self.locks.get(target)
        if owner is not None and owner != session:
            raise RpcError(
                ErrorTag.IN_USE,
                f"the {target} datastore is locked by session {owner}",
                ErrorType.PROTOCOL,
                info={"session-id": owner},
            )

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
    ) -> T:
        """Read-modify-write without lost updates: `compute(current tree)` returns the
        new tree (and a result for the caller) while no other writer can commit."""
        async with self.write_lock:
            self.check_lock(target, session)
            new_tree, result = compute(self.tree(target))
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
        tree, hc = self._prepare(new_tree)
        old = self.running
        events = _diff_events(old, tree)
        if self.apply_to_kernel:
            desired = realize_host(hc, self.placement)
            try:
                await self._in_kernel_thread(self._converge, desired, self._actual)
            except ApplyError as err:
                for e in events:
                    e.result, e.message = "failure", str(err.cause)
                self._publish(events)
                raise RpcError(
                    ErrorTag.OPERATION_FAILED,
                    f"the kernel refused the change and it was rolled back: {err.cause} "
                    f"(at: {err.op.describe()})",
                ) from None
        self.running = tree
        if not self.candidate_dirty:
            self.candidate = copy.deepcopy(tree)
        self._persist(tree)
        now = time.time()
        for e in events:
            if e.operation == "delete":
                self.started_at.pop(e.router, None)
            elif e.operation == "create" or e.router not in self.started_at:
                self.started_at[e.router] = now
        self._publish(events)

    def _persist(self, tree: dict[str, Any]) -> None:
        tmp = self.path.with_suffix(".tmp")
        with tmp.open("w") as f:
            json.dump(tree, f, indent=1)
            f.flush()
            os.fsync(f.fileno())
        tmp.replace(self.path)
        fd = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

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
        if target not in self.locks:
            raise RpcError(
                ErrorTag.INVALID_VALUE, f"cannot lock datastore {target!r}", ErrorType.PROTOCOL
            )
        owner = self.locks[target]
        if owner is not None:
            raise RpcError(
                ErrorTag.LOCK_DENIED,
                f"the {target} datastore is already locked by session {owner}",
                ErrorType.PROTOCOL,
                info={"session-id": owner},
            )
        if target == CANDIDATE and self.candidate_dirty:
            raise RpcError(
                ErrorTag.LOCK_DENIED,
                "the candidate has uncommitted changes; commit or discard them first",
                ErrorType.PROTOCOL,
                info={"session-id": "0"},
            )
        self.locks[target] = session

    def unlock(self, target: str, session: str) -> None:
        if self.locks.get(target) != session:
            raise RpcError(
                ErrorTag.OPERATION_FAILED,
                f"the {target} datastore is not locked by this session",
                ErrorType.PROTOCOL,
            )
        self.locks[target] = None

    def release(self, session: str) -> None:
        """A session ended: drop its locks; a held candidate lock discards its changes."""
        for target, owner in self.locks.items():
            if owner == session:
                self.locks[target] = None
                if target == CANDIDATE:
                    self.candidate = copy.deepcopy(self.running)
                    self.candidate_dirty = False

    # -- notifications -------------------------------------------------------
    def subscribe(self) -> asyncio.Queue[Event]:
        queue: asyncio.Queue[Event] = asyncio.Queue(maxsize=10000)
        self.subscribers.add(queue)
        return queue

    def unsubscribe(self, queue: asyncio.Queue[Event]) -> None:
        self.subscribers.discard(queue)

    def _publish(self, events: list[Event]) -> None:
        for event in events:
            event.time = time.time()
            for queue in list(self.subscribers):
                with contextlib.suppress(asyncio.QueueFull):
                    queue.put_nowait(event)

    # -- state ---------------------------------------------------------------
    def next_index(self) -> int:
        return next_free_index({int(r["index"]) for r in codec.routers_of(self.running)})

    async def state_tree(self, detailed: set[str] | None = None) -> dict[str, Any]:
        """Running configuration plus state read from the kernel (for <get>, RESTCONF).

        `detailed`: the VRs a request can select (None: all). Only those appear,
        so a question about one VR costs the same with 1 or 1000 VRs configured.
        A VR interface's counters are its host port's, mirrored; the route count
        needs the VR's own namespace.
        """
        # Copies of what gets state (each VR entry and its interfaces); the rest of
        # the tree is the running snapshot's, shared and left unchanged.
        tree = dict(self.running)
        routers = [
            _with_own_interfaces(r)
            for r in codec.routers_of(self.running)
            if detailed is None or r["name"] in detailed
        ]
        if routers or (detailed is None and ROUTERS in tree):
            tree[ROUTERS] = {**tree.get(ROUTERS, {}), "router": routers}
        else:
            tree.pop(ROUTERS, None)
        kernel_view = await self._in_kernel_thread(self._read_state, routers, detailed is None)
        now = time.time()
        for r in routers:
            info = kernel_view[r["name"]]
            r["oper-state"] = info["oper-state"]
            if "route-count" in info:
                r["route-count"] = info["route-count"]
            running = info["oper-state"] == "running"
            r["uptime"] = int(now - self.started_at.get(r["name"], now)) if running else 0
            for itf in r.get("interface", []):
                itf.update(info["interfaces"].get(itf["name"], {"oper-status": "down"}))
        configured = codec.routers_of(self.running)
        tree[qualified("hypervisor")] = {
            "host-name": self.config.host,
            "next-available-index": self.next_index(),
            "configured-routers": len(configured),
            # admin-state up and present in the kernel: a stat per VR, no netlink dump
            "active-routers": sum(
                r.get("admin-state", "up") == "up"
                and nsfs.exists(self.placement.node_ns(r["name"]))
                for r in configured
            ),
        }
        return tree

    def _read_state(
        self, routers: list[dict[str, Any]], all_routers: bool
    ) -> dict[str, dict[str, Any]]:
        kernel = self._kernel_handle()
        wanted = [
            vr_port_name(int(r["index"]), k)
            for r in routers
            for k in range(len(r.get("interface", [])))
        ]
        # one dump beats a request per port
        ports = links.read_ports(kernel, None, None if all_routers else wanted)
        out: dict[str, dict[str, Any]] = {}
        for r in routers:
            ns = self.placement.node_ns(r["name"])
            itfs: dict[str, dict[str, Any]] = {}
            all_up = nsfs.exists(ns)
            for k, itf in enumerate(r.get("interface", [])):
                port = ports.get(vr_port_name(int(r["index"]), k))
                if port is None:
                    all_up = False
                    continue
                all_up &= port.up
                itfs[itf["name"]] = {
                    "oper-status": "up" if port.up else "down",
                    "statistics": _mirrored(port.counters),
                }
            if r.get("admin-state", "up") == "down":
                state = "stopped"
            else:
                state = "running" if all_up else "failed"
            out[r["name"]] = {"oper-state": state, "interfaces": itfs}
            if state != "failed":
                with contextlib.suppress(OSError, NotANamespace):
                    out[r["name"]]["route-count"] = routes.count(kernel, ns)
        return out


def _with_own_interfaces(router: dict[str, Any]) -> dict[str, Any]:
    """A copy of a VR entry whose interface entries are copies too (state is added to both)."""
    out = dict(router)
    if "interface" in router:
        out["interface"] = [dict(itf) for itf in router["interface"]]
    return out


def _mirrored(s: dict[str, int]) -> dict[str, str]:
    """Counters of the VR's interface from its host port: what one sends the other receives."""
    return {
        "in-octets": str(s.get("tx_bytes", 0)),
        "in-packets": str(s.get("tx_packets", 0)),
        "in-errors": str(s.get("tx_errors", 0)),
        "in-discards": str(s.get("tx_dropped", 0)),
        "out-octets": str(s.get("rx_bytes", 0)),
        "out-packets": str(s.get("rx_packets", 0)),
        "out-errors": str(s.get("rx_errors", 0)),
        "out-discards": str(s.get("rx_dropped", 0)),
    }


def _libyang_message(err: libyang.LibyangError) -> str:
    text = str(err).removeprefix("failed to parse data tree: ")
    return f"the configuration does not satisfy the YANG model: {text}"


def _diff_events(old: dict[str, Any], new: dict[str, Any]) -> list[Event]:
    before = {r["name"]: r for r in codec.routers_of(old)}
    after = {r["name"]: r for r in codec.routers_of(new)}
    events = []
    for name, r in after.items():
        if name not in before:
            events.append(Event(name, r.get("index"), "create", "success"))
        elif before[name] != r:
            events.append(Event(name, r.get("index"), "modify", "success"))
    for name, r in before.items():
        if name not in after:
            events.append(Event(name, r.get("index"), "delete", "success"))
    return events
