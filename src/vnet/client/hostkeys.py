"""Trust on first use of an agent's SSH host key, when the operator chose it explicitly
(the controller's trust_on_first_use): the key an agent shows first is kept in a
known-hosts file and pinned from then on, so a later, different key is refused."""

from __future__ import annotations

import logging
import socket
import threading
from pathlib import Path

import paramiko

from vnet.client.endpoint import Endpoint
from vnet.client.errors import ConnectError
from vnet.tools import netns
from vnet.tools.durable import replace_durably

log = logging.getLogger("vnet.client.hostkeys")
_LOCK = threading.Lock()  # one learner at a time: they rewrite the same file


def entry_name(ep: Endpoint) -> str:
    return f"[{ep.address}]:{ep.port_for('netconf')}"


def read(path: Path) -> dict[str, tuple[str, str]]:
    """Name -> (type, base64) of a known-hosts file ("[address]:port ssh-ed25519 AAAA...")."""
    try:
        lines = path.read_text().splitlines()
    except FileNotFoundError:
        return {}
    known: dict[str, tuple[str, str]] = {}
    for line in lines:
        fields = line.split()
        if len(fields) >= 3 and not line.startswith("#"):
            known[fields[0]] = (fields[1], fields[2])
    return known


def pinned_or_learned(ep: Endpoint) -> str:
    """The base64 key to pin for `ep`: the one kept in ep.known_hosts, else the one the agent
    shows now, kept there first."""
    assert ep.known_hosts is not None
    path, name = Path(ep.known_hosts), entry_name(ep)
    with _LOCK:
        known = read(path)
        if name in known:
            return known[name][1]
        kind, key = _fetch(ep)
        lines = [f"{n} {k} {b}" for n, (k, b) in {**known, name: (kind, key)}.items()]
        replace_durably(path, ("\n".join(lines) + "\n").encode(), 0o600)
    log.warning("trusted on first use: %s (%s) shows %s %s", ep.host, name, kind, key)
    return key


def _fetch(ep: Endpoint) -> tuple[str, str]:
    """(type, base64) of the host key the agent's SSH server presents."""
    port = ep.port_for("netconf")
    try:
        with netns.entered(ep.namespace):
            sock = socket.create_connection((ep.address, port), timeout=ep.timeout)
        with paramiko.Transport(sock) as transport:
            transport.start_client(timeout=ep.timeout)
            key = transport.get_remote_server_key()
            return key.get_name(), key.get_base64()
    except (OSError, paramiko.SSHException) as err:
        raise ConnectError(
            f"cannot read the SSH host key of {ep.address}:{port} to trust it: {err}"
        ) from None
