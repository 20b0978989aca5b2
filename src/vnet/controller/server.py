"""`vnet controller run`: one process serving the API (issue 12, part 1).

In order: enter the configured network namespace (every socket the process opens is made
there), migrate the database, load the inventory file, make sure the provider token exists,
connect the agents, start the service (its recovery settles what a previous process left in
flight), then serve HTTP with uvicorn inside this asyncio loop, and write the ready file once
the socket listens. SIGTERM or SIGINT stops it cleanly: uvicorn finishes the requests under
way, then the service, the agents and the database are closed and the ready file removed.

The listening socket is bound here, before uvicorn starts, so a port in use is a precise
start-up error rather than uvicorn's exit; uvicorn's own signal handling is switched off, so
the same handlers stop it whether the signal comes during start-up or while serving.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import logging
import os
import signal
import socket
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import uvicorn
from sqlalchemy import Engine
from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from vnet.controller.agents.access import AccessError
from vnet.controller.agents.netconf import NetconfSouthbound
from vnet.controller.api import make_app
from vnet.controller.api.auth import create_token, register_token
from vnet.controller.db import default_url, make_engine, session_factory, upgrade
from vnet.controller.db.migrate import one_start_at_a_time
from vnet.controller.service import ControllerService
from vnet.controller.southbound import Southbound
from vnet.model.controller_config import ControllerConfig
from vnet.model.topology import Topology
from vnet.tools import netns, sdnotify
from vnet.tools.durable import remove_quietly, replace_durably, write_durably
from vnet.tools.heap import settle_after_start
from vnet.tools.tls import ensure_self_signed, fingerprint

log = logging.getLogger("vnet.controller")
# a request still running this long after SIGTERM is cancelled (its service call is then
# settled like a crash's: the agents roll back at the confirm timeout, recovery cleans up)
GRACE_SECONDS = 30
ServiceFactory = Callable[[Engine, Southbound, ControllerConfig], Awaitable[ControllerService]]
# The inventory: a Topology read from config.inventory by the caller (the CLI reads it with
# the lab's topology-file reader, which points at file:line:column; this layer may not)


class StartError(Exception):
    """The controller cannot start: what failed and why (nothing was left running)."""


class StartConfigError(StartError):
    """The configuration itself is unusable (an unpinned agent, unreadable TLS files): a
    restart cannot help."""


def database_url(config: ControllerConfig) -> str:
    return config.database or default_url(config.state_dir)


def run(
    config: ControllerConfig,
    inventory: Topology | None = None,
    service_factory: ServiceFactory | None = None,
) -> None:
    """Serve until SIGTERM/SIGINT, inside config.namespace if set. `inventory`: the topology
    of config.inventory, loaded into the database before the service starts."""
    with netns.entered(config.namespace):
        asyncio.run(serve(config, inventory, service_factory))


async def serve(
    config: ControllerConfig,
    inventory: Topology | None = None,
    service_factory: ServiceFactory | None = None,
) -> None:
    stopping = _Stopping()
    stopping.install()
    # An unusable agent's access stops the start before anything is written, an unusable
    # certificate before the database is migrated or a token made.
    agents = make_agents(config, inventory)
    config.state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    engine: Engine | None = None
    service: ControllerService | None = None
    try:
        tls = tls_files(config)
        engine = await asyncio.to_thread(prepare_database, config, inventory)
        service = await (service_factory or start_service)(engine, agents, config)
        if not stopping.requested:
            await _serve_http(config, service, session_factory(engine), stopping, tls)
    finally:
        remove_quietly(config.ready_path)
        await _close(service, agents, engine)


def prepare_database(config: ControllerConfig, inventory: Topology | None = None) -> Engine:
    """Migrate, load the inventory, make sure the provider token exists; the engine. Done by
    one controller at a time when several share the database."""
    url = database_url(config)
    try:
        with one_start_at_a_time(url):
            return _prepare(url, config, inventory)
    except SQLAlchemyError as err:  # unreachable, refused, a bad URL
        raise StartError(f"database {shown_url(url)}: {err}") from err


def _prepare(url: str, config: ControllerConfig, inventory: Topology | None) -> Engine:
    try:
        upgrade(url)
        engine = make_engine(url)
    except Exception as err:
        raise StartError(f"database {shown_url(url)}: {err}") from err
    try:
        if inventory is not None:
            load_inventory(session_factory(engine), inventory, config)
        ensure_provider_token(session_factory(engine), config.provider_token_path)
    except BaseException:
        engine.dispose()
        raise
    return engine


def load_inventory(
    sessions: sessionmaker[Session], topology: Topology, config: ControllerConfig
) -> None:
    """The topology's hosts, links, tenants, networks, VRs and end hosts and the agents'
    access into the database (what is there already is kept; a contradiction is refused)."""
    from vnet.controller.inventory import InventoryError, load

    try:
        with sessions.begin() as session:
            added = load(session, topology, config.agents)
    except InventoryError as err:
        raise StartError(f"{config.inventory or 'inventory'}: {err}") from err
    log.info("inventory: %d objects added", added)


def ensure_provider_token(sessions: sessionmaker[Session], path: Path) -> bool:
    """Create the provider token file (0600) if absent, else make sure the database knows the
    token it holds (a new database behind the same state directory); True when created."""
    if path.exists():
        if path.stat().st_mode & 0o077:
            log.warning("%s is readable by others than its owner: chmod 600 it", path)
        token = path.read_text().strip()
        if not token:
            raise StartError(f"{path} is empty; remove it and a new provider token is made")
        with sessions.begin() as session:
            register_token(session, token)
        return False
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    with sessions.begin() as session:  # the row is committed only once the file is on disk
        view = create_token(session, "provider")
        write_durably(path, f"{view.token}\n".encode(), 0o600)
    log.info("provider token written to %s", path)
    return True


def make_agents(config: ControllerConfig, inventory: Topology | None = None) -> Southbound:
    """The agents of config.agents over NETCONF (passwords are read from their files here,
    once), or with config.simulated the inventory's hosts in memory."""
    if config.simulated is not None:
        from vnet.controller.southbound.memory import MemorySouthbound

        if inventory is None:
            raise StartConfigError("simulated hosts need the inventory's topology")
        sim = config.simulated
        return MemorySouthbound.of_topology(
            inventory, check_yang=sim.check_yang, latency=sim.rpc_latency
        )
    try:
        return NetconfSouthbound.from_config(config)
    except AccessError as err:
        raise StartConfigError(str(err)) from err


