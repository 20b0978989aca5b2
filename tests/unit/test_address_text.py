"""ip_text is str(): for IPv4, for IPv6 addresses of every shape of zero runs (none, one,
several of equal length, at either end), in the blocks inet_ntop writes with an embedded
IPv4 address, and with a scope id."""

from __future__ import annotations

from ipaddress import IPv4Address, IPv6Address

from hypothesis import given
from hypothesis import strategies as st

from vnet.model.address_text import ip_text

# eight 16-bit groups, each zero half of the time: runs of zeros of every length and place
GROUPS = st.lists(st.one_of(st.just(0), st.integers(0, 0xFFFF)), min_size=8, max_size=8)


@given(GROUPS)
def test_the_text_of_an_ipv6_address_is_strs(groups: list[int]) -> None:
    value = 0
    for group in groups:
        value = value << 16 | group
    address = IPv6Address(value)
    assert ip_text(address) == str(address)


@given(st.integers(0, 2**32 - 1), st.sampled_from([0, 0xFFFF, 0xFFFF_0000, 1]))
def test_the_blocks_with_an_embedded_ipv4_address_are_strs(low: int, block: int) -> None:
    address = IPv6Address(block << 32 | low)
    assert ip_text(address) == str(address)


def test_edges_ipv4_and_scope_ids() -> None:
    for text in (
        "::",
        "::1",
        "1::",
        "fc00:0:1:2::3:4",
        "fc00::1:0:0:1",
        "1:0:0:2::3",
        "1::2:0:0:3",
    ):
        assert ip_text(IPv6Address(text)) == str(IPv6Address(text)) == text
    assert ip_text(IPv4Address("10.0.0.1")) == "10.0.0.1"
    assert ip_text(IPv6Address("fe80::1%eth0")) == "fe80::1%eth0"
