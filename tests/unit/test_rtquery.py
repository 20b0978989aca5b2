"""The hand-decoded RTM_GETLINK (vnet.substrate.rtquery) on messages built here."""

from __future__ import annotations

import errno
import struct

import pytest

from vnet.substrate import rtquery as lq


def _reply(attrs: list[tuple[int, bytes]], index: int = 7, flags: int = 0x10003) -> bytes:
    body = lq.IFINFOMSG.pack(0, 1, index, flags, 0)
    for kind, payload in attrs:
        body += lq._nla(kind, payload)
    return lq.NLMSGHDR.pack(lq.NLMSGHDR.size + len(body), lq.RTM_NEWLINK, 0, 42, 0) + body


def _error(code: int) -> bytes:
    body = struct.pack("=i", -code) + lq.NLMSGHDR.pack(16, lq.RTM_GETLINK, 1, 42, 0)
    return lq.NLMSGHDR.pack(lq.NLMSGHDR.size + len(body), lq.NLMSG_ERROR, 0, 42, 0) + body


def test_request_names_the_interface_and_is_padded() -> None:
    req = lq.getlink_request("vr1i0", 9)
    length, kind, flags, seq, _ = lq.NLMSGHDR.unpack_from(req)
    assert (length, kind, flags, seq) == (len(req), lq.RTM_GETLINK, lq.NLM_F_REQUEST, 9)
    assert len(req) % 4 == 0
    assert lq._attributes(req, 32, len(req)) == {lq.IFLA_IFNAME: b"vr1i0\0"}


def test_reply_fields_and_counters() -> None:
    stats = struct.pack(f"={len(lq.STATS64_FIELDS) + 1}Q", *range(1, len(lq.STATS64_FIELDS) + 2))
    brief = lq.parse_getlink_reply(
        _reply(
            [
                (lq.IFLA_IFNAME, b"vb11\0"),
                (lq.IFLA_MTU, struct.pack("=I", 1450)),
                (lq.IFLA_MASTER, struct.pack("=I", 3)),
                (lq.IFLA_ADDRESS, bytes.fromhex("020000000001")),
                (lq.IFLA_IFALIAS, b"vnet:agent peer=vr1/eth0\0"),
                (lq.IFLA_STATS64 | 0x8000, stats),  # a flag bit in the type is ignored
            ]
        )
    )
    assert brief is not None
    assert (brief.index, brief.flags, brief.name, brief.mtu, brief.master) == (
        7,
        0x10003,
        "vb11",
        1450,
        3,
    )
    assert brief.mac.hex(":") == "02:00:00:00:00:01"
    assert brief.alias == "vnet:agent peer=vr1/eth0"
    # the kernel's newer trailing fields are not reported (pyroute2 does not either)
    assert list(brief.stats64) == lq.STATS64_FIELDS
    assert brief.stats64["rx_packets"] == 1 and brief.stats64["tx_compressed"] == 23


def test_missing_attributes_read_as_empty() -> None:
    brief = lq.parse_getlink_reply(_reply([(lq.IFLA_IFNAME, b"lo\0")], index=1))
    assert brief is not None
    assert (brief.master, brief.mtu, brief.alias, brief.mac, brief.stats64) == (0, 0, "", b"", {})


def test_no_such_interface_is_none_other_errors_raise() -> None:
    assert lq.parse_getlink_reply(_error(errno.ENODEV)) is None
    with pytest.raises(OSError) as err:
        lq.parse_getlink_reply(_error(errno.EPERM))
    assert err.value.errno == errno.EPERM
    assert lq.reply_seq(_error(errno.EPERM)) == 42


def _route(seq: int, table: int, kind: int, flags: int = lq.NLM_F_MULTI) -> bytes:
    body = lq.RTMSG.pack(2, 24, 0, 0, table, 4, 0, kind, 0) + lq._nla(15, struct.pack("=I", table))
    return lq.NLMSGHDR.pack(lq.NLMSGHDR.size + len(body), lq.RTM_NEWROUTE, flags, seq, 0) + body


def _done(seq: int) -> bytes:
    return lq.NLMSGHDR.pack(lq.NLMSGHDR.size + 4, lq.NLMSG_DONE, lq.NLM_F_MULTI, seq, 0) + bytes(4)


def test_dump_request_asks_for_every_route_of_a_family() -> None:
    req = lq.getroute_dump_request(10, 5)
    length, kind, flags, seq, _ = lq.NLMSGHDR.unpack_from(req)
    assert (length, kind, flags & lq.NLM_F_DUMP, seq) == (len(req), lq.RTM_GETROUTE, 0x300, 5)
    assert lq.RTMSG.unpack_from(req, lq.NLMSGHDR.size)[0] == 10


