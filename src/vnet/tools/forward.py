"""A loopback listener for a server that serves inside a network namespace.

A lab's controller listens on the lab's management network, which exists only inside a
namespace: a browser on the machine itself cannot reach it. `listen_on_loopback` binds a
TCP socket on 127.0.0.1 here (in the caller's namespace), and `spawn` hands that socket to
a child process started inside the server's namespace: a socket keeps the namespace it was
made in, so the child accepts on the machine's loopback and connects to the server from
where the server is. The child is stopped by PID like every other process vnet starts.

Run as `python -m vnet.tools.forward FD HOST PORT` (what `spawn` does).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import socket
import subprocess
import sys

from vnet.tools import processes

LOOPBACK = "127.0.0.1"
CONNECT_TIMEOUT = 5.0  # seconds to reach the server for one accepted connection
CHUNK = 65536


def listen_on_loopback(port: int) -> socket.socket:
    """A listening socket on 127.0.0.1:`port`, or on a free port if that one is taken
    (another server of this machine may hold it): read the port back from the socket."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((LOOPBACK, port))
    except OSError as err:
        if err.errno != errno.EADDRINUSE:
            sock.close()
            raise
        sock.bind((LOOPBACK, 0))
    sock.listen(64)
    return sock


def spawn(ns: str, listener: socket.socket, host: str, port: int) -> subprocess.Popen[bytes]:
    """Forward every connection accepted on `listener` to host:port as seen inside `ns`, in a
    child process of its own session (it outlives the caller; stop it by PID)."""
    fd = listener.fileno()
    return processes.spawn(
        ns,
        [*processes.python_module("vnet.tools.forward"), str(fd), host, str(port)],
        pass_fds=(fd,),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy until end of stream, then pass the half-close on (HTTP clients may send one)."""
    with contextlib.suppress(OSError):
        while data := await reader.read(CHUNK):
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()


async def _relay(
    client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter, host: str, port: int
) -> None:
    try:
        server_r, server_w = await asyncio.wait_for(
            asyncio.open_connection(host, port), CONNECT_TIMEOUT
        )
    except (OSError, TimeoutError):
        client_w.close()  # the browser sees a closed connection, as with no server at all
        return
    try:
        await asyncio.gather(_pipe(client_r, server_w), _pipe(server_r, client_w))
    finally:
        for w in (client_w, server_w):
            w.close()


async def serve(fd: int, host: str, port: int) -> None:
    listener = socket.socket(fileno=fd)
    server = await asyncio.start_server(
        lambda r, w: _relay(r, w, host, port), sock=listener, limit=CHUNK
    )
    async with server:
        await server.serve_forever()


def main(argv: list[str]) -> None:
    fd, host, port = argv
    asyncio.run(serve(int(fd), host, int(port)))


if __name__ == "__main__":
    main(sys.argv[1:])
