"""SSH host keys as an operator pins them: the public line of a private key file
("ssh-ed25519 AAAA..."), and the base64 key a pin holds, from whatever form was pasted."""

from __future__ import annotations

from pathlib import Path


class HostKeyError(ValueError):
    """Not an SSH public key in a form vnet reads."""


def public_line(private_key: Path) -> str:
    """ "ssh-ed25519 AAAA..." of the OpenSSH private key in `private_key`."""
    from cryptography.hazmat.primitives import serialization

    key = serialization.load_ssh_private_key(private_key.read_bytes(), password=None)
    public = key.public_key().public_bytes(  # type: ignore[union-attr]
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    )
    return public.decode()


def key_base64(text: str) -> str:
    """'ssh-ed25519 AAAA... comment', 'host ssh-ed25519 AAAA...' or 'AAAA...' -> 'AAAA...'."""
    key = next((f for f in text.split() if f.startswith("AAAA")), None)
    if key is None:
        raise HostKeyError(
            "give the SSH host key as 'ssh-ed25519 AAAA...' (what `vnet agent hostkey` prints)"
            " or its base64 part"
        )
    return key
