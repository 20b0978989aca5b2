"""`vnet agent run`: one process per physical host, serving its datastore."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import time
from pathlib import Path

from vnet.agent import underlay
from vnet.agent.datastore import Datastore, drift
from vnet.agent.frontends import FRONTENDS, Running, starter
from vnet.agent.startup import serve_while_reconciling, startup_to_apply
from vnet.model.agent_config import AgentConfig, AgentReady
from vnet.tools import sdnotify
from vnet.tools.durable import replace_durably
from vnet.tools.heap import settle_after_start

log = logging.getLogger("vnet.agent")


async def run(
    config: AgentConfig, frontends: list[str] | None = None, startup: Path | None = None
) -> None:
    """Reconcile the kernel with the stored configuration (the startup file's, if it
    changed) with the front-ends already answering (writes refused until it is done),
    then serve until SIGTERM."""
    ds = Datastore(config)
    initial, data = startup_to_apply(ds, startup)  # a bad startup file stops us here
    running: list[Running] = []
    serving: list[str] = []  # their names, for the ready file

    async def open_frontends() -> None:
        for name in frontends or list(FRONTENDS):
            running.append(await starter(name)(ds, config))
            serving.append(name)
            log.info("%s listening on %s", name, config.address)

    watcher = None
    links: underlay.UnderlayWatcher | None = None
    try:
        t = time.perf_counter()
        if await serve_while_reconciling(ds, initial, data, open_frontends):
            log.info("startup configuration %s validated and applied", startup)
        ms = (time.perf_counter() - t) * 1000
        log.info("datastore ready, kernel reconciled in %.0f ms", ms)
        watcher = await drift.watch(ds, config.drift_interval, config.drift_policy)
        links = underlay.watch(ds)
        # only now: a SIGTERM during the reconcile ends the process as it always did
        stop = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            asyncio.get_running_loop().add_signal_handler(sig, stop.set)
        # Tells whoever started us (e.g. `vnet lab up`) that every port is open.
        ready = AgentReady(
            pid=os.getpid(), address=config.address, ports=config.ports, frontends=serving
        )
        replace_durably(config.ready_path, ready.model_dump_json().encode(), 0o644)
        sdnotify.notify(f"READY=1\nSTATUS=serving {', '.join(serving)}")
        settle_after_start()
        await stop.wait()
        sdnotify.notify("STOPPING=1")
    finally:
        if links is not None:
            links.close()
        await drift.stop(watcher)
        for frontend in running:
            await frontend.close()
        await ds.close()
        config.ready_path.unlink(missing_ok=True)
