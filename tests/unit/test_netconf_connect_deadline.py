"""A NETCONF connect to a peer that accepts the TCP connection and then stops talking gives
up within the endpoint's timeout, whatever phase it is in (paramiko alone waits 15 s for
the SSH banner and 15 s for the key exchange); the controller's calls queued for such a peer
give up with the one ahead of them."""

from __future__ import annotations

import asyncio
import socket
import struct
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from vnet.client import ConnectError, Endpoint, NetconfClient, TimedOut
from vnet.client.deadline import ConnectDeadline
from vnet.controller.agents.session import HostSession

TIMEOUT = 1.0
SLACK = 2.0  # s beyond the timeout: thread start-up and teardown on a loaded machine
# what the silent peer says before it falls silent
SAYS = {
    "nothing (no SSH banner)": b"",
    "a banner, then nothing (no key exchange)": b"SSH-2.0-silent\r\n",
}


@pytest.fixture
def silent_peer(request: pytest.FixtureRequest) -> Iterator[int]:
    """A loopback listener that accepts, says `request.param`, and then reads and says
    nothing until the test ends (None: resets the connection at once); its port."""
    listener = socket.create_server(("127.0.0.1", 0))
    accepted: list[socket.socket] = []
    done = threading.Event()

    def serve() -> None:
        listener.settimeout(0.2)
        while not done.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            accepted.append(conn)
            if request.param is None:  # resets at once, as an agent dying as it accepts
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                conn.close()
            else:
                conn.sendall(request.param)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        done.set()
        thread.join(5)
        for conn in accepted:
            conn.close()
        listener.close()


@pytest.mark.parametrize("silent_peer", SAYS.values(), ids=SAYS.keys(), indirect=True)
def test_a_silent_peer_fails_the_connect_within_the_timeout(silent_peer: int) -> None:
    ep = Endpoint(port=silent_peer, password="x", timeout=TIMEOUT)
    started = time.monotonic()
    with pytest.raises(ConnectError) as raised:
        NetconfClient(ep)
    took = time.monotonic() - started
    assert took < TIMEOUT + SLACK, f"gave up after {took:.1f} s, timeout {TIMEOUT} s"
    assert isinstance(raised.value, TimedOut), raised.value
    assert f"127.0.0.1:{silent_peer}" in str(raised.value)


def test_a_closed_port_is_a_connect_error_at_once() -> None:
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port = probe.getsockname()[1]  # closed again when the block ends
    started = time.monotonic()
    with pytest.raises(ConnectError) as raised:
        NetconfClient(Endpoint(port=port, password="x", timeout=TIMEOUT))
    assert time.monotonic() - started < SLACK
    assert not isinstance(raised.value, TimedOut), raised.value


@pytest.mark.parametrize("silent_peer", [None], ids=["resets"], indirect=True)
def test_a_peer_that_resets_in_the_banner_is_a_connect_error(silent_peer: int) -> None:
    """Whether paramiko meets the reset writing its banner (an EOFError: not an OSError,
    nor ncclient's) or reading the peer's, it is a ConnectError: the controller's session
    retries or names the host, never a raw traceback."""
    with pytest.raises(ConnectError) as raised:
        NetconfClient(Endpoint(port=silent_peer, password="x", timeout=TIMEOUT))
    assert not isinstance(raised.value, TimedOut), raised.value
    assert f"127.0.0.1:{silent_peer}" in str(raised.value)


@pytest.mark.parametrize("silent_peer", [b""], ids=["silent"], indirect=True)
def test_calls_queued_for_a_silent_agent_time_out_with_the_call_ahead(silent_peer: int) -> None:
    """The controller's session to an agent runs one call at a time: four calls at once to
    a silent agent end within one timeout, not four. A call made afterwards is sent again
    (the agent may answer by then) and waits its own timeout."""
    ep = Endpoint(port=silent_peer, password="x", timeout=TIMEOUT)

    async def calls() -> tuple[list[object], float, object, float]:
        with ThreadPoolExecutor(2) as pool:
            session = HostSession("h3", ep, pool)
            started = time.monotonic()
            queued = await asyncio.gather(
                *(session.call(lambda c: c.routers()) for _ in range(4)), return_exceptions=True
            )
            together = time.monotonic() - started
            started = time.monotonic()
            later = await asyncio.gather(
                session.call(lambda c: c.routers()), return_exceptions=True
            )
            return queued, together, later[0], time.monotonic() - started

    queued, together, later, alone = asyncio.run(calls())
    assert all(isinstance(r, TimedOut) for r in queued), queued
    assert together < TIMEOUT + SLACK, f"four queued calls took {together:.1f} s"
    assert isinstance(later, TimedOut), later
    assert alone >= TIMEOUT * 0.9, f"the later call gave up after {alone:.1f} s, unsent"


def test_the_connection_sends_without_waiting_for_acknowledgements() -> None:
    """TCP_NODELAY on the NETCONF socket: with Nagle's algorithm the tail of a request
    longer than a segment waited for the agent's delayed ACK (40 ms: an <edit-config> of a
    reroute's 100 connections, 88 kB, took 51 ms on loopback instead of 10)."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        deadline = ConnectDeadline("127.0.0.1", listener.getsockname()[1], TIMEOUT)
        try:
            assert deadline.sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
        finally:
            deadline.met()
            deadline.sock.close()
