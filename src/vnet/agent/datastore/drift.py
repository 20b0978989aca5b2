"""Drift: a VR's kernel objects that vanished or changed behind the agent's back.

Seen by a bounded periodic look (issue 17, finding 2): every `drift_interval`
seconds, one stat per VR (is its namespace still mounted?) and one index
lookup per host port (is each of its veths still there? an ioctl: with 1000
VRs a look takes 17 ms, where a dump of every port, decoded, held the kernel
thread, and every commit behind it, 110 ms). The look holds
no write lock (commits go on meanwhile): what it finds of a VR that a commit
changed or deleted in the meantime is dropped. A VR found
drifted is reported once: a NETCONF `router-event` / SNMP `vnetVrFailed`
notification (operation modify, result failure, the message says what is
gone), oper-state `failed` in every read, and no counters (state.py). The
cached netlink socket of a vanished namespace is dropped, so the agent does
not keep a dead namespace alive and read counters through it.

Then the policy (`drift_policy` in the agent's configuration):
- repair (default): under the write lock, the kernel is observed in full and
  brought back to the running configuration; a success event says so.
- report: the agent only reports; the next commit plans from the observed
  kernel instead of what the last commit left, so a write repairs it.
"""

from __future__ import annotations

import contextlib
import logging
import time
from typing import TYPE_CHECKING, Any

from vnet.agent.datastore.events import Event
from vnet.agent.telemetry import DRIFT_REPAIRS
from vnet.model.yang import host as codec
from vnet.substrate import Kernel, Placement, nsfs, observe, realize_host
from vnet.substrate.placement import vr_port_name
from vnet.tools.periodic import Periodic
from vnet.tools.wait import WaitTimeout, wait_until

if TYPE_CHECKING:
    from vnet.agent.datastore.store import Datastore

log = logging.getLogger("vnet.agent.drift")

REPAIR = "repair"
REPORT = "report"


def find_drift(
    kernel: Kernel, placement: Placement, routers: list[dict[str, Any]]
) -> dict[str, str]:
    """VR name -> what of it is gone from the kernel. Runs in the kernel thread."""
    out: dict[str, str] = {}
    for r in routers:
        ns = placement.node_ns(r["name"])
        own = [vr_port_name(int(r["index"]), k) for k in range(len(r.get("interface", [])))]
        if not nsfs.exists(ns):
            kernel.forget(ns)  # our socket would keep the deleted namespace alive
            _wait_gone(kernel, [p for p in own if kernel.lookup(None, p) is not None])
            out[r["name"]] = f"its namespace {ns} vanished"
            continue
        if missing := [p for p in own if kernel.lookup(None, p) is None]:
            out[r["name"]] = f"its host port(s) {', '.join(missing)} vanished"
    return out


def _still_configured(
    found: dict[str, str], looked_at: list[dict[str, Any]], now: list[dict[str, Any]]
) -> dict[str, str]:
    """The drift of VRs that no commit changed while the agent looked (no write lock is
    held for the look, so commits go on): a commit touches only the VRs it changes, so
    what was found of the others stands; a VR a commit deleted or changed is not drift."""
    if not found:
        return found
    before = {r["name"]: r for r in looked_at}
    current = {r["name"]: r for r in now}
    return {name: why for name, why in found.items() if current.get(name) == before[name]}


def _wait_gone(kernel: Kernel, ports: list[str], timeout: float = 5.0) -> None:
    """The kernel removes a dead namespace's veths (and their host ends) a little later:
    wait for that, so a repair or a write plans from a kernel that has settled."""
    with contextlib.suppress(WaitTimeout):
        wait_until(
            lambda: all(kernel.link(None, p) is None for p in ports),
            timeout,
            "the vanished namespace's ports to be removed",
            interval=0.01,
        )


class DriftWatcher:
    """Looks for drift every `interval` seconds and reports and repairs it per `policy`."""

    def __init__(self, ds: Datastore, interval: float, policy: str = REPAIR):
        self.ds = ds
        self.interval = interval
        self.policy = policy
        self.drifted: dict[str, str] = {}  # reported and not yet repaired

    async def check(self) -> dict[str, str]:
        """One look: report what newly drifted, then apply the policy; returns the drift."""
        ds = self.ds
        routers = codec.routers_of(ds.running)  # what the kernel holds (a commit's base)
        kernel = ds._kernel_handle()
        found = await ds._in_kernel_thread(find_drift, kernel, ds.placement, routers)
        found = _still_configured(found, routers, codec.routers_of(ds.running))
        indexes = {r["name"]: r.get("index") for r in routers}
        new = {name: why for name, why in found.items() if name not in self.drifted}
        for name, why in new.items():
            log.warning("VR %s drifted: %s", name, why)
        ds.events.publish(
            [Event(n, indexes[n], "modify", "failure", f"drift: {w}") for n, w in new.items()]
        )
        self.drifted = found
        if found and self.policy == REPAIR:
            await self.repair()
        elif new:
            await self._plan_next_commit_from_the_kernel()
        return found

    async def repair(self) -> None:
        """Observe the kernel and bring it back to the running configuration."""
        ds = self.ds
        async with ds.write_lock:
            desired = realize_host(ds._host_config(ds.running), ds.placement)
            try:
                await ds._in_kernel_thread(ds._converge, desired, None)
            except Exception as err:
                log.error("repairing drift failed: %s", err)
                DRIFT_REPAIRS.labels("failure").inc()
                return
        DRIFT_REPAIRS.labels("success").inc()
        now = time.time()
        repaired = [
            Event(name, r.get("index"), "modify", "success", f"repaired: {why}")
            for r in codec.routers_of(ds.running)
            if (why := self.drifted.get(name := r["name"])) is not None
        ]
        for e in repaired:
            ds.started_at[e.router] = now
            log.info("VR %s repaired", e.router)
        ds.events.publish(repaired)
        self.drifted = {}

    async def _plan_next_commit_from_the_kernel(self) -> None:
        """What the kernel really holds becomes the base of the next commit's plan."""
        ds = self.ds

        def observed() -> Any:
            kernel = ds._kernel_handle()
            place = ds.placement
            return observe(kernel, place.scope, place.prefix, own_namespace=True).state

        async with ds.write_lock:
            ds._actual = await ds._in_kernel_thread(observed)


async def watch(ds: Datastore, interval: float, policy: str) -> Periodic | None:
    """Start watching (None when `interval` is 0: drift is then only seen at a restart)."""
    if interval <= 0:
        return None
    looking = Periodic(DriftWatcher(ds, interval, policy).check, interval, "drift-watcher")
    looking.start()
    return looking


async def stop(looking: Periodic | None) -> None:
    if looking is not None:
        await looking.stop()
