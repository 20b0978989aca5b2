"""Self-signed TLS certificates for vnet's HTTPS servers (the agent's RESTCONF, the
controller's API and console): made on first start, kept beside the server's state so
clients can verify against them (curl --cacert FILE, `--ca-file`), and remade only when
they no longer cover the address served. Plus the fingerprint an operator compares.
"""

from __future__ import annotations

import datetime
import ipaddress
import logging
import socket
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from vnet.tools.durable import replace_durably

log = logging.getLogger("vnet.tools.tls")

VALID_DAYS = 3650
PRIVATE_MODE = 0o600


def names(address: str, host: str) -> tuple[list[str], list[str]]:
    """(DNS names, IP addresses) a certificate for `address` on `host` must cover."""
    dns = sorted({"localhost", host, socket.gethostname()} - {""})
    ips = {"127.0.0.1", "::1"}
    try:
        ip = ipaddress.ip_address(address)
        if not ip.is_unspecified:
            ips.add(str(ip))
    except ValueError:
        dns = sorted({*dns, address})
    return dns, sorted(ips)


def covers(cert: x509.Certificate, dns: list[str], ips: list[str]) -> bool:
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return False
    have_dns = set(san.get_values_for_type(x509.DNSName))
    have_ips = {str(i) for i in san.get_values_for_type(x509.IPAddress)}
    now = datetime.datetime.now(datetime.UTC)
    return set(dns) <= have_dns and set(ips) <= have_ips and cert.not_valid_after_utc > now


def ensure_self_signed(
    cert_path: Path, key_path: Path, address: str, host: str, organization: str
) -> bool:
    """Make sure `cert_path`/`key_path` hold a certificate covering `address`; True when a
    new one was made (the key written 0600 from its first byte)."""
    dns, ips = names(address, host)
    if cert_path.exists() and key_path.exists():
        if covers(x509.load_pem_x509_certificate(cert_path.read_bytes()), dns, ips):
            return False
        log.warning("%s does not cover %s; making a new certificate", cert_path, address)
    key = ec.generate_private_key(ec.SECP256R1())
    cert = _certificate(key, dns, ips, organization, host)
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    replace_durably(key_path, pem, PRIVATE_MODE)
    # public: clients read it to verify
    replace_durably(cert_path, cert.public_bytes(serialization.Encoding.PEM), 0o644)
    log.info("made a self-signed certificate: %s", cert_path)
    return True


def _certificate(
    key: ec.EllipticCurvePrivateKey, dns: list[str], ips: list[str], organization: str, host: str
) -> x509.Certificate:
    name = x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization),
            x509.NameAttribute(NameOID.COMMON_NAME, f"{organization} {host}"),
        ]
    )
    now = datetime.datetime.now(datetime.UTC)
    san = [x509.DNSName(d) for d in dns] + [x509.IPAddress(ipaddress.ip_address(i)) for i in ips]
    public = key.public_key()
    usage = dict.fromkeys(
        (
            "content_commitment", "key_encipherment", "data_encipherment", "key_agreement",
            "key_cert_sign", "crl_sign", "encipher_only", "decipher_only",
        ),
        False,
    )  # fmt: skip
    return (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(public)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
        .add_extension(x509.SubjectAlternativeName(san), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, **usage), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(public), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(public), critical=False)
        .sign(key, hashes.SHA256())
    )


def fingerprint(cert_path: Path) -> str:
    """The certificate's SHA-256 fingerprint as `openssl x509 -fingerprint -sha256` shows it."""
    cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
    return cert.fingerprint(hashes.SHA256()).hex(":").upper()
