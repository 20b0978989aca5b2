"""One deadline for the whole of a NETCONF connect over SSH.

ncclient's `timeout` bounds the TCP connect, the <hello> and each RPC, but paramiko, under
it, waits 15 s for the server's SSH banner, 15 s for the key exchange, 30 s for the login
and without any bound for the netconf subsystem: an agent that accepts the TCP connection
and then says nothing (stopped, overloaded, a port that is no SSH server) held a caller for
15 s or more whatever timeout it asked for. So the connect runs over a socket made here, and
a timer shuts that socket down when the timeout has passed: paramiko sees the connection end
at whichever phase it is in and fails at once, and the caller hears TimedOut (errors.py).
"""

from __future__ import annotations

import contextlib
import socket
import threading


class ConnectDeadline:
    """A TCP connection to `address`:`port` (made within `timeout`), shut down unless
    `met()` is called within `timeout` seconds of its making."""

    def __init__(self, address: str, port: int, timeout: float):
        self.timeout = timeout
        self.sock = socket.create_connection((address, port), timeout)
        # no Nagle: with it, the last part of a request longer than a segment waited for
        # the ACK of the one before, which the agent delays up to 40 ms (an <edit-config>
        # of 88 kB took 51 ms on loopback instead of 10; OpenSSH and asyncssh do the same)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._lock = threading.Lock()
        self._state = "running"  # then "met" or "expired", never both
        self._timer = threading.Timer(timeout, self._expire)
        self._timer.daemon = True
        self._timer.start()

    def _expire(self) -> None:
        with self._lock:
            if self._state != "running":
                return
            self._state = "expired"
        with contextlib.suppress(OSError):  # the connect may have closed it already
            self.sock.shutdown(socket.SHUT_RDWR)

    def met(self) -> bool:
        """The connect finished: the socket stays. False if the deadline had passed (the
        socket was shut down, whatever the connect made over it is dead)."""
        self._timer.cancel()
        with self._lock:
            if self._state == "running":
                self._state = "met"
        return self._state == "met"

    @property
    def expired(self) -> bool:
        return self._state == "expired"

    def abort(self) -> None:
        """End the connection now, without a word to the peer (it may not be listening)."""
        self._timer.cancel()
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
