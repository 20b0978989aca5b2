"""The agent's FRRouting instances: one per VR whose routing is ospf, kept as configured.

`sync` after every commit starts (zebra first, the others once it listens),
restarts (changed FRR configuration) and stops instances so that exactly the
running configuration's OSPF VRs have one;
`check`, called every second, restarts an instance whose daemon died, at most
MAX_RESTARTS times in RESTART_WINDOW seconds; past that, or when a daemon
does not come up, the VR is failed with the reason until its next change.
Every daemon is a child of the agent, recorded with its start time in the
instance's directory (a crashed agent's leftovers are stopped at the next
start) and stopped by PID; nothing is ever found by name.
"""

from __future__ import annotations

import logging
import subprocess
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vnet.agent.routing import frrconf
from vnet.model.topology import VirtualRouter
from vnet.tools import frr, processes
from vnet.tools.wait import WaitTimeout, wait_until

log = logging.getLogger("vnet.agent.routing")
MAX_RESTARTS = 3
RESTART_WINDOW = 60.0
# for each step of a start: zebra listening, then every daemon's PID file written (it parsed
# its configuration)
START_TIMEOUT = 10.0


@dataclass
class Instance:
    vr: VirtualRouter
    ns: str
    directory: Path
    children: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    state: str = "running"  # running | failed (a restart happens within one check)
    restarts: int = 0
    recent: list[float] = field(default_factory=list)  # when it was restarted lately
    last_error: str = ""
    last_change: float = field(default_factory=time.time)


@dataclass(frozen=True)
class Change:
    """A VR's routing daemons died and were restarted (success) or are given up (failure)."""

    vr: VirtualRouter
    result: str
    message: str


