"""u32 selectors as data: what a filter matches, byte by byte, and its netlink forms."""

from __future__ import annotations

import functools
import struct
from ipaddress import IPv6Network

VXLAN_PORT = 4789
Match = tuple[tuple[int, int, int], ...]  # (offset, value byte, mask byte), by offset


def match_words(match: Match) -> str:
    if not match:
        return "match u32 0 0"
    return " ".join(f"match u8 0x{v:02x} 0x{m:02x} at {off}" for off, v, m in match)


def match_bytes(value: bytes, mask: bytes, offset: int) -> Match:
    return tuple(
        (offset + i, v & m, m) for i, (v, m) in enumerate(zip(value, mask, strict=True)) if m
    )


@functools.lru_cache(maxsize=8192)  # realize asks again for every connection at each commit
def ip6_dst_match(prefix: IPv6Network) -> Match:
    mask = int(prefix.netmask).to_bytes(16, "big")
    return match_bytes(prefix.network_address.packed, mask, 24)


def vxlan_match(vni: int | None, underlay_v6: bool) -> Match:
    """UDP to port 4789 (and the VNI, if given) of an outer IPv4/IPv6 packet without options."""
    if underlay_v6:
        proto, l4 = match_bytes(b"\x11", b"\xff", 6), 40
    else:
        proto, l4 = match_bytes(b"\x11", b"\xff", 9), 20
    out = proto + match_bytes(struct.pack(">H", VXLAN_PORT), b"\xff\xff", l4 + 2)
    if vni is not None:
        out += match_bytes(struct.pack(">I", vni << 8), b"\xff\xff\xff\x00", l4 + 8 + 4)
    return tuple(sorted(out))


# what the tenants' routing protocols send inside VXLAN: (label, inner ethertype, inner IP
# protocol, UDP destination port or None)
OSPF, UDP, BFD_PORT = 89, 17, 3784
TENANT_ROUTING = (
    ("ospfv2", 0x0800, OSPF, None),
    ("ospfv3", 0x86DD, OSPF, None),
    ("bfd", 0x0800, UDP, BFD_PORT),
    ("bfd6", 0x86DD, UDP, BFD_PORT),
)
ETHERNET_HEADER, VXLAN_HEADER, UDP_HEADER = 14, 8, 8


def vxlan_routing_match(ethertype: int, proto: int, port: int | None, underlay_v6: bool) -> Match:
    """VXLAN carrying an inner IPv4/IPv6 packet (without options or extension headers) of
    protocol `proto` (and to UDP `port`): a tenant's OSPF or BFD inside its network."""
    inner = (40 if underlay_v6 else 20) + UDP_HEADER + VXLAN_HEADER  # the inner frame
    ip = inner + ETHERNET_HEADER
    v6 = ethertype == 0x86DD
    out = vxlan_match(None, underlay_v6)
    out += match_bytes(struct.pack(">H", ethertype), b"\xff\xff", inner + 12)
    out += match_bytes(bytes([proto]), b"\xff", ip + (6 if v6 else 9))
    if port is not None:
        out += match_bytes(struct.pack(">H", port), b"\xff\xff", ip + (40 if v6 else 20) + 2)
    return tuple(sorted(out))


SEL = struct.Struct("=BBBxHHhhI")  # struct tc_u32_sel: flags, offshift, nkeys, offmask, ...
U32_KEY = struct.Struct(">II")  # struct tc_u32_key: mask, value (then offset, offmask)
KEY_OFFSETS = struct.Struct("=ii")
TC_U32_TERMINAL = 1  # a match ends the search: the packet goes to the filter's class


def selector(match: Match | None) -> bytes:
    """TCA_U32_SEL's payload for `match` (None: no key at all, as a deletion carries): each
    key the 32-bit word from a matched byte on, grouped as pyroute2 groups "0xVV/0xMM+OFF"
    keys, so that a filter reads back the same whoever added it; an empty match is one key
    that matches everything."""
    if match is None:
        return SEL.pack(TC_U32_TERMINAL, 0, 0, 0, 0, 0, 0, 0)
    keys: list[list[int]] = []  # [mask, value, offset]
    for off, value, mask in match:
        if keys and off < keys[-1][2] + 4:
            shift = 8 * (3 - (off - keys[-1][2]))
            keys[-1][0] |= mask << shift
            keys[-1][1] |= value << shift
        else:
            keys.append([mask << 24, value << 24, off])
    if not keys:
        keys = [[0, 0, 0]]
    head = SEL.pack(TC_U32_TERMINAL, 0, len(keys), 0, 0, 0, 0, 0)
    return head + b"".join(U32_KEY.pack(m, v) + KEY_OFFSETS.pack(off, 0) for m, v, off in keys)


def selector_match(raw: bytes) -> Match:
    """A u32 filter's selector (the TCA_U32_SEL attribute's payload: struct tc_u32_sel, 16
    bytes, then nkeys keys of 16) as (offset, value, mask) bytes."""
    out: list[tuple[int, int, int]] = []
    for n in range(raw[2]):  # nkeys
        mask, value = U32_KEY.unpack_from(raw, SEL.size + 16 * n)
        off, _ = KEY_OFFSETS.unpack_from(raw, SEL.size + 16 * n + U32_KEY.size)
        out += match_bytes(struct.pack(">I", value), struct.pack(">I", mask), off)
    return tuple(sorted(out))
