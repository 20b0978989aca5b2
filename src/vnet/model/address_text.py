"""An address's text, as `str()` gives it, at a fraction of the cost.

`ipaddress` writes an IPv6 address in Python (about 3-9 us here); realising a hundred moved
connections writes some 1800 of them (every segment, source and destination of each
connection's old and new pieces). The C library's inet_ntop writes the same RFC 5952 text
(lower case, the longest run of zero groups compressed, the first of equal runs) in well
under a microsecond, except in the two /96 blocks it writes with an embedded IPv4 address
(::/96 and ::ffff:0:0/96), which are left to `str()`.
"""

from __future__ import annotations

import socket
from ipaddress import IPv4Address, IPv6Address

_EMBEDDED_V4 = (0, 0xFFFF)  # the first 96 bits of the blocks inet_ntop writes otherwise


def ip_text(address: IPv4Address | IPv6Address) -> str:
    """`str(address)`."""
    if type(address) is not IPv6Address:
        return str(address)
    value = int(address)
    if (value >> 32) in _EMBEDDED_V4 or address.scope_id:
        return str(address)
    return socket.inet_ntop(socket.AF_INET6, value.to_bytes(16, "big"))
