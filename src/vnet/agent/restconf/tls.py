"""The RESTCONF server's self-signed certificate, made on first start and kept
in the agent's state directory so clients can pin it (curl --cacert FILE)."""

from __future__ import annotations

from pathlib import Path

from vnet.tools.tls import ensure_self_signed

CERT_FILE = "restconf-cert.pem"
KEY_FILE = "restconf-key.pem"


def ensure_certificate(state_dir: Path, address: str, host: str) -> tuple[Path, Path]:
    """(certificate, key) paths; made once, remade only if they no longer cover `address`."""
    cert_path, key_path = state_dir / CERT_FILE, state_dir / KEY_FILE
    ensure_self_signed(cert_path, key_path, address, host, "vnet agent")
    return cert_path, key_path
