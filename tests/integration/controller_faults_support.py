"""Faults in an agent during the controller's transaction, for test_controller_faults.py:
the lab's agents run with the NETCONF fault hook (faulty_vnet.netconf_faults), one Service
runs on an event loop of its own for the whole module, and what every host holds is read
independently of the controller: the whole running configuration over NETCONF (raw
ncclient) and the kernel of every namespace of the host (`ip rule`, `ip route`, `tc`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import subprocess
import threading
import uuid
from collections.abc import Coroutine
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

from vnet.client import Endpoint
from vnet.controller.agents.netconf import NetconfSouthbound
from vnet.controller.db import make_engine
from vnet.controller.errors import ServiceError
from vnet.controller.service.core import Service
from vnet.lab import lab as labmod
from vnet.model.controller_config import ControllerConfig
from vnet.tools import processes

from .controller_service_support import (
    HOSTS,
    PROVIDER,
    Lab,
    database_state,
    prepare_database,
)
from .faulty_vnet import NETCONF_FAULT, NETCONF_FIRED

T = TypeVar("T")
# The controller's timeouts (ControllerConfig), short: a hung agent's case waits for them.
# s: the agents roll back an unconfirmed commit after this long. A commit that a stopped
# agent takes when it runs again rolls back this long after that: waited for once per case
# at that step. Above RPC_TIMEOUT, as in production: the confirms come within it.
CONFIRM_TIMEOUT = 6
# s: the controller gives up on an agent that does not answer an RPC or a connect. A hung
# agent's request waits for it once (it asks a host that timed out nothing more), yet a
# healthy agent must answer within it on a loaded machine: at 2 s a put-back to h2 timed
# out at a load average of 10
RPC_TIMEOUT = 4.0
# s: the watcher asks every agent whether it answers: a host that runs again is
# reconciled at its next check
RECONCILE_INTERVAL = 1.0
# a host's namespaces: the host's own and its VRs' (controller_service_support.LAB)
NAMESPACES = {"h1": ("h1", "r1"), "h2": ("h2", "r2", "rb"), "h3": ("h3", "r3")}
# what changes with time or traffic alone
_COUNTERS = re.compile(r"\b(used|expires|age|direct_packets_stat)\s+\S+")
# handles the kernel picks itself (8000: and up): a shaper made again gets another one
_AUTO_HANDLE = re.compile(r"\b[89a-f][0-9a-f]{3}:")


class Controller:
    """One Service on its own event loop (a thread), for a module's tests to call."""

    def __init__(self, lab: Lab, tmp: Path):
        self.lab = lab
        self.url = f"sqlite:///{tmp / 'faults.db'}"
        prepare_database(lab, self.url)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.service = self.call(self._start())

    def call(self, coro: Coroutine[Any, Any, T], timeout: float = 240) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    async def _start(self) -> Service:
        config = ControllerConfig(
            state_dir=self.lab.tmp / f"controller-{uuid.uuid4().hex[:8]}",
            database=self.url,
            reconcile_interval=RECONCILE_INTERVAL,
            utilisation_interval=3600,
            confirm_timeout=CONFIRM_TIMEOUT,
            rpc_timeout=RPC_TIMEOUT,
            lock_wait=2.0,
        )
        southbound = NetconfSouthbound(endpoints(self.lab, config.rpc_timeout))
        service = Service(config, make_engine(self.url), southbound)
        await service.start()
        return service

    def close(self) -> None:
        async def stop() -> None:
            await self.service.stop()
            await self.service.agents.close()
            self.service.db.engine.dispose()

        self.call(stop())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


def endpoints(lab: Lab, timeout: float) -> dict[str, Endpoint]:
    """The lab's agents with the controller's RPC timeout (as NetconfSouthbound.from_config
    gives it)."""
    return {host: replace(ep, timeout=timeout) for host, ep in lab.endpoints().items()}


# -- the fault -------------------------------------------------------------------------------
def state_dir(lab: Lab, host: str) -> Path:
    record = labmod.read_record(lab.name)
    assert record is not None
    return Path(record.agents[host].state_dir)


def inject(lab: Lab, host: str, action: str, step: str) -> None:
    """The host's agent does `action` at `step` of the next transaction that reaches it."""
    (state_dir(lab, host) / NETCONF_FIRED).unlink(missing_ok=True)
    (state_dir(lab, host) / NETCONF_FAULT).write_text(f"{action} {step}\n")


def fired(lab: Lab, host: str) -> str | None:
    """What the host's fault did ("die commit", ...), None if it did not fire; cleared."""
    marker, fault = state_dir(lab, host) / NETCONF_FIRED, state_dir(lab, host) / NETCONF_FAULT
    fault.unlink(missing_ok=True)
    if not marker.exists():
        return None
    text = marker.read_text().strip()
    marker.unlink()
    return text


