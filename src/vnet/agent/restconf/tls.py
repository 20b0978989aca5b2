"""The RESTCONF server's self-signed certificate, made on first start and kept
in the agent's state directory so clients can pin it (curl --cacert FILE)."""

from __future__ import annotations

from pathlib import Path

from vnet.model.agent_config import AgentConfig
from vnet.tools.tls import ensure_self_signed


def ensure_certificate(config: AgentConfig) -> tuple[Path, Path]:
    """(certificate, key) paths; made once, remade only if they no longer cover the address."""
    cert_path, key_path = config.restconf_cert_path, config.restconf_key_path
    ensure_self_signed(cert_path, key_path, config.address, config.host, "vnet agent")
    return cert_path, key_path