class RoutingSupervisor:
    def __init__(self, scope: str, node_ns: Any):
        self.scope = scope
        self.node_ns = node_ns  # VR name -> its namespace
        self.instances: dict[str, Instance] = {}

    def clean_leftovers(self) -> None:
        """Stop what an earlier run of this agent left (it was killed before it stopped them)."""
        if stopped := frr.stop_scope(self.scope):
            log.warning("stopped %d FRR daemon(s) an earlier agent left running", stopped)

    def sync(self, routers: list[VirtualRouter], only: Collection[str] | None = None) -> None:
        """Exactly one instance per up VR with OSPF routing, each with its current
        configuration. `only`: the names of the VRs a commit made, changed or deleted, and
        `routers` those it made or changed (the others' instances stay as they are; None:
        `routers` are all the VRs)."""
        wanted = {vr.name: vr for vr in routers if vr.runs_ospf and vr.admin_state == "up"}
        for name in list(self.instances if only is None else self.instances.keys() & only):
            inst = self.instances[name]
            if name not in wanted or _files(wanted[name], inst) != _files(inst.vr, inst):
                self._stop(self.instances.pop(name))
            else:  # a change FRR does not see (a static route, an address): no flap
                inst.vr = wanted[name]
        for name, vr in wanted.items():
            if name not in self.instances:
                inst = Instance(vr, self.node_ns(name), frr.instance_dir(self.scope, name))
                self.instances[name] = inst
                self._start(inst)

    def check(self) -> list[Change]:
        """Restart instances whose daemon died (bounded); what happened to each, for events."""
        changes = []
        for name, inst in self.instances.items():
            if inst.state == "failed":
                continue
            dead = [d for d, child in inst.children.items() if child.poll() is not None]
            if not dead:
                continue
            now = time.time()
            inst.recent = [t for t in inst.recent if now - t < RESTART_WINDOW]
            reason = f"{', '.join(dead)} exited ({_tail(inst.directory, dead[0])})"
            if len(inst.recent) >= MAX_RESTARTS:
                self._fail(inst, f"{reason}; {MAX_RESTARTS} restarts in {RESTART_WINDOW:g} s")
                changes.append(Change(inst.vr, "failure", inst.last_error))
                continue
            log.warning("VR %s: %s; restarting its routing daemons", name, reason)
            inst.recent.append(now)
            inst.restarts += 1
            inst.last_error = reason
            self._stop_children(inst)
            self._start(inst)
            ok = inst.state == "running"
            message = f"{reason}; restarted" if ok else inst.last_error
            changes.append(Change(inst.vr, "success" if ok else "failure", message))
        return changes

    def stop_all(self) -> None:
        """Every instance stopped, and the agent's folder under the run directory removed."""
        for inst in self.instances.values():
            self._stop(inst)
        self.instances.clear()
        frr.stop_scope(self.scope)

    def _start(self, inst: Instance) -> None:
        frr.stop_recorded(inst.directory)
        if missing := frr.installed():
            self._fail(inst, f"the routing daemons cannot start: {missing}")
            return
        frr.prepare_dir(inst.directory, frrconf.config_files(inst.vr, inst.directory))
        zebra, *clients = frrconf.daemons(inst.vr)
        # zebra first, the others once it listens (frr.zebra_listening says why)
        stages = (
            ([zebra], self._listening, "zebra does not listen"),
            (clients, self._up, "no PID files"),
        )
        for daemons, ready, unready in stages:
            if not (self._spawn(inst, daemons) and self._awaited(inst, ready, unready)):
                return
        inst.state, inst.last_change = "running", time.time()

    def _spawn(self, inst: Instance, daemons: list[str]) -> bool:
        try:
            for daemon in daemons:
                inst.children[daemon] = frr.start_daemon(inst.ns, daemon, inst.directory)
        except OSError as err:
            self._fail(inst, f"the routing daemons did not start: {err}")
            return False
        finally:
            frr.save_records(
                inst.directory,
                [
                    processes.record(c, f"{d} of VR {inst.vr.name}")
                    for d, c in inst.children.items()
                ],
            )
        return True

    def _awaited(self, inst: Instance, ready: Callable[[Instance], bool], unready: str) -> bool:
        """Whether `ready` within START_TIMEOUT; else the VR failed with why (`unready`, or
        the daemon that exited)."""
        try:
            wait_until(lambda: ready(inst), START_TIMEOUT, f"the FRR daemons of {inst.vr.name}")
        except WaitTimeout:
            dead = [d for d, c in inst.children.items() if c.poll() is not None]
            why = f"{dead[0]}: {_tail(inst.directory, dead[0])}" if dead else unready
            self._fail(inst, f"the routing daemons did not start ({why})")
            return False
        return True

    def _listening(self, inst: Instance) -> bool:
        return self._up(inst) and frr.zebra_listening(inst.ns, inst.directory)

    def _up(self, inst: Instance) -> bool:
        if any(c.poll() is not None for c in inst.children.values()):
            raise WaitTimeout("a daemon exited", 0)
        return all((inst.directory / f"{d}.pid").exists() for d in inst.children)

    def _fail(self, inst: Instance, reason: str) -> None:
        log.error("VR %s: %s", inst.vr.name, reason)
        self._stop_children(inst)
        inst.state, inst.last_error, inst.last_change = "failed", reason, time.time()

    def _stop_children(self, inst: Instance) -> None:
        for child in reversed(list(inst.children.values())):
            processes.stop_child(child)
        inst.children.clear()

    def _stop(self, inst: Instance) -> None:
        self._stop_children(inst)
        frr.stop_recorded(inst.directory)


def _files(vr: VirtualRouter, inst: Instance) -> dict[str, str]:
    return frrconf.config_files(vr, inst.directory)


def _tail(directory: Path, daemon: str) -> str:
    """The last line a daemon printed (why it exited), for the VR's failure."""
    try:
        lines = (directory / f"{daemon}.out").read_text(errors="replace").strip().splitlines()
    except OSError:
        return "no output"
    return lines[-1][-200:] if lines else "no output"