def test_route_tally_counts_table_and_type_across_datagrams() -> None:
    tally = lq.RouteTally(table=254, kind=1)
    # main unicast, main blackhole (6), local (255) unicast, and a stale reply of an older dump
    tally.feed(_route(3, 254, 1) + _route(3, 254, 6) + _route(3, 255, 1) + _route(2, 254, 1), 3)
    assert (tally.count, tally.done) == (1, False)
    tally.feed(_route(3, 254, 1) + _done(3), 3)
    assert (tally.count, tally.done) == (2, True)


def test_route_tally_raises_on_an_error_reply() -> None:
    err = _error(errno.EINVAL)
    with pytest.raises(OSError):
        lq.RouteTally(254, 1).feed(err, 42)


# What pyroute2 0.9.7 sent for the same requests (recorded; sequence number and port zeroed)
PYROUTE2_SENT = {
    ("add", "10.1.2.3/24"): "2800000014000506000000000000000002180000020000000800"
    "01000a010203080002000a010203",
    ("add", "fd00::3/64"): "2c00000014000506000000000000000"
    "00a4000000200000014000100fd000000000000000000000000000003",
}


@pytest.mark.parametrize(("command", "cidr"), list(PYROUTE2_SENT))
def test_address_request_is_what_pyroute2_sends(command: str, cidr: str) -> None:
    assert lq.address_request(command, 2, cidr, 0).hex() == PYROUTE2_SENT[(command, cidr)]


def test_setlink_request_is_what_pyroute2_sends() -> None:
    up = lq.setlink_request(2, 0, state="up", ifalias="x y", mtu=1400)
    assert up.hex() == (
        "3000000010000500000000000000000000000000020000000100000001000000"
        "08001400782079000800040078050000"
    )
    detach = lq.setlink_request(2, 0, state="down", master=0)
    assert detach.hex() == (
        "280000001000050000000000000000000000000002000000000000000100000008000a0000000000"
    )
    alias_only = lq.setlink_request(2, 0, ifalias="m")
    assert lq.IFINFOMSG.unpack_from(alias_only, 16)[2:] == (2, 0, 0)  # state untouched


def test_ack_code() -> None:
    assert lq.ack_code(_error(0)) == 0
    assert lq.ack_code(_error(errno.EEXIST)) == errno.EEXIST
    with pytest.raises(ValueError):
        lq.address_request("replace", 2, "10.0.0.1/24", 0)


def test_link_dump_collects_every_interface_until_done() -> None:
    def part(seq: int, index: int, name: bytes) -> bytes:
        msg = bytearray(_reply([(lq.IFLA_IFNAME, name + b"\0")], index=index))
        msg[8:12] = struct.pack("=I", seq)
        return bytes(msg)

    dump = lq.LinkDump()
    dump.feed(part(8, 1, b"lo") + part(7, 9, b"old") + part(8, 2, b"vb11"), 8)
    assert not dump.done
    dump.feed(_done(8), 8)
    assert dump.done
    assert [(b.index, b.name) for b in dump.links] == [(1, "lo"), (2, "vb11")]


def _notice(kind: int, name: bytes, flags: int, index: int) -> bytes:
    body = lq.IFINFOMSG.pack(0, 1, index, flags, 0) + lq._nla(lq.IFLA_IFNAME, name + b"\0")
    return lq.NLMSGHDR.pack(lq.NLMSGHDR.size + len(body), kind, 0, 0, 0) + body


def test_link_changes_tell_each_interface_and_whether_it_runs() -> None:
    up, no_carrier = lq.IFF_UP | lq.IFF_LOWER_UP, lq.IFF_UP
    data = (
        _notice(lq.RTM_NEWLINK, b"ul0", up, 4)
        + _notice(lq.RTM_NEWLINK, b"ul1", no_carrier, 5)
        + _notice(lq.RTM_DELLINK, b"ul2", up, 6)
        + _done(0)  # the end of the first dump rides along: not a link
    )
    links = lq.link_changes(data)
    assert [(link.name, link.index, link.running) for link in links] == [
        ("ul0", 4, True),
        ("ul1", 5, False),
        ("ul2", 6, False),  # deleted
    ]
    assert not lq.LinkBrief(index=1, flags=lq.IFF_LOWER_UP, name="set-down").running
