"""Readiness for systemd (sd_notify(3)): a Type=notify service tells the manager it is
ready by a datagram on $NOTIFY_SOCKET. Without that variable (a lab, a terminal) nothing
is sent; the ready files stay what labs and tests wait for."""

from __future__ import annotations

import os
import socket


def notify(state: str) -> bool:
    """Send `state` ("READY=1", "STOPPING=1", "STATUS=...") if systemd asked; True if sent."""
    address = os.environ.get("NOTIFY_SOCKET")
    if not address:
        return False
    if address.startswith("@"):  # an abstract socket
        address = "\0" + address[1:]
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
        sock.connect(address)
        sock.sendall(state.encode())
    return True
