"""Where an agent listens and how to log in to it."""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_PORTS = {"netconf": 830, "restconf": 8443}


@dataclass(frozen=True)
class Endpoint:
    address: str = "127.0.0.1"
    port: int | None = None  # None: the protocol's default
    user: str = "admin"
    password: str | None = None
    # a network namespace to connect from (a lab's management network); None: here
    namespace: str | None = None
    verify: bool | str = True  # RESTCONF: True (system CAs), a CA/cert file, or False
    plain_http: bool = False  # RESTCONF over HTTP (tests, behind a TLS proxy)
    timeout: float = 30.0
    hostkey: str | None = None  # NETCONF: the agent's SSH host key (base64) to pin
    # NETCONF without `hostkey`: trust the key first seen, kept in this file (client.hostkeys)
    known_hosts: str | None = None
    key_file: str | None = None  # NETCONF: log in with this private key (besides a password)
    host: str = ""  # the physical host's name, given to the VirtualRouters read back

    def port_for(self, protocol: str) -> int:
        return self.port or DEFAULT_PORTS[protocol]