def agent_process(lab: Lab, host: str) -> processes.ProcessRecord:
    record = labmod.read_record(lab.name)
    assert record is not None
    return next(p for p in record.processes if p.what == f"agent {host}")


def revive(lab: Lab, host: str) -> None:
    """The agent runs again: SIGCONT by PID if stopped, started again by the lab if dead."""
    agent = agent_process(lab, host)
    if processes.is_running(agent):
        os.kill(agent.pid, signal.SIGCONT)  # harmless if it runs
    else:
        labmod.up(lab.path)  # starts the agents that do not run (the fault hook's env kept)


def clean_up(lab: Lab, controller: Controller, host: str) -> None:
    """After a case, whatever it left: the fault gone, the agent running, every live
    connection released (so that a failed case does not fail the next ones)."""
    fired(lab, host)
    revive(lab, host)

    async def release_all() -> None:
        service = controller.service
        for view in await service.connections(PROVIDER):
            with contextlib.suppress(ServiceError):
                await service.release_connection(PROVIDER, view.tenant, view.name)

    controller.call(release_all())


# -- what the hosts hold ---------------------------------------------------------------------
def _run(argv: list[str], batch: str | None = None) -> str:
    done = subprocess.run(argv, input=batch, capture_output=True, text=True, timeout=30)
    return done.stdout + done.stderr


def kernel(lab: Lab, host: str) -> str:
    """Every policy rule, route and tc object of the host's namespaces, as ip and tc print
    them (without the counters that change with time alone); ip and tc in batches."""
    out = []
    for node in NAMESPACES[host]:
        netns = f"vnet-{lab.name}-{node}"
        links = subprocess.run(
            ["ip", "-j", "-n", netns, "link", "show"], capture_output=True, check=True, timeout=30
        )
        devices = sorted(link["ifname"] for link in json.loads(links.stdout))
        ip = ["rule show", "route show table all"]
        tc = [f"{kind} show dev {dev}" for dev in devices for kind in ("qdisc", "class", "filter")]
        for tool, commands in (("ip -4", ip), ("ip -6", ip), ("tc", tc)):
            argv = [*tool.split(), "-n", netns, "-batch", "-"]
            text = _run(argv, "\n".join(commands) + "\n")
            text = _COUNTERS.sub("", text)
            text = _AUTO_HANDLE.sub("auto:", text) if tool == "tc" else text
            out.append(f"--- {node} {tool}\n{text}")
    return "\n".join(out)


def running(lab: Lab, host: str) -> str:
    with lab.connect(host) as m:
        return str(m.get_config("running").data_xml)


@dataclass(frozen=True)
class Snapshot:
    """What the database says and what every host holds, read independently."""

    database: Any
    running: dict[str, str]
    kernel: dict[str, str]

    def differences(
        self, other: Snapshot, running: tuple[str, ...] = HOSTS, kernel: tuple[str, ...] = HOSTS
    ) -> list[str]:
        """What differs in the database, in the running configuration of the hosts in
        `running` and in the kernel of those in `kernel`; empty if nothing."""
        out = []
        if self.database != other.database:
            out.append(f"database: {self.database} != {other.database}")
        for host in running:
            if self.running.get(host) != other.running.get(host):
                out.append(
                    f"running configuration of {host}:\n"
                    + diff(self.running.get(host, ""), other.running.get(host, ""))
                )
        for host in kernel:
            if self.kernel[host] != other.kernel[host]:
                out.append(f"kernel of {host}:\n{diff(self.kernel[host], other.kernel[host])}")
        return out


def snapshot(lab: Lab, url: str, readable: tuple[str, ...] = HOSTS) -> Snapshot:
    """`readable`: the hosts whose agent answers (a dead one's running cannot be read)."""
    engine = make_engine(url)
    try:
        db = database_state(engine)
    finally:
        engine.dispose()
    return Snapshot(
        db,
        {h: running(lab, h) for h in readable},
        {h: kernel(lab, h) for h in HOSTS},
    )


def diff(a: str, b: str) -> str:
    import difflib

    return "\n".join(difflib.unified_diff(a.splitlines(), b.splitlines(), lineterm="", n=1))


def pending_hosts(reason: str) -> set[str]:
    """The hosts an answer names as possibly holding the change (service/putback.py)."""
    named = set()
    for part in reason.split("; "):
        if "did not answer and may hold the change" in part or "could not be put back" in part:
            named |= {h for h in HOSTS if re.search(rf"\b{h}\b", part)}
    return named