async def start_service(
    engine: Engine, agents: Southbound, config: ControllerConfig
) -> ControllerService:
    """The service over the database and agents, its recovery at start done."""
    from vnet.controller.service.core import Service

    service = Service(config, engine, agents)
    await service.start()
    return service


# -- HTTP --------------------------------------------------------------------------------------
class _Server(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield  # ours (_Stopping) stop it; uvicorn's would re-raise the signal after shutdown


class _Stopping:
    """SIGTERM/SIGINT: stop the server if it runs, or the start-up before it does."""

    def __init__(self) -> None:
        self.requested = False
        self.server: uvicorn.Server | None = None
        self.closing: asyncio.Event | None = None  # the app's: ends its event streams

    def install(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.stop, sig)

    def stop(self, sig: int) -> None:
        log.info("%s: stopping", signal.Signals(sig).name)
        self.requested = True
        if self.server is not None:
            self.server.should_exit = True
        if self.closing is not None:
            self.closing.set()  # open event streams end


def listen(config: ControllerConfig) -> socket.socket:
    family = socket.AF_INET6 if ":" in config.listen else socket.AF_INET
    try:
        sock = socket.create_server((config.listen, config.port), family=family, backlog=2048)
    except OSError as err:
        raise StartError(f"cannot listen on {config.listen}:{config.port}: {err.strerror}") from err
    # Accepted connections inherit it. asyncio sets it itself only on sockets it made (proto
    # IPPROTO_TCP; create_server's is 0): without it uvicorn's body, written after the
    # headers, waits for the client's delayed ACK, 40 ms on every answer of a kept connection.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


async def _serve_http(
    config: ControllerConfig,
    service: ControllerService,
    sessions: sessionmaker[Session],
    stopping: _Stopping,
    tls: dict[str, str],
) -> None:
    console = importlib.util.find_spec("vnet.controller.ui") is not None
    app = make_app(service, sessions, config, ui=console)
    sock = listen(config)
    server = _Server(
        uvicorn.Config(
            app,
            lifespan="off",
            access_log=False,
            log_level="warning",
            log_config=None,
            timeout_graceful_shutdown=GRACE_SECONDS,
            **tls,  # type: ignore[arg-type]
        )
    )
    stopping.server, stopping.closing = server, app.state.closing
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        while not server.started and not task.done():
            await asyncio.sleep(0.01)
        if server.started:
            write_ready(config, console)
            log.info("serving on %s (pid %d)", base_url(config), os.getpid())
            settle_after_start()
        await task
    finally:
        sock.close()


def tls_files(config: ControllerConfig) -> dict[str, str]:
    """uvicorn's certificate and key settings: the configured pair, or a self-signed one made
    in state_dir; nothing for plain_http. Logs the fingerprint clients compare."""
    if config.plain_http:
        log.warning("serving plain HTTP (plain_http): API tokens travel in clear")
        return {}
    if config.tls_certificate is None:
        host = socket.gethostname()
        ensure_self_signed(
            config.certificate_path, config.key_path, config.listen, host, "vnet controller"
        )
    for path in (config.certificate_path, config.key_path):
        if not os.access(path, os.R_OK):
            raise StartConfigError(f"TLS: cannot read {path}")
    try:
        print_ = fingerprint(config.certificate_path)
    except ValueError as err:
        raise StartConfigError(f"TLS: {config.certificate_path}: not PEM: {err}") from None
    log.info("HTTPS certificate %s, SHA-256 fingerprint %s", config.certificate_path, print_)
    return {"ssl_certfile": str(config.certificate_path), "ssl_keyfile": str(config.key_path)}


def base_url(config: ControllerConfig) -> str:
    host = f"[{config.listen}]" if ":" in config.listen else config.listen
    return f"{'http' if config.plain_http else 'https'}://{host}:{config.port}"


def write_ready(config: ControllerConfig, console: bool) -> None:
    """Tells whoever started us (a lab, a test) that the API answers, where, and the
    certificate its clients verify (null for plain_http)."""
    ready: dict[str, Any] = {
        "pid": os.getpid(),
        "url": base_url(config),
        "console": console,
        "provider_token_file": str(config.provider_token_path),
        "certificate": None if config.plain_http else str(config.certificate_path),
    }
    replace_durably(config.ready_path, json.dumps(ready).encode(), 0o644)
    sdnotify.notify(f"READY=1\nSTATUS=serving on {ready['url']}")


async def _close(service: Any, agents: Southbound, engine: Engine | None) -> None:
    for closing in (getattr(service, "stop", None), agents.close):
        if closing is None:
            continue
        try:
            await closing()
        except Exception:  # the others still close; the failure is logged, not hidden
            log.exception("closing %s failed", closing)
    if engine is not None:
        engine.dispose()


def shown_url(url: str) -> str:
    """The database URL without its password, for messages and logs."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:
        return "(unparsable URL)"
