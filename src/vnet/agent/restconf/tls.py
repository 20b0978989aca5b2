"""The RESTCONF server's self-signed certificate, made on first start and kept
in the agent's state directory so clients can pin it (curl --cacert FILE)."""

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

from vnet.agent.private_files import write_private

log = logging.getLogger("vnet.agent.restconf")

CERT_FILE = "restconf-cert.pem"
KEY_FILE = "restconf-key.pem"
VALID_DAYS = 3650


def _names(address: str, host: str) -> tuple[list[str], list[str]]:
    """(DNS names, IP addresses) the certificate must cover."""
    dns = sorted({"localhost", host, socket.gethostname()} - {""})
    ips = {"127.0.0.1", "::1"}
    try:
        ip = ipaddress.ip_address(address)
        if not ip.is_unspecified:
            ips.add(str(ip))
    except ValueError:
        dns = sorted({*dns, address})
    return dns, sorted(ips)


def _covers(cert: x509.Certificate, dns: list[str], ips: list[str]) -> bool:
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return False
    have_dns = set(san.get_values_for_type(x509.DNSName))
    have_ips = {str(i) for i in san.get_values_for_type(x509.IPAddress)}
    now = datetime.datetime.now(datetime.UTC)
    return set(dns) <= have_dns and set(ips) <= have_ips and cert.not_valid_after_utc > now


def ensure_certificate(state_dir: Path, address: str, host: str) -> tuple[Path, Path]:
    """(certificate, key) paths; made once, remade only if they no longer cover `address`."""
    cert_path, key_path = state_dir / CERT_FILE, state_dir / KEY_FILE
    dns, ips = _names(address, host)
    if cert_path.exists() and key_path.exists():
        cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
        if _covers(cert, dns, ips):
            return cert_path, key_path
        log.warning("%s does not cover %s; making a new certificate", cert_path, address)
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "vnet agent"),
            x509.NameAttribute(NameOID.COMMON_NAME, f"vnet agent {host}"),
        ]
    )
    now = datetime.datetime.now(datetime.UTC)
    san = [x509.DNSName(d) for d in dns] + [x509.IPAddress(ipaddress.ip_address(i)) for i in ips]
    public = key.public_key()
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(public)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
        .add_extension(x509.SubjectAlternativeName(san), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(public), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(public), critical=False)
        .sign(key, hashes.SHA256())
    )
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    write_private(key_path, pem)
    tmp_cert = cert_path.with_suffix(".tmp")
    tmp_cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    tmp_cert.replace(cert_path)
    log.info("made a self-signed RESTCONF certificate: %s", cert_path)
    return cert_path, key_path
