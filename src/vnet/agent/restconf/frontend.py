"""Registers RESTCONF with the agent (see vnet.agent.frontends): uvicorn serving
the app as a task in the agent's own event loop, HTTPS unless configured otherwise."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Iterator

import uvicorn

from vnet.agent.datastore import Datastore
from vnet.agent.restconf.app import create_app
from vnet.agent.restconf.tls import ensure_certificate
from vnet.model.agent_config import AgentConfig
from vnet.tools.wait import WaitTimeout, wait_until_async

log = logging.getLogger("vnet.agent.restconf")


class _Server(uvicorn.Server):
    """uvicorn that leaves signals to the agent (it stops us through should_exit)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def _listen(address: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    # proto must say TCP: asyncio sets TCP_NODELAY on accepted connections only then,
    # and without it every response waits ~40 ms (Nagle vs. delayed ACK) for its body
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((address, port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    sock.setblocking(False)
    return sock


class RestconfFrontend:
    def __init__(self, server: _Server, task: asyncio.Task[None], sock: socket.socket):
        self.server = server
        self.task = task
        self.sock = sock

    async def close(self) -> None:
        self.server.should_exit = True
        try:
            await asyncio.wait_for(self.task, timeout=10)
        except TimeoutError:
            self.server.force_exit = True
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.task
        finally:
            self.sock.close()


async def start(ds: Datastore, config: AgentConfig) -> RestconfFrontend:
    tls: dict[str, str] = {}
    if not config.restconf_plain_http:
        cert, key = ensure_certificate(config)
        tls = {"ssl_certfile": str(cert), "ssl_keyfile": str(key)}
    sock = _listen(config.address, config.ports.restconf)  # bind errors surface here
    uconfig = uvicorn.Config(
        create_app(ds, config),
        lifespan="off",
        log_config=None,
        log_level="warning",
        access_log=False,
        server_header=False,
        timeout_graceful_shutdown=3,
        **tls,  # type: ignore[arg-type]
    )
    server = _Server(uconfig)
    task = asyncio.create_task(server.serve(sockets=[sock]), name="restconf")
    with contextlib.suppress(WaitTimeout):  # reported below, with the reason
        await wait_until_async(
            lambda: server.started or task.done(), 5, "the RESTCONF server to start", 0.01
        )
    if task.done():
        sock.close()
        task.result()  # raises what stopped it
        raise RuntimeError("the RESTCONF server stopped while starting")
    if not server.started:
        raise RuntimeError("the RESTCONF server did not start within 5 s")
    scheme = "http" if config.restconf_plain_http else "https"
    log.info("RESTCONF on %s://%s:%d/restconf", scheme, config.address, config.ports.restconf)
    return RestconfFrontend(server, task, sock)
