"""The loopback listener that forwards into a namespace (vnet.tools.forward), run here
without a namespace: the relay itself, the half-close it passes on, the taken port."""

from __future__ import annotations

import socket
import socketserver
import threading
from collections.abc import Iterator

import pytest

from vnet.tools import forward, processes


class _Echo(socketserver.StreamRequestHandler):
    """Reads until the client's half-close, then answers everything back in upper case."""

    def handle(self) -> None:
        self.wfile.write(self.rfile.read().upper())


@pytest.fixture
def echo_port() -> Iterator[int]:
    with socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Echo) as server:
        thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
        thread.start()
        yield server.server_address[1]
        server.shutdown()


def test_a_connection_is_relayed_both_ways_with_its_half_close(echo_port: int) -> None:
    listener = forward.listen_on_loopback(0)
    child = forward.spawn(None, listener, "127.0.0.1", echo_port)
    port = listener.getsockname()[1]
    listener.close()
    try:
        payload = b"console " * 50_000  # more than one read of the relay
        with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
            conn.sendall(payload)
            conn.shutdown(socket.SHUT_WR)  # the server answers only after it
            received = b""
            while chunk := conn.recv(65536):
                received += chunk
        assert received == payload.upper()
    finally:
        processes.stop_child(child)


def test_no_server_closes_the_accepted_connection() -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        nobody = unused.getsockname()[1]  # nothing listens there once this closes
    listener = forward.listen_on_loopback(0)
    child = forward.spawn(None, listener, "127.0.0.1", nobody)
    port = listener.getsockname()[1]
    listener.close()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
            assert conn.recv(1) == b""
        assert child.poll() is None  # one failed connection does not end the listener
    finally:
        processes.stop_child(child)


def test_a_taken_port_falls_back_to_a_free_one() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        listener = forward.listen_on_loopback(port)
        with listener:
            assert listener.getsockname()[1] not in (port, 0)
